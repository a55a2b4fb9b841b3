"""infra/main.bicep sets every app setting the app needs, or a deployed host would not start."""

import json
import re
from pathlib import Path

from tests.functions.test_function_app import functions_by_name

ROOT = Path(__file__).parents[2]
BICEP = (ROOT / "infra" / "main.bicep").read_text()


def deployed_settings() -> dict[str, str]:
    """The app settings of main.bicep, name -> value expression."""
    return dict(re.findall(r"\{ name: '([A-Za-z0-9_]+)', value: (.+?) \}", BICEP))


def test_every_setting_a_trigger_names_is_deployed():
    named = set()
    for function in functions_by_name().values():
        trigger = function.get_trigger()
        for attribute in ("schedule", "queue_name", "connection"):
            named.update(re.findall(r"%([A-Za-z0-9_]+)%", str(getattr(trigger, attribute, "") or "")))
            if attribute == "connection" and getattr(trigger, attribute, None):
                named.add(trigger.connection)
    assert named, "the app's triggers name no settings: the test would prove nothing"
    assert named <= set(deployed_settings()), named - set(deployed_settings())


def test_every_local_setting_is_deployed_too():
    local = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    assert set(local) <= set(deployed_settings()), set(local) - set(deployed_settings())


def test_schedules_are_six_field_ncrontab_and_secrets_are_parameters():
    settings = deployed_settings()
    schedules = {name: value.strip("'") for name, value in settings.items() if name.endswith("_SCHEDULE")}
    assert len(schedules) == 4 and all(len(value.split()) == 6 for value in schedules.values())
    assert settings["QUEUE_CREDENTIALS_ACCESS_TOKEN"] == "credentialsAccessToken"
    assert "@secure()\n@description('Access token" in BICEP
    assert settings["STATIC_CLIENTS"] == "staticClients"
    assert "@secure()\n@description('STATIC_CLIENTS" in BICEP
