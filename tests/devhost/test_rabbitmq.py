"""The local broker's lifecycle: started in a session of its own, it still dies with its
starter, so a killed `make run` or test run leaves no broker holding its port."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from devhost.processes import port_open

from tests.devhost.conftest import alive, eventually, first_port_taken

ROOT = Path(__file__).resolve().parents[2]
STARTER = ("import time; from devhost.rabbitmq import RabbitMQ; broker = RabbitMQ().start(); "
           "print(broker.process.pid, broker.port, flush=True); time.sleep(120)")


def test_the_broker_stops_when_the_process_that_started_it_is_killed():
    starter = subprocess.Popen([sys.executable, "-c", STARTER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    pid, port = map(int, starter.stdout.readline().split())
    try:
        assert alive(pid) and port_open(port)
        starter.send_signal(signal.SIGKILL)   # no finally, no atexit: only the kernel can tell the broker
        starter.wait(timeout=10)
        eventually(lambda: not port_open(port), timeout=30, message="the broker's port closed")
    finally:
        if port_open(port):
            subprocess.run(["kill", "--", f"-{pid}"], check=False)


def test_the_broker_chooses_its_port_again_when_it_is_taken_before_it_binds(monkeypatch):
    """Tests start many servers at once: a port chosen free may be bound by another process
    before the broker binds it; the broker then starts on a port chosen anew."""
    from devhost import rabbitmq as module

    with first_port_taken(monkeypatch, module) as taken, module.RabbitMQ() as broker:
        assert broker.port != taken and port_open(broker.port)
