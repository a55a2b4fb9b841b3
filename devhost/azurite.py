"""Azurite's lifecycle for `make run`, the test suite and the benchmarks.

Azurite runs as a few Node.js processes; it is started in a process group of its own so
that stopping the group leaves nothing behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSION = "3.35.0"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
KEEP_ALIVE_SECONDS = 300   # how long Azurite keeps an idle connection open (its default: 5)


def find_azurite_bin() -> Path:
    return Path(os.environ.get("AZURITE_BIN") or REPO / ".tools" / "node_modules" / ".bin" / "azurite")


def ensure_installed() -> Path:
    binary = find_azurite_bin()
    if not binary.exists():
        print(f"==> installing Azurite {VERSION} into .tools/ (npm)", flush=True)
        subprocess.run(["npm", "install", "--prefix", str(REPO / ".tools"), "--no-audit", "--no-fund",
                        "--loglevel=error", f"azurite@{VERSION}"], check=True)
    return binary


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started Azurite dies, even
    by SIGKILL, so a killed `make run`, test run or benchmark leaves no Azurite holding its
    ports (Azurite runs in a session of its own, where no Ctrl-C reaches it). Linux sends
    the signal when the *thread* that started the child ends, so start Azurite from a thread
    that lives as long as its user (the main thread, as every caller does); a host restarted
    from a worker thread, as the SIGKILL test does, must not use this."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


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


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Azurite:
    """One Azurite: blob, queue and table services on 127.0.0.1."""

    def __init__(self, location: Path | None = None, blob_port: int = 0, queue_port: int = 0,
                 table_port: int = 0) -> None:
        self.location = Path(location) if location else None
        self.ports = {"blob": blob_port or free_port(), "queue": queue_port or free_port(),
                      "table": table_port or free_port()}
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None

    @property
    def connection_string(self) -> str:
        base = "http://127.0.0.1:{}/devstoreaccount1"
        return (f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={ACCOUNT_KEY};"
                f"BlobEndpoint={base.format(self.ports['blob'])};"
                f"QueueEndpoint={base.format(self.ports['queue'])};"
                f"TableEndpoint={base.format(self.ports['table'])};")

    def start(self, timeout: float = 30) -> Azurite:
        taken = [name for name, port in self.ports.items() if port_open(port)]
        if taken:
            raise RuntimeError(f"Azurite cannot start: ports {[self.ports[n] for n in taken]} are in use")
        command = [str(ensure_installed()), "--skipApiVersionCheck", "--loose", "--disableTelemetry",
                   "--blobHost", "127.0.0.1", "--queueHost", "127.0.0.1", "--tableHost", "127.0.0.1",
                   "--blobPort", str(self.ports["blob"]), "--queuePort", str(self.ports["queue"]),
                   "--tablePort", str(self.ports["table"])]
        # Azurite closes a connection after 5 idle seconds; a request sent on it at that
        # moment is reset. After a long pause (validating a 10,000-task graph) every pooled
        # connection is at that age at once, and one request met five resets in a row.
        # Azure keeps idle connections for minutes; so does this Azurite.
        for service in ("blob", "queue", "table"):
            command += [f"--{service}KeepAliveTimeout", str(KEEP_ALIVE_SECONDS)]
        if self.location:
            self.location.mkdir(parents=True, exist_ok=True)
            command += ["--location", str(self.location)]
            self.log_path = self.location / "azurite.log"
        else:
            command += ["--inMemoryPersistence"]
            self.log_path = Path(tempfile.mkstemp(prefix="azurite-", suffix=".log")[1])
        self.process = subprocess.Popen(command, stdout=self.log_path.open("wb"), stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.location or None,
                                        preexec_fn=_die_with_parent)
        self._wait_until_listening(timeout)
        return self

    def _wait_until_listening(self, timeout: float) -> None:
        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            if self.process.poll() is not None:
                raise RuntimeError(f"Azurite exited: {self.log_tail()}")
            if all(port_open(port) for port in self.ports.values()):
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"Azurite did not listen within {timeout} s: {self.log_tail()}")

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-2000:] if self.log_path else ""

    def stop(self) -> None:
        stop_group(self.process, grace=5)
        self.process = None

    def __enter__(self) -> Azurite:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
