"""Azurite's lifecycle: started in a session of its own, it still dies with its starter."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from devhost.processes import port_open

from tests.devhost.conftest import alive, eventually, first_port_taken

ROOT = Path(__file__).resolve().parents[2]
STARTER = ("import time; from devhost.azurite import Azurite; azurite = Azurite().start(); "
           "print(azurite.process.pid, *azurite.ports.values(), flush=True); time.sleep(120)")


def test_azurite_stops_when_the_process_that_started_it_is_killed():
    starter = subprocess.Popen([sys.executable, "-c", STARTER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    pid, *ports = map(int, starter.stdout.readline().split())
    try:
        assert alive(pid) and all(port_open(port) for port in ports)
        starter.send_signal(signal.SIGKILL)   # no finally, no atexit: only the kernel can tell Azurite
        starter.wait(timeout=10)
        eventually(lambda: not alive(pid), timeout=15, message="Azurite gone after its starter was killed")
        eventually(lambda: not any(port_open(port) for port in ports), timeout=15, message="ports closed")
    finally:
        if alive(pid):
            subprocess.run(["kill", "-9", str(pid)], check=False)


def test_requests_are_not_logged_unless_asked(monkeypatch, tmp_path):
    from azure.data.tables import TableServiceClient

    from devhost.azurite import ACCESS_LOG_SETTING, Azurite

    def log_after_a_request(location: Path) -> str:
        with Azurite(location) as azurite:   # its log is kept (a location), and complete once it stopped
            TableServiceClient.from_connection_string(azurite.connection_string).create_table("logged")
        return azurite.log_path.read_text()
    monkeypatch.delenv(ACCESS_LOG_SETTING, raising=False)
    assert "POST /devstoreaccount1/Tables" not in log_after_a_request(tmp_path / "silent")
    monkeypatch.setenv(ACCESS_LOG_SETTING, "1")
    assert "POST /devstoreaccount1/Tables" in log_after_a_request(tmp_path / "logged")


def test_azurite_chooses_its_ports_again_when_one_is_taken_before_it_binds(monkeypatch):
    """Tests start many servers at once: a port chosen free may be bound by another process
    before Azurite binds it (EADDRINUSE in its log); Azurite then starts on ports chosen anew."""
    from devhost import azurite as module

    with first_port_taken(monkeypatch, module) as taken, module.Azurite() as azurite:
        assert taken not in azurite.ports.values()
        assert all(port_open(port) for port in azurite.ports.values())


def _entity(azurite, table: str):
    from azure.data.tables import TableServiceClient
    return TableServiceClient.from_connection_string(azurite.connection_string).get_table_client(table)


def test_a_kept_azurite_saves_on_stop_what_it_held_and_serves_it_when_started_again(tmp_path):
    """Its saves are a minute apart (a save writes everything it holds); what changed since
    the last one is saved when it stops, so the next start has it."""
    from devhost.azurite import Azurite

    with Azurite(tmp_path / "kept") as azurite:
        _entity(azurite, "kept").create_table()
        _entity(azurite, "kept").create_entity({"PartitionKey": "p", "RowKey": "r", "note": "before the stop"})
    assert "saved every 60 s and when Azurite stops" in azurite.log_path.read_text()
    with Azurite(tmp_path / "kept") as again:
        assert _entity(again, "kept").get_entity("p", "r")["note"] == "before the stop"


def test_data_an_earlier_version_kept_one_folder_too_deep_is_moved_up_and_served(tmp_path, monkeypatch):
    """Earlier versions started Azurite inside its folder with the folder's relative path, so
    `make run` kept its data in `.azurite/.azurite`."""
    from devhost.azurite import Azurite

    with Azurite(tmp_path / "earlier") as azurite:
        _entity(azurite, "kept").create_table()
        _entity(azurite, "kept").create_entity({"PartitionKey": "p", "RowKey": "r", "note": "kept earlier"})
    nested = tmp_path / ".azurite" / ".azurite"
    nested.parent.mkdir()
    (tmp_path / "earlier").rename(nested)
    monkeypatch.chdir(tmp_path)
    with Azurite(Path(".azurite")) as now:
        assert _entity(now, "kept").get_entity("p", "r")["note"] == "kept earlier"
    assert not nested.exists() and any((tmp_path / ".azurite").glob("__azurite_db_table__*"))
