"""The app as the Functions Python worker loads it under `func start` (docs/functions-core-tools.md):
in a process of its own whose environment is local.settings.json's Values (as Core Tools sets
it), `function_app.py` is imported from the app's folder, its one FunctionApp indexed, and each
function's bindings read as the worker sends them to the host; every setting a binding names
must then be among those Values, or the host would not run that function."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.conftest import ROOT

INDEX = """
import importlib, json, sys
from azure.functions.decorators.function_app import FunctionRegister
sys.path.insert(0, '.')                       # the worker imports from the script root
module = importlib.import_module('function_app')
apps = [value for value in vars(module).values() if isinstance(value, FunctionRegister)]
assert len(apps) == 1, f'the worker wants one FunctionApp in function_app.py, found {len(apps)}'
print(json.dumps({function.get_function_name(): json.loads(function.get_function_json())
                  for function in apps[0].get_functions()}))
"""


def _values() -> dict[str, str]:
    return json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]


def _indexed() -> dict[str, dict]:
    environment = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **_values()}
    done = subprocess.run([sys.executable, "-c", INDEX], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_app_indexes_with_only_its_local_settings_and_every_binding_resolves():
    values = _values()
    assert values["FUNCTIONS_WORKER_RUNTIME"] == "python" and values["AzureWebJobsFeatureFlags"] == "EnableWorkerIndexing"
    indexed = _indexed()
    assert len(indexed) >= 10
    routes = []
    for name, function in indexed.items():
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,127}", name), name   # the host's rule for names
        assert function["scriptFile"] == "function_app.py"
        for binding in function["bindings"]:
            named = {match for value in binding.values() if isinstance(value, str)
                     for match in re.findall(r"%([A-Za-z0-9_]+)%", value)}
            if binding.get("connection"):
                named.add(binding["connection"])
            missing = named - set(values)
            assert not missing, f"{name}: {binding['type']} names {missing}, which local.settings.json lacks"
            if binding["type"] == "httpTrigger":
                routes.append(binding["route"])
            if binding["type"] in ("queueTrigger", "timerTrigger") and not binding.get("runOnStartup"):
                assert named, f"{name}: its {binding['type']} should take its queue or schedule from a setting"
    assert len(routes) == len(set(routes)), routes
