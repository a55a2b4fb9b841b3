"""App settings as the Functions host gives them: `local.settings.json` "Values" under
environment variables (the environment wins), and `%NAME%` binding expressions."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

_EXPRESSION = re.compile(r"%([A-Za-z0-9_.:-]+)%")


class MissingSetting(KeyError):
    """A binding names an app setting that is not set: the host refuses to start, as in Azure."""


def load_settings(app_dir: Path, defaults: dict[str, str] | None = None) -> dict[str, str]:
    settings = dict(defaults or {})
    local = Path(app_dir) / "local.settings.json"
    if local.exists():
        settings.update({key: str(value) for key, value in json.loads(local.read_text()).get("Values", {}).items()})
    settings.update(os.environ)
    return settings


def sample_values(app_dir: Path) -> dict[str, str]:
    """The "Values" of the app's `local.settings.sample.json`: the defaults of the settings a
    `local.settings.json` copied from an older sample lacks (a binding added since names one)."""
    sample = Path(app_dir) / "local.settings.sample.json"
    if not sample.exists():
        return {}
    return {key: str(value) for key, value in json.loads(sample.read_text()).get("Values", {}).items()}


def apply_to_environ(settings: dict[str, str]) -> None:
    """Expose settings as environment variables, as Azure does for app settings."""
    for key, value in settings.items():
        os.environ.setdefault(key, value)


def expand(value: str, settings: dict[str, str]) -> str:
    """Replace `%NAME%` with the setting NAME; a missing setting is an error, as in Azure."""
    def lookup(match: re.Match) -> str:
        name = match.group(1)
        if name not in settings:
            raise MissingSetting(f"app setting {name!r} is not defined (needed by {value!r})")
        return settings[name]
    return _EXPRESSION.sub(lookup, value)
