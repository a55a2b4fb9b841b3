"""A RabbitMQ broker of our own for `make run`, the test suite and the benchmarks: the local
stand-in for Pulse, where the Queue publishes its events.

It is Debian's `rabbitmq-server`, installed from the system's packages when missing (as
root; otherwise one line says how), run in a folder of its own (data, logs, config) on its
own ports, so it never meets the system's broker or another test run's. It is started by
the package's own start script, not by Debian's wrapper (which, run by root, switches to the
`rabbitmq` user, who cannot enter a folder of root's such as a test's temporary one): the
broker runs as whoever starts it, in a process group of its own, stopped as a whole.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from devhost import system_packages
from devhost.processes import die_with_parent, free_port, port_open, start_on_free_ports, stop_group, wait_until_ready

SERVER = "rabbitmq-server"
SEARCH_PATH = os.pathsep.join(["/usr/lib/rabbitmq/bin", os.environ.get("PATH", ""), "/usr/sbin"])


class BrokerUnavailable(RuntimeError):
    pass


def find_server() -> str | None:
    return shutil.which(SERVER, path=SEARCH_PATH)


def ensure_installed() -> str:
    server = find_server()
    if server:
        return server
    if os.geteuid() != 0:
        raise BrokerUnavailable("RabbitMQ is not installed; install it with: sudo apt-get install -y "
                                "rabbitmq-server (or set EVENTS_AMQP_URL to a broker of yours)")
    system_packages.install(["rabbitmq-server"], lambda: find_server() is not None, "about a minute")
    server = find_server()
    if not server:
        raise BrokerUnavailable("rabbitmq-server was installed but cannot be found")
    return server


class PortTaken(BrokerUnavailable):
    """A port the broker was to listen on is in use."""


class RabbitMQ:
    """One broker on 127.0.0.1; `url` is what EVENTS_AMQP_URL takes."""

    def __init__(self, location: Path | None = None, port: int = 0) -> None:
        self.location = Path(location) if location else Path(tempfile.mkdtemp(prefix="rabbitmq-"))
        self._port_given = bool(port)
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    @property
    def log_path(self) -> Path:
        return self.location / "broker.log"

    def _environment(self) -> dict:
        folder = self.location
        return {
            **os.environ, "PATH": SEARCH_PATH,
            "RABBITMQ_NODENAME": f"queue{self.port}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1", "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "RABBITMQ_MNESIA_BASE": str(folder / "mnesia"), "RABBITMQ_LOG_BASE": str(folder / "log"),
            "RABBITMQ_FEATURE_FLAGS_FILE": str(folder / "feature_flags"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(folder / "enabled_plugins"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(folder / "plugins"),
            "RABBITMQ_GENERATED_CONFIG_DIR": str(folder / "config"),
            "RABBITMQ_PID_FILE": str(folder / "broker.pid"),
        }

    def start(self, timeout: float = 60) -> RabbitMQ:
        """Start it; a port it chose itself is chosen again if another process took it
        between the choice and the broker's bind (tests start many servers at once)."""
        if self._port_given:
            return self._start(timeout)
        return start_on_free_ports(lambda: self._start(timeout), self._choose_again, PortTaken)

    def _choose_again(self) -> None:
        self.stop()
        self.port = free_port()

    def _start(self, timeout: float) -> RabbitMQ:
        server = ensure_installed()
        if port_open(self.port):
            raise PortTaken(f"RabbitMQ cannot start: port {self.port} is in use")
        self.location.mkdir(parents=True, exist_ok=True)
        (self.location / "enabled_plugins").write_text("[].\n")
        self.process = subprocess.Popen([server], env=self._environment(), cwd=self.location,
                                        stdout=self.log_path.open("wb"), stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        preexec_fn=die_with_parent)
        self._wait_until_ready(timeout)
        return self

    def _wait_until_ready(self, timeout: float) -> None:
        def failed(why: str) -> BrokerUnavailable:
            tail = self.log_tail()
            return (PortTaken if "eaddrinuse" in tail.lower() else BrokerUnavailable)(f"RabbitMQ {why}: {tail}")
        wait_until_ready(self.process, lambda: port_open(self.port) and self._accepts_amqp(), timeout, 0.25, failed)

    def _accepts_amqp(self) -> bool:
        import pika
        try:
            pika.BlockingConnection(pika.URLParameters(self.url)).close()
            return True
        except Exception:
            return False

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""

    def stop(self) -> None:
        stop_group(self.process, grace=15)
        self.process = None

    def __enter__(self) -> RabbitMQ:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
