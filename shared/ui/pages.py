"""Which file answers which `/api/ui/...` path, with its content type. Host-neutral.

Only the files shipped in `static/` are served (a fixed list read at start), so no path can
reach anything else. The layout library in `static/vendor/` is bundled by `make ui`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).parent / "static"
TYPES = {".html": "text/html", ".js": "application/javascript", ".css": "text/css", ".txt": "text/plain",
         ".svg": "image/svg+xml"}
FILES = {path.relative_to(STATIC).as_posix() for path in STATIC.rglob("*") if path.is_file()}
TASK_GROUP = re.compile(r"^task-group/[A-Za-z0-9_-]{22}/?$")


@dataclass(frozen=True)
class Page:
    status: int
    body: bytes
    content_type: str
    cache: str


def page(path: str) -> Page:
    """`path` is what follows `/api/ui/`."""
    path = path.strip("/")
    if path in ("", "index.html"):
        return _file("index.html")
    if TASK_GROUP.match(path):
        return _file("task-group.html")
    if path == "hooks":
        return _file("hooks.html")
    if path.startswith("static/") and path[len("static/"):] in FILES:
        return _file(path[len("static/"):])
    return Page(404, b"Not found. The task groups are listed at /api/ui/\n", "text/plain", "no-store")


def _file(name: str) -> Page:
    if name not in FILES:  # the layout library before `make ui`
        return Page(503, f"{name} is missing: run `make ui` before serving the app\n".encode(), "text/plain",
                    "no-store")
    suffix = Path(name).suffix
    return Page(200, (STATIC / name).read_bytes(), TYPES.get(suffix, "application/octet-stream"),
                "no-cache")
