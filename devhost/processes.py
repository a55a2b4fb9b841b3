"""Local helper processes (Azurite, RabbitMQ): free ports, starting in a group of one's own
that dies with its starter, waiting until ready, and stopping the whole group."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Callable, TypeVar

Server = TypeVar("Server")
PORT_ATTEMPTS = 3   # starts of a server on ports chosen anew when another process took one


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies, even by
    SIGKILL, so a killed `make run`, test run or benchmark leaves nothing holding its ports
    (the child runs in a session of its own, where no Ctrl-C reaches it). Linux sends the
    signal when the *thread* that started the child ends, so start it from a thread that
    lives as long as its user (the main thread, as every caller does); a host restarted
    from a worker thread, as the SIGKILL test does, must not use this."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def wait_until_ready(process: subprocess.Popen, ready: Callable[[], bool], timeout: float, interval: float,
                     failed: Callable[[str], Exception]) -> None:
    """Until `ready()` is true; `failed(why)` is raised if the process exits first or
    `timeout` seconds pass (then the process group is stopped)."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if process.poll() is not None:
            raise failed("exited")
        if ready():
            return
        time.sleep(interval)
    stop_group(process, grace=5)
    raise failed(f"was not ready within {timeout} s")


def stop_group(process: subprocess.Popen | None, grace: float) -> None:
    """Stop a process started in a group of its own, and the whole group: SIGTERM, then
    SIGKILL if it is still there after `grace` seconds."""
    if process is None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_on_free_ports(start: Callable[[], Server], choose_again: Callable[[], None],
                        taken: type[Exception]) -> Server:
    """`start()` a server on ports it chose free; if another process took one between the
    choice and the server's bind (`taken` raised: tests start many servers at once),
    `choose_again()` and start again, PORT_ATTEMPTS times in all."""
    for _ in range(PORT_ATTEMPTS - 1):
        try:
            return start()
        except taken:
            choose_again()
    return start()


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0
