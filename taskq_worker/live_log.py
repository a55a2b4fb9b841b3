"""The log of each run, written to a file and served over HTTP while it grows.

`public/logs/live.log` is a reference artifact to this server while the run goes on (as
generic-worker's livelog does), so anyone can read the output as it is written: the
response streams the file and ends when the run's log is closed. Each log is served under
a random token, so only those who read the artifact find it.

Once the run ended, its log is no longer served here: a reader still holding the old URL
(the artifact stays a reference to this server when the complete log could not be uploaded,
a cancelled run's for one) is told so in a 404 naming the complete log's artifact, instead
of a response cut short.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

log = logging.getLogger("taskq_worker.live_log")
POLL = 0.1
BACKING_LOG_NAME = "public/logs/live_backing.log"
GONE = (f"This run's live log is no longer served: the run has ended. Its complete log is the run's "
        f"artifact {BACKING_LOG_NAME}, if the worker could upload it.\n").encode()


class RunLog:
    """One run's log file: the worker's own lines and the commands' output, in order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = path.open("ab", buffering=0)
        self.closed = threading.Event()
        self.token = secrets.token_urlsafe(16)

    def line(self, text: str) -> None:
        self.file.write(f"[taskq-worker {time.strftime('%H:%M:%S')}] {text}\n".encode())

    def close(self) -> None:
        self.file.close()
        self.closed.set()


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1, so the body can be chunked: a reader gets each piece as it is written (a body
    # without a length, which HTTP/1.0 would send, is read whole by clients that wait for
    # its end, as `requests` does).
    protocol_version = "HTTP/1.1"
    logs: dict[str, RunLog] = {}

    def log_message(self, format, *args) -> None:
        pass

    def do_GET(self) -> None:
        run_log = self.logs.get(self.path.rsplit("/", 1)[-1]) if self.path.startswith("/log/") else None
        try:
            source = run_log.path.open("rb") if run_log else None
        except FileNotFoundError:   # the run ended between the look-up and the open
            source = None
        if source is None:
            self._gone()
            return
        with source:
            self._send_stream(run_log, source)

    def _gone(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(GONE)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(GONE)

    def _send_stream(self, run_log: RunLog, source) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Access-Control-Allow-Origin", "*")  # the browser view reads it from another origin
        self.send_header("Transfer-Encoding", "chunked")      # the body ends with the run
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self._stream(run_log, source)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _stream(self, run_log: RunLog, source) -> None:
        while True:
            closed = run_log.closed.is_set()  # read after checking, so nothing written before is missed
            chunk = source.read(65536)
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            elif closed:
                return
            else:
                time.sleep(POLL)


class LiveLogServer:
    def __init__(self, bind: str, port: int, public_host: str) -> None:
        self._logs: dict[str, RunLog] = {}
        handler = type("Handler", (_Handler,), {"logs": self._logs})
        self._server = ThreadingHTTPServer((bind, port), handler)
        self._server.daemon_threads = True
        self.base_url = f"http://{public_host}:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, name="live-log", daemon=True).start()
        log.info("live log server listening url=%s", self.base_url)

    def publish(self, run_log: RunLog) -> str:
        self._logs[run_log.token] = run_log
        return f"{self.base_url}/log/{run_log.token}"

    def retire(self, run_log: RunLog) -> None:
        self._logs.pop(run_log.token, None)

    def stop(self) -> None:
        self._server.shutdown()
