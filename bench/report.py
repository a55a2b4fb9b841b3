"""Output of the benchmarks: progress lines, the machine header, the final table, JSON."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from devhost.azurite import REPO, VERSION as AZURITE_PINNED

RESULTS = Path(__file__).resolve().parent / "results"
_STARTED = time.monotonic()


def progress(message: str) -> None:
    """One line per step with the time since start, so a slow phase is visible as it runs."""
    print(f"[{time.monotonic() - _STARTED:6.1f} s] {message}", flush=True)


def elapsed() -> float:
    return time.monotonic() - _STARTED


def machine() -> dict:
    """What the figures depend on; a result without it cannot be compared with another."""
    return {
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "azurite": _azurite_version(),
        "azure-data-tables": _package_version("azure-data-tables"),
        "taskcluster": _package_version("taskcluster"),
    }


def _azurite_version() -> str:
    # The installed package is what ran; the pinned version is only what should have.
    package = REPO / ".tools" / "node_modules" / "azurite" / "package.json"
    try:
        return json.loads(package.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return f"{AZURITE_PINNED} (pinned; package.json not found)"


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def header(info: dict) -> str:
    return (f"machine: {info['cores']} cores, Python {info['python']}, Azurite {info['azurite']}, "
            f"azure-data-tables {info['azure-data-tables']}, taskcluster {info['taskcluster']}\n"
            f"         {info['platform']}")


def percentiles(seconds: list[float]) -> dict:
    """Median and 95th percentile in milliseconds (empty when nothing was timed)."""
    if not seconds:
        return {}
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"count": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(p95 * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}


def table(rows: list[tuple[str, str]]) -> str:
    """Two columns, the label left-aligned; a row with an empty value is a section title."""
    width = max(len(label) for label, value in rows if value)
    lines = []
    for label, value in rows:
        lines.append(f"\n{label}" if not value else f"  {label:<{width}}  {value}")
    return "\n".join(lines)


def write_json(name: str, results: dict) -> Path:
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{name}-{stamp}.json"
    path.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    return path


def command_line(module: str = "bench.lifecycle") -> str:
    return " ".join([Path(sys.executable).name, "-m", module, *sys.argv[1:]])
