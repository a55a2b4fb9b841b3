"""Taskcluster's index service: find tasks by name, list namespaces and tasks, insert and
delete entries, and send a caller on to an indexed task's artifact.

An entry or a namespace past its `expires` is not found and not listed (the Index table keeps
it until the expiration sweep deletes it, see `index_expiry`), as Taskcluster's reads leave
out what expired.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Callable
from urllib.parse import quote

import taskcluster

from shared.runtime.thread_pools import INDEX_READS
from shared.domain.errors import NotFound
from shared.domain.index import IndexEntry, check_data, check_namespace, is_namespace
from shared.domain.timestamps import normalize_iso, parse_iso, utcnow
from shared.services.claims.credentials import CredentialIssuer
from shared.services.index.index_expiry import IndexExpiry
from shared.storage.tables.index_table import IndexTable

SIGNED_URL_LIFETIME = timedelta(minutes=15)   # Taskcluster's, for a private artifact's redirect


class Index:
    def __init__(self, table: IndexTable, expiry: IndexExpiry, issuer: CredentialIssuer, root_url: str) -> None:
        self.table = table
        self.expiry = expiry
        self.issuer = issuer
        self.root_url = root_url.rstrip("/")

    def find(self, index_path: str) -> dict:
        """findTask: the entry at `index_path`; NotFound if there is none, or it expired."""
        return self._found(index_path).to_json()

    def _found(self, index_path: str) -> IndexEntry:
        entry = self.table.get(index_path) if is_namespace(index_path) else None
        if entry is None or _expired(entry.expires):
            raise NotFound(f"Indexed task not found at {index_path!r}")
        return entry

    def find_many(self, indexes: list[str], after: str, limit: int) -> tuple[dict, str | None]:
        """findTasksAtIndex: the live entries at the paths named, in their order, a page of
        paths at a time (the key is how many paths came before)."""
        start = int(after) if after.isdigit() else 0
        paths = indexes[start:start + limit]
        found = INDEX_READS.map(lambda path: self.table.get(path) if is_namespace(path) else None, paths)
        tasks = [entry.to_json() for entry in found if entry is not None and not _expired(entry.expires)]
        end = start + len(paths)
        return {"tasks": tasks}, str(end) if end < len(indexes) else None

    def namespaces(self, namespace: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listNamespaces: those directly in `namespace` ("" is the root), by name."""
        check_namespace(namespace, "namespace", root_allowed=True)
        found, last = self.table.namespaces(namespace, after, limit)
        return {"namespaces": [each.to_json() for each in found if not _expired(each.expires)]}, last

    def tasks(self, namespace: str, after: str, limit: int) -> tuple[dict, str | None]:
        """listTasks: the entries directly in `namespace` ("" is the root), by name."""
        check_namespace(namespace, "namespace", root_allowed=True)
        found, last = self.table.tasks(namespace, after, limit)
        return {"tasks": [entry.to_json() for entry in found if not _expired(entry.expires)]}, last

    def insert(self, namespace: str, body: dict) -> dict:
        """insertTask: what the path holds afterwards (the stored entry if it outranks this one)."""
        check_namespace(namespace, "namespace")
        entry = IndexEntry(namespace, body["taskId"], body["rank"], check_data(body["data"]),
                           normalize_iso(body["expires"]))
        self.expiry.watch([entry])
        return self.table.insert(entry).to_json()

    def delete(self, namespace: str) -> dict:
        """deleteTask: the entry goes (gone already is fine); its namespaces stay."""
        check_namespace(namespace, "namespace")
        self.table.delete(namespace)
        return {}

    def artifact_url(self, index_path: str, name: str, public: Callable[[str], bool]) -> str:
        """findArtifactFromTask: where the artifact `name` of the task at `index_path` is read,
        on its latest run: the Queue's getLatestArtifact URL, signed for 15 minutes unless
        anyone may read it (`public(name)`), as Taskcluster's index redirects."""
        task_id = self._found(index_path).task_id
        path = f"/api/queue/v1/task/{task_id}/artifacts/{quote(name, safe='')}"
        if public(name):
            return self.root_url + path
        now = utcnow()
        credentials = self.issuer.issue(f"index/artifact/{task_id}", [f"queue:get-artifact:{name}"], now,
                                        now + SIGNED_URL_LIFETIME)
        queue = taskcluster.Queue({"rootUrl": self.root_url, "credentials": credentials})
        return queue.buildSignedUrl("getLatestArtifact", task_id, name,
                                    expiration=int(SIGNED_URL_LIFETIME.total_seconds()))


def _expired(expires: str) -> bool:
    return parse_iso(expires) <= utcnow()

