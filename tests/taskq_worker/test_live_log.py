"""The worker's live log server over real HTTP: a run's log streamed while it grows, and a
reader told where the complete log is once the run ended (never a response cut short)."""

from __future__ import annotations

import threading

import pytest
import requests

from taskq_worker.live_log import BACKING_LOG_NAME, LiveLogServer, RunLog


@pytest.fixture
def server():
    instance = LiveLogServer("127.0.0.1", 0, "127.0.0.1")
    yield instance
    instance.stop()


def test_a_log_is_streamed_until_its_run_closes_it(server, tmp_path):
    run_log = RunLog(tmp_path / "run.log")
    url = server.publish(run_log)
    run_log.line("first")
    received = []

    def read() -> None:
        with requests.get(url, stream=True, timeout=10) as response:
            received.append(response.status_code)
            received.append(b"".join(response.iter_content(chunk_size=None)).decode())
    reader = threading.Thread(target=read)
    reader.start()
    run_log.line("second")
    run_log.close()
    reader.join(timeout=10)
    assert received[0] == 200
    assert "] first\n" in received[1] and received[1].index("first") < received[1].index("second")


def test_after_the_run_a_reader_is_told_where_the_complete_log_is(server, tmp_path):
    run_log = RunLog(tmp_path / "run.log")
    url = server.publish(run_log)
    run_log.close()
    server.retire(run_log)
    gone = requests.get(url, timeout=10)
    assert gone.status_code == 404 and BACKING_LOG_NAME in gone.text and "the run has ended" in gone.text
    assert gone.headers["Access-Control-Allow-Origin"] == "*"   # the browser view reads it too


def test_a_log_file_removed_before_its_retirement_is_gone_too(server, tmp_path):
    """The run's file is deleted as the run ends; a read in between must not break the response."""
    run_log = RunLog(tmp_path / "run.log")
    url = server.publish(run_log)
    run_log.close()
    run_log.path.unlink()
    gone = requests.get(url, timeout=10)
    assert gone.status_code == 404 and BACKING_LOG_NAME in gone.text
    assert requests.get(url.rsplit("/", 1)[0] + "/unknown-token", timeout=10).status_code == 404
