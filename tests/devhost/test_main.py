"""`python -m devhost` as a user runs it: a subprocess serving the project's function_app.py,
stopped with Ctrl-C (SIGINT), leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import re

import pytest
import requests
import taskcluster
from azure.storage.queue import QueueClient

from devhost.processes import port_open
from tests.conftest import free_port, launch_host, make_task, start_server, unique_prefix

from tests.devhost.conftest import alive, eventually

ROOT = Path(__file__).resolve().parents[2]
AZURITE_PORTS = (10000, 10001, 10002)  # what `--azurite auto` always uses
BROKER_PORT = 5672                     # and `--broker auto`


def interrupt(process: subprocess.Popen, timeout: float = 20) -> int:
    process.send_signal(signal.SIGINT)
    return process.wait(timeout=timeout)


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, pending = set(), [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.add(child)
            pending.append(child)
    return found


def test_with_the_test_azurite_answers_ping_and_stops_on_sigint(azurite, tmp_path):
    server = start_server(azurite, tmp_path)  # `--azurite none`, waits for /ping to answer 200
    try:
        assert requests.get(server.url("/ping"), timeout=5).json()["alive"] is True
        port = int(server.root_url.rsplit(":", 1)[1])

        assert interrupt(server.process) == 0
        assert not port_open(port)
        log = server.log_path.read_text()
        assert "Queue API listening on" in log and "==> stopping" in log
        assert "starting Azurite" not in log
    finally:
        server.stop(sig_kill=True)


def test_storage_throttled_when_asked_and_the_proxy_stops_with_the_host(azurite, tmp_path):
    server = start_server(azurite, tmp_path, STORAGE_THROTTLE="10")
    try:
        queue = server.client()
        task_queue_id = f"prov-{unique_prefix()}/throttled"
        task_id = taskcluster.slugId()
        queue.createTask(task_id, make_task(task_queue_id))
        assert queue.status(task_id)["status"]["state"] == "pending"
        log = server.log_path.read_text()
        assert "==> storage throttled as Azure's targets / 10 (partition_entities_per_s 200," in log
        counts_url = re.search(r"counts: (http://\S+)", log).group(1)
        counts = requests.get(counts_url, timeout=10).json()
        assert counts["scale"] == 10 and counts["account"]["requests"] > 0
        proxy_port = int(counts_url.split(":")[2].split("/")[0])
        assert interrupt(server.process) == 0
        eventually(lambda: not port_open(proxy_port), timeout=15, message="the proxy stopped with the host")
    finally:
        server.stop(sig_kill=True)


def test_closing_the_terminal_stops_it_too(azurite, tmp_path):
    server = start_server(azurite, tmp_path)
    try:
        server.process.send_signal(signal.SIGHUP)
        assert server.process.wait(timeout=20) == 0
        assert "==> stopping" in server.log_path.read_text()
    finally:
        server.stop(sig_kill=True)


def test_a_port_in_use_is_a_one_line_error(azurite):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
        done = run_devhost(port, {**os.environ, **sample, "AzureWebJobsStorage": azurite.connection_string})
    assert done.returncode == 1
    assert f"cannot serve on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr


def test_a_missing_app_setting_is_a_one_line_error(azurite, tmp_path):
    # The app without a local.settings.json, which a developer's checkout may have.
    for name in ("function_app.py", "host.json", "shared", "schemas"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = {key: value for key, value in os.environ.items() if not key.startswith("QUEUE_")}
    done = run_devhost(free_port(), {**env, "AzureWebJobsStorage": azurite.connection_string}, tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "app setting" in done.stderr and "is not defined" in done.stderr


def run_devhost(port: int, env: dict, app_dir: Path = ROOT) -> subprocess.CompletedProcess:
    """`python -m devhost` on `port` with `env`, expected to give up at once."""
    return subprocess.run([sys.executable, "-m", "devhost", "--app-dir", str(app_dir), "--port", str(port),
                           "--azurite", "none", "--broker", "none"], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)


def test_auto_starts_azurite_and_the_broker_and_stops_them_on_sigint(tmp_path):
    taken = [port for port in AZURITE_PORTS + (BROKER_PORT,) if port_open(port)]
    if taken:
        pytest.skip(f"ports {taken} are in use (another `make run`?); it always uses 10000-10002 and 5672")
    # The settings a user's local.settings.json starts from (its storage is development storage,
    # which is what makes `auto` start Azurite), on tables and queues of this test's own.
    sample = json.loads((ROOT / "local.settings.sample.json").read_text())["Values"]
    prefix = unique_prefix()
    env = {key: value for key, value in os.environ.items() if key not in sample}
    env.update(sample)
    env.update({"AzureWebJobsStorage": "UseDevelopmentStorage=true", "QUEUE_TABLE_PREFIX": prefix,
                "QUEUE_RESOLVED_QUEUE": f"{prefix}-resolved", "QUEUE_REPAIR_QUEUE": f"{prefix}-repairs",
                "QUEUE_GRAPH_QUEUE": f"{prefix}-graphs"})
    port, data = free_port(), tmp_path / "azurite-data"
    log_path = tmp_path / "devhost.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "devhost", "--app-dir", str(ROOT), "--port", str(port), "--azurite", "auto",
         "--azurite-data", str(data), "--broker-data", str(tmp_path / "broker")],
        cwd=ROOT, env=env, stdout=log_path.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    children: set[int] = set()
    try:
        def ping() -> bool:
            assert process.poll() is None, log_path.read_text()[-3000:]
            try:
                return requests.get(f"http://127.0.0.1:{port}/api/queue/v1/ping", timeout=2).status_code == 200
            except requests.ConnectionError:
                return False

        eventually(ping, timeout=60, interval=0.2, message="the host answering /ping")
        assert all(port_open(p) for p in AZURITE_PORTS + (BROKER_PORT,))
        assert any(data.iterdir())  # Azurite keeps its data where --azurite-data says
        assert (tmp_path / "broker" / "mnesia").is_dir()   # and the broker where --broker-data says
        children = descendants(process.pid)
        assert children, "Azurite should run as a child of the host"

        assert interrupt(process) == 0
        eventually(lambda: not any(port_open(p) for p in AZURITE_PORTS + (BROKER_PORT, port)), timeout=30,
                   message="ports closed")
        eventually(lambda: not any(alive(pid) for pid in children), message="Azurite's processes gone")
    finally:  # after a failure, leave neither the host nor its Azurite running
        if process.poll() is None:
            children |= descendants(process.pid)
            process.kill()
            process.wait(timeout=10)
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


STUCK_APP = '''
import threading
import azure.functions as func

app = func.FunctionApp()


@app.queue_trigger(arg_name="message", queue_name="%STUCK_QUEUE%", connection="AzureWebJobsStorage")
def stuck(message: func.QueueMessage) -> None:
    print("handler started", flush=True)
    threading.Event().wait()  # like a handler retrying storage that has gone away
'''


@pytest.mark.slow
def test_a_handler_that_never_returns_does_not_keep_it_from_stopping(azurite, tmp_path):
    (tmp_path / "function_app.py").write_text(STUCK_APP)
    (tmp_path / "host.json").write_text(json.dumps({"version": "2.0"}))
    queue_name = f"stuck-{unique_prefix()}".lower()
    env = {**os.environ, "AzureWebJobsStorage": azurite.connection_string, "STUCK_QUEUE": queue_name}
    log_path = tmp_path / "devhost.log"
    process = launch_host(free_port(), env, log_path, app_dir=tmp_path)
    try:
        eventually(lambda: "listening on" in log_path.read_text(), timeout=30, message="the host up")
        QueueClient.from_connection_string(azurite.connection_string, queue_name).send_message("go")
        eventually(lambda: "handler started" in log_path.read_text(), timeout=30, message="the handler running")

        process.send_signal(signal.SIGTERM)
        # The pollers' grace period is 10 s; then the process ends, the message unsettled
        # (it is delivered again after its hold, as after a crash).
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_the_event_broker_is_said_at_start(azurite, tmp_path):
    """`make run` names the broker its events go to (the test servers name theirs)."""
    server = start_server(azurite, tmp_path)
    try:
        broker = server.env["EVENTS_AMQP_URL"].rsplit("@", 1)[1].split("/")[0]
        log = server.log_path.read_text()
        assert f"==> events: the AMQP broker EVENTS_AMQP_URL names, {broker} (" in log
        assert "guest" not in log   # never its credentials
    finally:
        server.stop()
    quiet = start_server(azurite, tmp_path, EVENTS_AMQP_URL="")
    try:
        assert "==> events: none (EVENTS_AMQP_URL and EVENTS_SERVICE_BUS_NAMESPACE are unset)" \
            in quiet.log_path.read_text()
    finally:
        quiet.stop()


def test_services_only_starts_no_app_and_says_what_func_start_needs(azurite, broker, tmp_path):
    """`make services`: storage and events for an app that Core Tools serves (`func start`)."""
    env = {key: value for key, value in os.environ.items() if key != "STATIC_CLIENTS"}
    env.update({"AzureWebJobsStorage": azurite.connection_string, "EVENTS_AMQP_URL": broker.url,
                "PYTHONPATH": str(ROOT)})
    log_path = tmp_path / "services.log"
    process = subprocess.Popen([sys.executable, "-m", "devhost", "--services-only", "--azurite", "none",
                                "--broker", "none", "--azurite-data", str(tmp_path / "data")],
                               cwd=ROOT, env=env, stdout=log_path.open("wb"), stderr=subprocess.STDOUT)
    try:
        eventually(lambda: "export TASKCLUSTER_ACCESS_TOKEN=" in log_path.read_text(), timeout=30,
                   message="what func start needs, printed")
        assert interrupt(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
    log = log_path.read_text()
    values = json.loads("{" + log.split("Values need:\n", 1)[1].split("\n==>", 1)[0].rstrip().rstrip(",") + "}")
    assert values["AzureWebJobsStorage"] == azurite.connection_string and values["EVENTS_AMQP_URL"] == broker.url
    root = json.loads((tmp_path / "data" / "root-client.json").read_text())
    assert json.loads(values["STATIC_CLIENTS"]) == [{**root, "scopes": ["*"]}]
    assert "export TASKCLUSTER_ROOT_URL=http://127.0.0.1:7071" in log and "listening on" not in log
