"""A hook's two secrets, sealed at rest under the app's keys (`services.secrets.encryption`,
AES-256-GCM): its trigger token (what triggerHookWithToken compares, what getTriggerToken
shows) and the key of its scheduled fires' taskIds (never shown). Each is sealed for its hook
and kind, so a sealed value copied onto another hook's row does not open there. Stored as
`<keyId>:<base64>`; a key rotation reseals a hook's secrets when it is next written.
"""

from __future__ import annotations

import hmac
from dataclasses import replace
from typing import Callable

from shared.domain.ids import new_slugid
from shared.services.secrets.encryption import SecretBox
from shared.storage.tables.hook_table import HookRecord


class HookSecrets:
    def __init__(self, box: Callable[[], SecretBox]) -> None:
        """`box()`: the keys, read when first needed (a setting that cannot be used then
        fails the hooks' calls, not the building of every service)."""
        self._box_of = box

    @property
    def _box(self) -> SecretBox:
        return self._box_of()

    def new_token(self) -> str:
        """A trigger token: a slugid, as Taskcluster's are (22 characters, 122 random bits)."""
        return new_slugid()

    def seal_token(self, hook_group_id: str, hook_id: str, token: str) -> str:
        return self._seal(_name("token", hook_group_id, hook_id), token)

    def token(self, hook: HookRecord) -> str:
        return self._open(_name("token", hook.hook_group_id, hook.hook_id), hook.trigger_token)

    def token_matches(self, hook: HookRecord, given: str) -> bool:
        return hmac.compare_digest(self.token(hook).encode(), given.encode())

    def seal_fire_key(self, hook_group_id: str, hook_id: str, key: str) -> str:
        return self._seal(_name("fire-key", hook_group_id, hook_id), key)

    def fire_key(self, hook: HookRecord) -> str:
        return self._open(_name("fire-key", hook.hook_group_id, hook.hook_id), hook.fire_key)

    def resealed(self, hook: HookRecord) -> HookRecord:
        """The hook with its secrets under the newest key (the same secrets)."""
        group, hook_id = hook.hook_group_id, hook.hook_id
        return replace(hook, trigger_token=self.seal_token(group, hook_id, self.token(hook)),
                       fire_key=self.seal_fire_key(group, hook_id, self.fire_key(hook)))

    def _seal(self, name: str, value: str) -> str:
        return self._box.seal_text(name, value)

    def _open(self, name: str, stored: str) -> str:
        return self._box.open_text(name, stored)


def _name(kind: str, hook_group_id: str, hook_id: str) -> str:
    return f"hooks/{kind}/{hook_group_id}/{hook_id}"
