"""The index: tasks found by name (Taskcluster's index service), its rules without storage.

A namespace (an index path) is a dot-separated hierarchy, `some-app.<revision>.linux64.build`:
each part is one or more of `[a-zA-Z0-9_!~*'()%-]` (URL-safe: a caller URL-encodes other
characters), and the whole is at most 255 characters (the length Taskcluster's responses
allow). The empty namespace is the root: it names no task, but namespaces and tasks sit in it.
Indexing `a.b.c` creates the namespaces `a` and `a.b`; `c` is the task's name in `a.b`.

An entry has a `rank`: a new entry replaces the one at its path unless the stored rank is
higher (equal ranks: the newer wins), so "a lower rank does not replace a higher one".

A completed task is indexed at each of its routes `index.<namespace>`, with `rank`,
`expires` and `data` from `task.extra.index`; the defaults are Taskcluster's: rank 0, the
task's `expires` (or a year after `created`), data `{}`. A task whose `extra.index.rank` is
not a number, or whose `data` is not an object, is not indexed at all, as in Taskcluster.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from shared.domain.errors import InvalidInput
from shared.domain.timestamps import parse_iso, to_iso

ROUTE_PREFIX = "index."
MAX_NAMESPACE = 255
MAX_DATA = 32 * 1024          # Taskcluster: "you'll get errors if you store more than 32KB"
DEFAULT_LIFETIME = timedelta(days=365)
_PART = r"[a-zA-Z0-9_!~*'()%-]+"
_NAMESPACE = re.compile(rf"(?:{_PART}\.)*{_PART}")
NAMESPACE_PATTERN = rf"^(?:{_PART}\.)*{_PART}$"     # as a JSON Schema or route pattern


@dataclass(frozen=True)
class IndexEntry:
    """A task at an index path."""
    namespace: str          # the full path: `<parent>.<name>`
    task_id: str
    rank: float
    data: dict
    expires: str            # ISO 8601, as Taskcluster writes it
    etag: str | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        """As Taskcluster's indexed-task-response shows it."""
        return {"namespace": self.namespace, "taskId": self.task_id, "rank": self.rank, "data": self.data,
                "expires": self.expires}


@dataclass(frozen=True)
class Namespace:
    """A namespace under its parent, with the latest expiry of what it holds."""
    namespace: str
    expires: str
    etag: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return split_namespace(self.namespace)[1]

    def to_json(self) -> dict:
        return {"namespace": self.namespace, "name": self.name, "expires": self.expires}


def is_namespace(text: object) -> bool:
    return isinstance(text, str) and len(text) <= MAX_NAMESPACE and _NAMESPACE.fullmatch(text) is not None


def check_namespace(text: object, where: str = "namespace", root_allowed: bool = False) -> str:
    """`text` if it is a valid namespace (or the root `""` where `root_allowed`), else InvalidInput
    naming `where`."""
    if root_allowed and text == "":
        return ""
    if not isinstance(text, str):
        raise InvalidInput(f"{where}: must be a string")
    if len(text) > MAX_NAMESPACE:
        raise InvalidInput(f"{where}: {len(text)} characters, at most {MAX_NAMESPACE}")
    if not _NAMESPACE.fullmatch(text):
        raise InvalidInput(f"{where}: {text!r} is not a namespace: dot-separated parts of "
                           "[a-zA-Z0-9_!~*'()%-], none empty")
    return text


def split_namespace(namespace: str) -> tuple[str, str]:
    """`a.b.c` -> (`a.b`, `c`); `a` -> (``, `a`)."""
    parent, _, name = namespace.rpartition(".")
    return parent, name


def ancestors(namespace: str) -> list[str]:
    """The namespaces an entry at `namespace` sits under, nearest first: `a.b.c` -> [`a.b`, `a`]."""
    parts = namespace.split(".")
    return [".".join(parts[:end]) for end in range(len(parts) - 1, 0, -1)]


def replaces(new_rank: float, stored_rank: float) -> bool:
    """Whether an entry of `new_rank` replaces one of `stored_rank` (equal: the newer wins)."""
    return new_rank >= stored_rank


def namespace_expiry(expires: str) -> str:
    """A namespace lives until the end of the day its latest entry expires (rounded up to the
    next midnight, UTC, as Taskcluster does, so that most entries leave its row unchanged)."""
    moment = parse_iso(expires)
    day = datetime(moment.year, moment.month, moment.day, tzinfo=timezone.utc)
    return to_iso(day + timedelta(days=1))


def check_data(data: object, where: str = "data") -> dict:
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: must be an object")
    size = _size(data)
    if size > MAX_DATA:
        raise InvalidInput(f"{where}: {size} bytes of JSON, at most {MAX_DATA}")
    return data


def _size(data: dict) -> int:
    return len(json.dumps(data, separators=(",", ":")).encode())


def has_index_route(routes) -> bool:
    """Cheap: whether a completion needs the index at all (no storage call for most tasks)."""
    return any(isinstance(route, str) and route.startswith(ROUTE_PREFIX) for route in routes or ())


def entries_for_task(task_id: str, task: dict) -> list[IndexEntry]:
    """The entries a completed task's routes ask for (none if its `extra.index` is unusable)."""
    namespaces = [route[len(ROUTE_PREFIX):] for route in task.get("routes") or ()
                  if isinstance(route, str) and route.startswith(ROUTE_PREFIX)]
    namespaces = list(dict.fromkeys(ns for ns in namespaces if is_namespace(ns)))
    if not namespaces:
        return []
    options = (task.get("extra") or {}).get("index") if isinstance(task.get("extra"), dict) else None
    options = options if isinstance(options, dict) else {}
    rank, data = options.get("rank", 0), options.get("data", {})
    if isinstance(rank, bool) or not isinstance(rank, (int, float)) or not isinstance(data, dict):
        return []
    if _size(data) > MAX_DATA:
        return []
    expires = _expires(options.get("expires"), task)
    if expires is None:
        return []
    return [IndexEntry(namespace, task_id, rank, data, expires) for namespace in namespaces]


def _expires(chosen: object, task: dict) -> str | None:
    """`extra.index.expires`, else the task's `expires`, else a year after its `created`."""
    try:
        if chosen is not None:
            return to_iso(parse_iso(chosen)) if isinstance(chosen, str) else None
        if task.get("expires"):
            return to_iso(parse_iso(task["expires"]))
        return to_iso(parse_iso(task["created"]) + DEFAULT_LIFETIME)
    except (ValueError, KeyError, TypeError):
        return None
