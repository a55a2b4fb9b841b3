"""The auth service's roles: createRole, role, listRoles, listRoles2, listRoleIds, updateRole
and deleteRole, with Taskcluster's semantics.

A role's scopes are kept sorted. A role that would make some expansion grow without bound (a
parameterized role feeding itself) is refused before it is written (400 InputError). The
caller's scopes must satisfy a new role's scopes, and of an updated role those its former
expansion did not already grant (`call.authorize`, see `api/scopes.py`). Configured roles
(`QUEUE_ROLES`) are not listed here; a stored role with the id of a configured one adds to it.
A changed role is seen at once by this process and within seconds by the others (`Directory`).
Each change is recorded in the audit history with who made it (`by`), as Taskcluster records
it: created (also a repeated createRole answered as made), updated, deleted (even of a role
that was not there).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable

from shared.auth.roles import ASSUME, RoleExpansionTooLarge
from shared.auth.scopes import ScopeSet
from shared.domain.errors import Conflict, InputError, NotFound
from shared.domain.timestamps import to_iso, utcnow
from shared.services.auth.audit_history import CREATED, DELETED, UPDATED, AuditHistory
from shared.services.auth.directory import Directory
from shared.storage.errors import AlreadyExists
from shared.storage.patterns.conditional_writes import change_until_saved
from shared.storage.tables.role_table import RoleRecord, RoleTable

log = logging.getLogger("auth")

Authorize = Callable[[object], None]
Expand = Callable[[tuple[str, ...]], ScopeSet]
# Raises RoleExpansionTooLarge if, were the stored roles the ones given, some role's would.
CheckRoles = Callable[[dict[str, tuple[str, ...]]], None]


class RoleCalls:
    def __init__(self, table: RoleTable, directory: Directory, expand: Expand, check_roles: CheckRoles,
                 audit: AuditHistory) -> None:
        self.table = table
        self.audit = audit
        self.directory = directory
        self._expand = expand
        self._check_roles = check_roles

    def create(self, role_id: str, body: dict, *, by: str) -> dict:
        scopes = _scopes(body["scopes"])
        self._check_expansion(role_id, scopes)
        now = to_iso(utcnow())
        try:
            record = self.table.insert(RoleRecord(role_id, body["description"], scopes, now, now))
        except AlreadyExists:
            existing = self.table.load(role_id)
            if existing is None or (existing.description, existing.scopes) != (body["description"], scopes):
                raise Conflict(f"Role with roleId '{role_id}' already exists") from None
            self.audit.record("role", role_id, by, CREATED)   # as Taskcluster records a repeated createRole
            return self.render(existing)
        self._changed(role_id, CREATED, by)
        return self.render(record)

    def get(self, role_id: str) -> dict:
        record = self.table.load(role_id)
        if record is None:
            raise NotFound("Role not found")
        return self.render(record)

    def list_all(self) -> list[dict]:
        return [self.render(record) for record in self.table.all()]

    def list(self, after: str, limit: int) -> tuple[dict, str | None]:
        page, last = self._page(after, limit)
        return {"roles": [self.render(record) for record in page]}, last

    def list_ids(self, after: str, limit: int) -> tuple[dict, str | None]:
        page, last = self._page(after, limit)
        return {"roleIds": [record.role_id for record in page]}, last

    def update(self, role_id: str, body: dict, authorize: Authorize, *, by: str) -> dict:
        scopes = _scopes(body["scopes"])

        def change(record: RoleRecord) -> RoleRecord:
            former = self._expand(record.scopes)
            authorize({"scopesAdded": [scope for scope in scopes if not former.has(scope)]})
            self._check_expansion(role_id, scopes)
            return replace(record, description=body["description"], scopes=scopes, last_modified=to_iso(utcnow()))
        record = change_until_saved(lambda: self.table.load(role_id), change, self.table.save, touch=True)
        if record is None:
            raise NotFound(f"Role with roleId '{role_id}' not found")
        self._changed(role_id, UPDATED, by)
        return self.render(record)

    def delete(self, role_id: str, *, by: str) -> None:
        self.table.delete(role_id)
        self._changed(role_id, DELETED, by)

    def render(self, record: RoleRecord) -> dict:
        return {"roleId": record.role_id, "description": record.description, "scopes": list(record.scopes),
                "created": record.created, "lastModified": record.last_modified,
                "expandedScopes": list(self._expand((ASSUME + record.role_id,)).scopes)}

    def _page(self, after: str, limit: int) -> tuple[list[RoleRecord], str | None]:
        """A page of the roles in roleId order after `after` (they are read whole: one partition)."""
        roles = [record for record in self.table.all() if record.role_id > after]
        return roles[:limit], roles[limit - 1].role_id if len(roles) > limit else None

    def _check_expansion(self, role_id: str, scopes: tuple[str, ...]) -> None:
        """Refuse a role with which some expansion would grow without bound."""
        try:
            self._check_roles({**self.directory.roles()[1], role_id: scopes})
        except RoleExpansionTooLarge as error:
            raise InputError(f"Role {role_id!r} cannot be written as given: with it, {error}") from None

    def _changed(self, role_id: str, action: str, by: str) -> None:
        self.directory.forget_roles()
        log.info("role %s %s", role_id, action)
        self.audit.record("role", role_id, by, action)


def _scopes(scopes: list[str]) -> tuple[str, ...]:
    if any(scope.endswith("**") for scope in scopes):
        raise InputError("scopes must not end with `**`")
    return tuple(sorted(scopes))
