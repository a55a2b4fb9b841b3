"""How a worker proves which worker it is, without any secret being stored or logged.

A provider that starts a worker gives it a single-use registration token, bound to that
worker's id; the worker trades it for Taskcluster credentials through `registerWorker`. The
worker's record keeps only the token's SHA-256 digest (`RegistrationToken`), so a copy of the
table holds nothing that registers a worker. Redeeming the token takes the caller's
conditional write (the worker's record marked used, and running, under its ETag): of two
registrations racing with the same token, exactly one wins, and a token used once is refused
ever after.

The same digests serve the static provider's per-worker `staticSecret` and the secret of
`reregisterWorker` (Taskcluster's 44-character secrets). Comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

from shared.domain.errors import InputError
from shared.domain.timestamps import parse_iso, to_iso

SECRET_LENGTH = 44   # Taskcluster's secrets: `^[a-zA-Z0-9_-]{44}$`, as two slugids make


class RegistrationRefused(InputError):
    """A proof of identity that does not hold; Taskcluster answers these with InputError
    (400). The message says why, never what was presented."""


def new_secret() -> str:
    """44 URL-safe characters from 264 random bits."""
    return secrets.token_urlsafe(33)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_matches(presented: object, expected_digest: str) -> bool:
    """Constant-time, so a caller learns nothing from how long a wrong secret took."""
    if not isinstance(presented, str):
        return False
    return hmac.compare_digest(digest(presented), expected_digest)


@dataclass(frozen=True)
class RegistrationToken:
    """What a worker's record keeps of the token it was started with."""

    worker_pool_id: str
    worker_group: str
    worker_id: str
    digest: str
    expires: str
    used: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"workerPoolId": self.worker_pool_id, "workerGroup": self.worker_group, "workerId": self.worker_id,
                "digest": self.digest, "expires": self.expires, "used": self.used}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RegistrationToken:
        return cls(body["workerPoolId"], body["workerGroup"], body["workerId"], body["digest"], body["expires"],
                   body.get("used", False))


@dataclass(frozen=True)
class IssuedToken:
    """A new token: `token` goes to the worker (and nowhere else), `record` to storage."""

    token: str = field(repr=False)
    record: RegistrationToken


def issue_token(worker_pool_id: str, worker_group: str, worker_id: str, now: datetime,
                lifetime: timedelta) -> IssuedToken:
    """A token for the worker about to be started; `lifetime` is the pool's
    registrationTimeout (a worker registering later is being stopped anyway)."""
    token = new_secret()
    record = RegistrationToken(worker_pool_id, worker_group, worker_id, digest(token), to_iso(now + lifetime))
    return IssuedToken(token, record)


def redeem_token(record: RegistrationToken | None, presented: object, *, worker_pool_id: str, worker_group: str,
                 worker_id: str, now: datetime, mark_used: Callable[[RegistrationToken], bool]) -> RegistrationToken:
    """Check `presented` against the token issued to the worker the caller names, and spend
    it. `mark_used(used_record)` is the caller's conditional write of the worker's record; it
    returns False when the record changed since it was read (someone else redeemed the token
    first), and the registration is refused. Returns the record as stored, used."""
    name = f"{worker_pool_id}/{worker_group}/{worker_id}"
    if record is None:
        raise RegistrationRefused(f"Worker {name} was given no registration token")
    if (record.worker_pool_id, record.worker_group, record.worker_id) != (worker_pool_id, worker_group, worker_id):
        raise RegistrationRefused(f"The registration token is not {name}'s")
    if not secret_matches(presented, record.digest):
        raise RegistrationRefused(f"Bad registration token for worker {name}")
    if record.used:
        raise RegistrationRefused(f"The registration token of worker {name} has been used already")
    if parse_iso(record.expires) <= now:
        raise RegistrationRefused(f"The registration token of worker {name} expired at {record.expires}")
    used = replace(record, used=True)
    if not mark_used(used):
        raise RegistrationRefused(f"The registration token of worker {name} has been used already")
    return used
