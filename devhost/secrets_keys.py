"""`make run`'s key for the secrets service: when SECRETS_ENCRYPTION_KEYS is set neither in the
environment nor in local.settings.json, one made on the first run and kept with the local
data (`.azurite/secrets-keys`, readable by its owner alone), so the secrets set in one run
open in the next. In Azure the setting comes from Key Vault (infra/main.bicep).
"""

from __future__ import annotations

import os
from pathlib import Path

from shared.services.secrets.encryption import SETTING, new_key_entry

FILE_NAME = "secrets-keys"


def ensure(settings: dict[str, str], data_dir: Path) -> Path | None:
    """Put the local key into the environment, made now if there is none; the file that
    keeps it, or None when the setting is set already."""
    if settings.get(SETTING, "").strip():
        return None
    path = Path(data_dir) / FILE_NAME
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(new_key_entry("local"))
    os.environ[SETTING] = path.read_text().strip()
    return path
