"""Azurite's lifecycle for `make run`, the test suite and the benchmarks.

Azurite runs as a few Node.js processes; it is started in a process group of its own so
that stopping the group leaves nothing behind.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from devhost.processes import die_with_parent, free_port, port_open, start_on_free_ports, stop_group, wait_until_ready
from devhost.tls import self_signed_certificate

REPO = Path(__file__).resolve().parent.parent
VERSION = "3.35.0"
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
KEEP_ALIVE_SECONDS = 300   # how long Azurite keeps an idle connection open (its default: 5)
# Azurite writes a line per request to its log unless silent: measured here, formatting and
# writing those lines took a sixth of Azurite's time, in the path of every storage request.
# AZURITE_ACCESS_LOG=1 keeps them (to see the requests the Queue makes).
ACCESS_LOG_SETTING = "AZURITE_ACCESS_LOG"
SAVES = Path(__file__).with_name("azurite_saves.js")   # a kept Azurite saves its data every minute, not 5 s
SAVE_GRACE_SECONDS = 60   # a kept Azurite's last save, on stop, writes all it holds


def find_azurite_bin() -> Path:
    return Path(os.environ.get("AZURITE_BIN") or REPO / ".tools" / "node_modules" / ".bin" / "azurite")


def ensure_installed() -> Path:
    binary = find_azurite_bin()
    if not binary.exists():
        print(f"==> installing Azurite {VERSION} into .tools/ (npm)", flush=True)
        subprocess.run(["npm", "install", "--prefix", str(REPO / ".tools"), "--no-audit", "--no-fund",
                        "--loglevel=error", f"azurite@{VERSION}"], check=True)
    return binary


class PortTaken(RuntimeError):
    """A port Azurite was to listen on is in use."""


class Azurite:
    """One Azurite: blob, queue and table services on 127.0.0.1."""

    def __init__(self, location: Path | None = None, blob_port: int = 0, queue_port: int = 0,
                 table_port: int = 0, oauth: bool = False) -> None:
        """`oauth`: Azurite checks bearer tokens too (`--oauth basic`), which it does over
        HTTPS only: it serves with a self-signed certificate made at start (`certificate`,
        what clients must trust); `azurite_tokens.AzuriteCredential` makes tokens it takes."""
        self.location = Path(location).resolve() if location else None
        self._nested = self.location / location if location and not Path(location).is_absolute() else None
        self._given = {"blob": blob_port, "queue": queue_port, "table": table_port}
        self.ports = self._choose_ports()
        self.oauth = oauth
        self.certificate: Path | None = None
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self._scratch: tempfile.TemporaryDirectory | None = None

    def endpoint(self, service: str) -> str:
        """The URL of a service's account ("blob", "queue", "table"), as SDK clients take it."""
        return f"{'https' if self.oauth else 'http'}://127.0.0.1:{self.ports[service]}/{ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol={'https' if self.oauth else 'http'};AccountName={ACCOUNT};"
                f"AccountKey={ACCOUNT_KEY};BlobEndpoint={self.endpoint('blob')};"
                f"QueueEndpoint={self.endpoint('queue')};TableEndpoint={self.endpoint('table')};")

    def _choose_ports(self) -> dict[str, int]:
        return {service: port or free_port() for service, port in self._given.items()}

    def start(self, timeout: float = 30) -> Azurite:
        """Start it; ports it chose itself are chosen again if another process took one
        between its choice and Azurite's bind (tests start many servers at once)."""
        if any(self._given.values()):
            return self._start(timeout)
        return start_on_free_ports(lambda: self._start(timeout), self._choose_again, PortTaken)

    def _choose_again(self) -> None:
        self.stop()
        self.ports = self._choose_ports()

    def _start(self, timeout: float) -> Azurite:
        taken = [name for name, port in self.ports.items() if port_open(port)]
        if taken:
            raise PortTaken(f"Azurite cannot start: ports {[self.ports[n] for n in taken]} are in use")
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
        if os.environ.get(ACCESS_LOG_SETTING) != "1":
            command += ["--silent"]
        if self.oauth:
            self._scratch = tempfile.TemporaryDirectory(prefix="azurite-tls-")
            self.certificate, key = self_signed_certificate(Path(self._scratch.name))
            command += ["--oauth", "basic", "--cert", str(self.certificate), "--key", str(key)]
        environment = None
        if self.location:
            self.location.mkdir(parents=True, exist_ok=True)
            if self._nested:
                _move_nested_data(self._nested, self.location)
            command += ["--location", str(self.location)]
            self.log_path = self.location / "azurite.log"
            environment = {**os.environ, "NODE_OPTIONS": f"{os.environ.get('NODE_OPTIONS', '')} --require \"{SAVES}\""}
        else:
            command += ["--inMemoryPersistence"]
            self.log_path = Path(tempfile.mkstemp(prefix="azurite-", suffix=".log")[1])
        self.process = subprocess.Popen(command, stdout=self.log_path.open("wb"), stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.location or None,
                                        env=environment, preexec_fn=die_with_parent)
        self._wait_until_listening(timeout)
        return self

    def _wait_until_listening(self, timeout: float) -> None:
        def failed(why: str) -> RuntimeError:
            tail = self.log_tail()
            return (PortTaken if "EADDRINUSE" in tail else RuntimeError)(f"Azurite {why}: {tail}")
        wait_until_ready(self.process, lambda: all(port_open(port) for port in self.ports.values()), timeout, 0.1,
                         failed)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-2000:] if self.log_path else ""

    def stop(self) -> None:
        stop_group(self.process, grace=SAVE_GRACE_SECONDS if self.location else 5)
        self.process = None
        if not self.location and self.log_path:   # an in-memory Azurite's log is a temporary file
            self.log_path.unlink(missing_ok=True)
            self.log_path = None
        if self._scratch:
            self._scratch.cleanup()
            self._scratch = None

    def __enter__(self) -> Azurite:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _move_nested_data(nested: Path, location: Path) -> None:
    """Earlier versions gave Azurite a relative location and started it inside that folder,
    so its data went to `.azurite/.azurite`: moved to where Azurite is now told to keep it."""
    if nested.is_dir() and not any(location.glob("__azurite_db_*")):
        for item in nested.iterdir():
            item.rename(location / item.name)
        nested.rmdir()
