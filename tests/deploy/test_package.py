"""The deployment package: built as Core Tools builds it, and enough on its own to run the app."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile

import pytest

from deploy.package import build, package_files
from tests.conftest import ROOT

LISTING = ROOT / "deploy" / "function_listing.py"


def test_funcignore_rules_and_core_tools_own_exclusions(tmp_path):
    for name in ("function_app.py", "host.json", "requirements.txt", "local.settings.json", ".gitignore",
                 "shared/a.py", "shared/__pycache__/a.pyc", "tests/test_a.py", ".git/HEAD", ".vscode/x.json",
                 "notes.md", "keep/notes.md.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / ".funcignore").write_text("tests\n__pycache__\n*.md\n")
    chosen = {path.as_posix() for path in package_files(tmp_path)}
    assert chosen == {"function_app.py", "host.json", "requirements.txt", "shared/a.py", "keep/notes.md.txt"}


def test_a_package_without_the_app_entry_point_is_refused(tmp_path):
    (tmp_path / "host.json").write_text("{}")
    with pytest.raises(SystemExit, match="function_app.py"):
        build(tmp_path, tmp_path / "app.zip")


def _listing(python: str, app_dir) -> list[dict]:
    result = subprocess.run([python, "-I", str(LISTING), str(app_dir)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_the_package_alone_installs_and_lists_every_function_with_its_bindings(tmp_path):
    files = {path.as_posix() for path in build(ROOT, tmp_path / "app.zip")}
    assert {"function_app.py", "host.json", "requirements.txt", "shared/ui/static/vendor/dagre.min.js"} <= files
    assert not {path for path in files if path.split("/")[0] in {"tests", "devhost", ".venv", ".tools", "bench"}}
    assert "local.settings.json" not in files and ".funcignore" not in files
    package = tmp_path / "package"
    with zipfile.ZipFile(tmp_path / "app.zip") as archive:
        archive.extractall(package)

    # What Azure's remote build does: a clean environment with requirements.txt, nothing else.
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = str(environment / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              "-r", str(package / "requirements.txt")], capture_output=True, text=True, timeout=540)
    assert install.returncode == 0, install.stderr[-3000:]

    listed = _listing(python, package)
    assert listed == _listing(sys.executable, ROOT)  # the package serves what the tree does
    by_name = {function["name"]: function for function in listed}
    queue_api = by_name["queue_api"]["bindings"][0]
    assert (by_name["queue_api"]["trigger"], queue_api["route"], queue_api["authLevel"]) == (
        "httpTrigger", "queue/v1/{*path}", "ANONYMOUS")
    assert by_name["scheduler_api"]["bindings"][0]["route"] == "scheduler/v1/{*path}"
    assert by_name["dependency_resolver"]["bindings"][0] == {
        "direction": "IN", "type": "queueTrigger", "name": "message",
        "queueName": "%QUEUE_RESOLVED_QUEUE%", "connection": "AzureWebJobsStorage"}
    assert by_name["claim_resolver"]["bindings"][0]["schedule"] == "%QUEUE_CLAIM_RESOLVER_SCHEDULE%"
    assert by_name["ui_pages"]["bindings"][0]["route"] == "ui/{*path}"
    for function in listed:
        print(function["name"], function["trigger"], json.dumps(function["bindings"]))
