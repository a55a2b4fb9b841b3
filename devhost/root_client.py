"""`make run`'s local root client: a static client with scope `*`, so that the official
client can call a local Queue that, like any other, authenticates every request.

Only when STATIC_CLIENTS is set neither in the environment nor in local.settings.json:
the client is put into STATIC_CLIENTS for this process before the app starts, and once
the host is up it is kept with the local data (`.azurite/root-client.json`, readable by its
owner alone) so that the same credentials work across runs, and printed once.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

CLIENT_ID = "static/local-root"
FILE_NAME = "root-client.json"


@dataclass(frozen=True)
class LocalRoot:
    path: Path
    credentials: dict

    def keep(self) -> None:
        """Write the credentials for the next runs (a host that never started keeps none)."""
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch(mode=0o600)
            self.path.write_text(json.dumps(self.credentials))

    def banner(self, root_url: str) -> str:
        """What a user exports for the official client (`taskcluster.optionsFromEnvironment()`)."""
        return "\n".join([
            f"==> local root client {self.credentials['clientId']} (scope *), kept in {self.path}; for the "
            "official client:",
            f"    export TASKCLUSTER_ROOT_URL={root_url}",
            f"    export TASKCLUSTER_CLIENT_ID={self.credentials['clientId']}",
            f"    export TASKCLUSTER_ACCESS_TOKEN={self.credentials['accessToken']}",
        ])


def ensure(settings: dict[str, str], data_dir: Path) -> LocalRoot | None:
    """The root client, kept from an earlier run or new, now in STATIC_CLIENTS; None if
    STATIC_CLIENTS is set."""
    if settings.get("STATIC_CLIENTS", "").strip():
        return None
    path = Path(data_dir) / FILE_NAME
    credentials = json.loads(path.read_text()) if path.exists() else {
        "clientId": CLIENT_ID, "accessToken": secrets.token_urlsafe(33)}
    os.environ["STATIC_CLIENTS"] = json.dumps([{**credentials, "scopes": ["*"]}])
    return LocalRoot(path, credentials)
