"""Helpers for the devhost tests: polling with a bound instead of fixed sleeps."""

from __future__ import annotations

import json
import socket
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from devhost.host import LocalHost
from tests.conftest import eventually  # noqa: F401 - the devhost tests import it from here


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not), from /proc."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextmanager
def first_port_taken(monkeypatch, module):
    """`module.free_port` answers first a port another socket has bound (bound, not
    listening: free to a connect, taken to a bind), as when another process takes a port
    between a server's choice and its bind; the port, for the block."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    taken = holder.getsockname()[1]
    choices, real = iter([taken]), module.free_port
    monkeypatch.setattr(module, "free_port", lambda: next(choices, None) or real())
    try:
        yield taken
    finally:
        holder.close()


def unique_queue_name(stem: str = "dh") -> str:
    """A storage queue name no other test uses (lowercase letters, digits and dashes)."""
    return f"{stem}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def local_host(tmp_path):
    """`local_host(app, extensions={...})` serves `app` on a free port with a host.json of its
    own (in a temporary app dir); stopped after the test."""
    hosts = []

    def start(app, extensions: dict | None = None) -> LocalHost:
        (tmp_path / "host.json").write_text(json.dumps({"version": "2.0", "extensions": extensions or {}}))
        host = LocalHost(tmp_path, port=0, app=app).start()
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        host.stop()
