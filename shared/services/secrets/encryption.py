"""Secrets encrypted at rest: AES-256-GCM (the `cryptography` package) under keys from an app
setting, each ciphertext stored beside the id of the key that sealed it.

The setting (SECRETS_ENCRYPTION_KEYS; in Azure a Key Vault reference) lists keys as
`<keyId>:<base64 of 32 bytes>`, comma-separated, newest first: the first seals, every listed
one opens. Rotating: put a new key first, keep the old ones after it until every secret has
been written again (or has expired), then drop them. `python -m shared.services.secrets.encryption
new-key <keyId>` prints a fresh entry.

The secret's name is bound as associated data: a ciphertext copied onto another secret's row
does not open there. A fresh 96-bit nonce is drawn for every seal. Neither a key nor a value
ever appears in a repr, a log line or an exception message.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import os
import re
import sys
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

log = logging.getLogger("secrets")
SETTING = "SECRETS_ENCRYPTION_KEYS"
NONCE_BYTES = 12
KEY_BYTES = 32
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


class KeyConfigError(ValueError):
    """The setting is not a list of `<keyId>:<base64 key>` (the message never shows a key)."""


class CannotOpen(Exception):
    """A ciphertext this process cannot open: its key is not listed, or it was altered or
    belongs to another secret."""


@dataclass(frozen=True)
class Sealed:
    """What is stored: the key's id and base64 of nonce + ciphertext (with its GCM tag)."""
    key_id: str
    ciphertext: str

    def __repr__(self) -> str:
        return f"Sealed(key_id={self.key_id!r}, {len(self.ciphertext)} characters)"


class SecretBox:
    def __init__(self, keys: list[tuple[str, bytes]]) -> None:
        if not keys:
            raise KeyConfigError(f"{SETTING}: no key")
        self._sealing_id = keys[0][0]
        self._keys = {key_id: AESGCM(key) for key_id, key in keys}

    @classmethod
    def from_setting(cls, text: str) -> SecretBox:
        keys = []
        for position, entry in enumerate(part.strip() for part in (text or "").split(",") if part.strip()):
            key_id, colon, encoded = entry.partition(":")
            if not colon:
                raise KeyConfigError(f"{SETTING}: entry {position} is not <keyId>:<base64 key>")
            if not _KEY_ID.fullmatch(key_id):
                raise KeyConfigError(f"{SETTING}: entry {position}: the key id must be 1-32 of [A-Za-z0-9_-]")
            if key_id in (existing for existing, _ in keys):
                raise KeyConfigError(f"{SETTING}: the key id {key_id!r} is listed twice")
            keys.append((key_id, _key_bytes(encoded, key_id)))
        return cls(keys)

    @property
    def sealing_key_id(self) -> str:
        return self._sealing_id

    def seal(self, name: str, value: object) -> Sealed:
        """`value` (any JSON) sealed for the secret `name` under the newest key."""
        nonce = os.urandom(NONCE_BYTES)
        plain = json.dumps(value, separators=(",", ":")).encode()
        sealed = self._keys[self._sealing_id].encrypt(nonce, plain, name.encode())
        return Sealed(self._sealing_id, base64.b64encode(nonce + sealed).decode("ascii"))

    def open(self, name: str, sealed: Sealed) -> object:
        cipher = self._keys.get(sealed.key_id)
        if cipher is None:
            raise CannotOpen(f"secret {name!r}: sealed with key {sealed.key_id!r}, which is not configured")
        try:
            raw = base64.b64decode(sealed.ciphertext, validate=True)
            plain = cipher.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], name.encode())
        except (InvalidTag, binascii.Error, ValueError):
            raise CannotOpen(f"secret {name!r}: its ciphertext does not open (altered, or another secret's)") \
                from None
        return json.loads(plain)

    def seal_text(self, name: str, text: str) -> str:
        """`text` sealed for `name`, as one string to store: `<keyId>:<ciphertext>`."""
        sealed = self.seal(name, text)
        return f"{sealed.key_id}:{sealed.ciphertext}"

    def open_text(self, name: str, stored: str) -> str:
        """What `seal_text` sealed for `name`."""
        key_id, _, ciphertext = stored.partition(":")
        return self.open(name, Sealed(key_id, ciphertext))

    def needs_resealing(self, sealed: Sealed) -> bool:
        """Sealed under an older key (rotation: write it again to move it to the newest)."""
        return sealed.key_id != self._sealing_id

    def __repr__(self) -> str:
        return f"SecretBox(keys={list(self._keys)}, sealing={self._sealing_id!r})"


def sealing_box(keys: str, shared_secret: str) -> SecretBox:
    """The keys of SECRETS_ENCRYPTION_KEYS (`keys`) for what the app itself keeps sealed (hooks'
    tokens, clients' access tokens); without any, one derived from `shared_secret` (the
    Queue's credentials token, which every instance of the deployment shares), with a warning:
    a deployment sets the keys (in Azure, from Key Vault)."""
    if keys.strip():
        return SecretBox.from_setting(keys)
    log.warning("SECRETS_ENCRYPTION_KEYS is not set: hooks' tokens and clients' access tokens are sealed under a "
                "key derived from the Queue's credentials token")
    # The derivation's label is the one hooks' tokens were first sealed under: it stays.
    return SecretBox([("derived", hmac.new(shared_secret.encode(), b"hooks-sealing-key", "sha256").digest())])


def _key_bytes(encoded: str, key_id: str) -> bytes:
    try:
        key = base64.b64decode(encoded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise KeyConfigError(f"{SETTING}: key {key_id!r} is not base64") from None
    if len(key) != KEY_BYTES:
        raise KeyConfigError(f"{SETTING}: key {key_id!r} has {len(key)} bytes, AES-256 needs {KEY_BYTES}")
    return key


def new_key_entry(key_id: str) -> str:
    if not _KEY_ID.fullmatch(key_id):
        raise KeyConfigError("the key id must be 1-32 of [A-Za-z0-9_-]")
    return f"{key_id}:{base64.b64encode(AESGCM.generate_key(bit_length=256)).decode('ascii')}"


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "new-key":
        sys.exit("usage: python -m shared.services.secrets.encryption new-key <keyId>")
    print(new_key_entry(sys.argv[2]))
