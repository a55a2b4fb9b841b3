"""docs/deploy.md, the one path from an empty subscription to a first task, checked against
infra/main.bicep (every az command's parameters, outputs and settings), and its steps that can
run here run against a local Queue: the secrets and clients it makes, the worker it starts with
the worker client, the first task created, followed and logged with the administrator's."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from shared.auth.clients import Realm
from tests.conftest import ROOT, eventually, start_server
from tests.functions.test_function_app import functions_by_name
from tests.infra.test_main_bicep import BICEP, deployed_settings

DOC = (ROOT / "docs" / "deploy.md").read_text()


def checked_blocks() -> dict[str, str]:
    """The shell blocks the doc marks `<!-- checked: name -->`, by name."""
    return dict(re.findall(r"<!-- checked: ([a-z-]+) -->\n```sh\n(.*?)```", DOC, re.S))


def commands(block: str) -> list[list[str]]:
    """Each command of a block as its words (continuation lines joined, comments dropped)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def command(block: str, *start: str) -> list[str]:
    found = [words for words in commands(block) if words[:len(start)] == list(start)]
    assert len(found) == 1, f"one `{' '.join(start)}` expected in the block"
    return found[0]


def option_values(words: list[str], option: str) -> list[str]:
    """The words after `option` up to the next option."""
    at = words.index(option) + 1
    values = []
    while at < len(words) and not words[at].startswith("--"):
        values.append(words[at])
        at += 1
    return values


def bicep_parameters() -> dict[str, bool]:
    """Each parameter of main.bicep, and whether it has a default."""
    return {name: bool(default) for name, default in re.findall(r"^param (\w+) \w+( = .+)?$", BICEP, re.M)}


def test_the_deployment_passes_every_required_parameter_and_only_the_templates():
    blocks = checked_blocks()
    assert set(blocks) == {"secrets", "deploy", "publish", "worker", "first-task", "listen", "teardown"}
    deploy = command(blocks["deploy"], "az", "deployment", "group", "create")
    assert option_values(deploy, "--template-file") == ["infra/main.bicep"]
    given = {value.split("=", 1)[0] for value in option_values(deploy, "--parameters")}
    parameters = bicep_parameters()
    assert given <= set(parameters), given - set(parameters)
    required = {name for name, has_default in parameters.items() if not has_default}
    assert required <= given, f"main.bicep requires {required - given} with no default"   # staticClients was missing
    # The deployment is named, and read back by that name.
    name = option_values(deploy, "--name")[0]
    shown = command(blocks["listen"], "EVENTS_SERVICE_BUS_NAMESPACE=$(az")   # the words of the $( ... )
    assert f"--name {name} " in " ".join(shown)


def test_every_output_setting_and_parameter_the_doc_names_is_the_templates():
    outputs = set(re.findall(r"^output (\w+) ", BICEP, re.M))
    named = set(re.findall(r"properties\.outputs\.(\w+)\.value", DOC)) | set(re.findall(r"`(rootUrl|eventsNamespace)`", DOC))
    assert named and named <= outputs, named - outputs
    settings = set(re.findall(r"--settings ([A-Z_]+)=", DOC)) | set(re.findall(r"\[\?name=='([A-Z_]+)'\]", DOC))
    assert settings and settings <= set(deployed_settings()), settings - set(deployed_settings())
    # Every parameter is given or explained, so none is a surprise.
    unnamed = [name for name in bicep_parameters() if f"`{name}`" not in DOC and f" {name}=" not in DOC]
    assert not unnamed, unnamed
    assert "Owner" in DOC and "User Access Administrator" in DOC   # the role assignments need one
    assert "az group delete --name $RG" in checked_blocks()["teardown"]


def test_the_functions_the_doc_lists_are_the_apps():
    listed = set(re.findall(r"`([a-z_]+)`", DOC.split("`func` lists the functions it deployed:", 1)[1].split(";")[0]))
    assert listed == set(functions_by_name())


def test_the_make_targets_it_names_exist():
    makefile = (ROOT / "Makefile").read_text()
    for target in set(re.findall(r"(?:`|\n)make (\w+)", DOC)):
        assert re.search(rf"^{target}:", makefile, re.M), target


@pytest.fixture
def secrets(tmp_path) -> dict[str, str]:
    """The doc's secrets block run as written (HOME a folder of the test's own)."""
    script = checked_blocks()["secrets"] + '\nprintf "%s" "$STATIC_CLIENTS" > "$HOME/clients.json"\n'
    done = subprocess.run(["bash", "-euc", script], env={**os.environ, "HOME": str(tmp_path)}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    kept = tmp_path / ".taskq" / "myqueue.env"
    assert oct(kept.stat().st_mode & 0o777) == "0o600"   # only its owner can read the tokens
    values = dict(line.split("=", 1) for line in kept.read_text().splitlines())
    return {**values, "STATIC_CLIENTS": (tmp_path / "clients.json").read_text(), "HOME": str(tmp_path)}


def test_its_clients_are_what_the_queue_takes(secrets):
    clients = json.loads(secrets["STATIC_CLIENTS"])
    assert [client["clientId"] for client in clients] == ["static/admin", "static/worker"]
    assert clients[1]["scopes"] == ["queue:claim-work:proj/linux", "queue:worker-id:azure/*"]
    Realm.from_settings(secrets["STATIC_CLIENTS"], "", "")   # refuses what it cannot use
    assert len({secrets[name] for name in ("CREDENTIALS_TOKEN", "ADMIN_TOKEN", "WORKER_TOKEN")}) == 3


def _run_locally(block: str, root_url: str, secrets: dict, tools: Path, **options) -> subprocess.Popen:
    """A block of the doc in bash, with the app's URL the local Queue's and `taskq` what
    `make scripts` installs."""
    script = block.replace("https://$APP.azurewebsites.net", root_url)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("TASKCLUSTER_")}
    environment.update({"HOME": secrets["HOME"], "PATH": f"{tools}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)})
    return subprocess.Popen(["bash", "-euc", script], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, **options)


@pytest.fixture
def tools(tmp_path) -> Path:
    """`taskq` and `taskq-worker` on the PATH, as `make scripts` puts them there."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, module in (("taskq", "taskq"), ("taskq-worker", "taskq_worker")):
        (folder / name).write_text(f'#!/bin/sh\nexec {sys.executable} -m {module} "$@"\n')
        (folder / name).chmod(0o755)
    return folder


def test_the_worker_and_the_first_task_run_as_written_against_a_local_queue(azurite, tmp_path, secrets, tools):
    server = start_server(azurite, tmp_path, STATIC_CLIENTS=secrets["STATIC_CLIENTS"],
                          QUEUE_CREDENTIALS_ACCESS_TOKEN=secrets["CREDENTIALS_TOKEN"])
    blocks = checked_blocks()
    worker = _run_locally(blocks["worker"], server.root_url, secrets, tools)
    try:
        first = _run_locally(blocks["first-task"], server.root_url, secrets, tools, cwd=tmp_path)
        out, err = first.communicate(timeout=180)
        assert first.returncode == 0, err
        assert "hello from Azure" in out and "completed" in err
        assert "InsufficientScopes" not in err
    finally:
        os.killpg(worker.pid, signal.SIGINT)
        worker.wait(timeout=30)
        server.stop()
    assert "worker started taskQueueId=proj/linux workerGroup=azure" in worker.stderr.read()
