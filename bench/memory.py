"""Peak resident memory (VmHWM, from /proc) and CPU time of the processes a benchmark runs:
the host, Azurite (a few Node.js processes in one process group), the broker and the
benchmark itself."""

from __future__ import annotations

import os
from pathlib import Path


def own_peak() -> float:
    return status_mib(os.getpid(), "VmHWM")


def status_mib(pid: int, field: str) -> float:
    """A /proc/<pid>/status memory figure in MiB (0 if the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def group_pids(leader: int) -> list[int]:
    """The processes of a process group (Azurite runs as a few Node.js processes)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == leader:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU time the processes spent so far, with their waited-for children
    (0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(field) for field in fields[11:15])   # utime, stime, cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


class CpuClock:
    """The CPU time each watched process spends between one `lap` and the next."""

    def __init__(self, watched: dict[str, list[int]]) -> None:
        self.watched = watched
        self._last = self._now()

    def lap(self) -> dict[str, float]:
        """CPU seconds of each process since the last lap (or since the clock was made)."""
        now = self._now()
        spent = {name: round(now[name] - self._last[name], 2) for name in now}
        self._last = now
        return spent

    def _now(self) -> dict[str, float]:
        return {name: cpu_seconds(pids) for name, pids in self.watched.items()}


def per_task_ms(spent: dict[str, float], tasks: int) -> dict[str, float]:
    return {name: round(1000 * seconds / tasks, 2) for name, seconds in spent.items()} if tasks else {}


def per_task_text(figures: dict[str, float]) -> str:
    return ", ".join(f"{name} {ms:.2f}" for name, ms in figures.items())


def peaks(watched: dict[str, list[int]]) -> dict[str, float]:
    """The peak resident memory of each watched process (its largest, if several)."""
    return {name: max((status_mib(pid, "VmHWM") for pid in pids), default=0.0) for name, pids in watched.items()}


def peaks_text(figures: dict[str, float]) -> str:
    return ", ".join(f"{name} {mib:.0f} MiB" for name, mib in figures.items())
