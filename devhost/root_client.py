"""`make run`'s local root client: a static client with scope `*`, so that the official
client can call a local Queue that, like any other, authenticates every request.

Only when STATIC_CLIENTS is set neither in the environment nor in local.settings.json:
the client is made once, kept with the local data (`.azurite/root-client.json`, readable by
its owner alone) so that the same credentials keep working across runs, and put into
STATIC_CLIENTS for this process. The caller prints `banner(...)` once, at start.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

CLIENT_ID = "static/local-root"
FILE_NAME = "root-client.json"


def ensure(settings: dict[str, str], data_dir: Path) -> Path | None:
    """The file holding the root client's credentials, now in STATIC_CLIENTS; None if
    STATIC_CLIENTS is set."""
    if settings.get("STATIC_CLIENTS", "").strip():
        return None
    path = Path(data_dir) / FILE_NAME
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(json.dumps({"clientId": CLIENT_ID, "accessToken": secrets.token_urlsafe(33)}))
    credentials = json.loads(path.read_text())
    os.environ["STATIC_CLIENTS"] = json.dumps([{**credentials, "scopes": ["*"]}])
    return path


def banner(path: Path, root_url: str) -> str:
    """What a user exports for the official client (`taskcluster.optionsFromEnvironment()`)."""
    credentials = json.loads(path.read_text())
    return "\n".join([
        f"==> local root client {credentials['clientId']} (scope *), kept in {path}; for the official client:",
        f"    export TASKCLUSTER_ROOT_URL={root_url}",
        f"    export TASKCLUSTER_CLIENT_ID={credentials['clientId']}",
        f"    export TASKCLUSTER_ACCESS_TOKEN={credentials['accessToken']}",
    ])
