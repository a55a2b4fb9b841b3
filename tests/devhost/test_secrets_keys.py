"""`make run`'s key for the secrets service: made once, kept with the local data (owner only),
the same in the next run, and none made when the setting is set."""

from __future__ import annotations

import os
import stat

from devhost import secrets_keys
from shared.services.secrets.encryption import SETTING, SecretBox


def test_made_once_and_kept_unless_the_setting_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    assert secrets_keys.ensure({SETTING: "mine:AAAA"}, tmp_path) is None and SETTING not in os.environ
    path = secrets_keys.ensure({SETTING: ""}, tmp_path / "data")
    first = os.environ[SETTING]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert SecretBox.from_setting(first).sealing_key_id == "local"
    monkeypatch.delenv(SETTING)
    secrets_keys.ensure({}, tmp_path / "data")
    assert os.environ[SETTING] == first                  # the secrets of one run open in the next
