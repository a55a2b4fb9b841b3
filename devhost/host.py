"""The local host: loads the app and host.json, serves HTTP, polls queues, fires timers."""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from pathlib import Path

from devhost import blob_cors
from devhost.host_config import HostConfig
from devhost.http_server import HttpFunction, make_server
from devhost.ncrontab import Schedule
from devhost.queue_triggers import QueuePoller
from devhost.routes import RouteTemplate
from devhost.settings import apply_to_environ, expand, load_settings, sample_values
from devhost.timer_triggers import TimerRunner

log = logging.getLogger("devhost")


class LocalHost:
    def __init__(self, app_dir: Path, host: str = "127.0.0.1", port: int = 7071, app=None) -> None:
        """`app`: a `func.FunctionApp` to serve instead of importing `function_app.app` from
        `app_dir` (the tests build small apps of their own)."""
        self.app_dir = Path(app_dir).resolve()
        self.settings = load_settings(self.app_dir, sample_values(self.app_dir))
        apply_to_environ(self.settings)
        self.config = HostConfig.read(self.app_dir)
        self.stop_event = threading.Event()
        self.http: list[HttpFunction] = []
        self.pollers: list[QueuePoller] = []
        self.timers: list[TimerRunner] = []
        self._load_functions(app)
        self.server = make_server(host, port, self.http)
        self.server_thread = threading.Thread(target=self.server.serve_forever, name="http", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def _load_functions(self, app) -> None:
        if app is None:
            if str(self.app_dir) not in sys.path:
                sys.path.insert(0, str(self.app_dir))
            app = importlib.import_module("function_app").app
        for function in app.get_functions():
            self._add(function.get_function_name(), function.get_trigger(), function.get_user_function())

    def _add(self, name: str, trigger, user_function) -> None:
        kind = trigger.type
        if kind == "httpTrigger":
            route = "/".join(part for part in (self.config.route_prefix, trigger.route or name) if part)
            methods = {str(getattr(m, "value", m)).upper() for m in trigger.methods} if trigger.methods else None
            self.http.append(HttpFunction(name, user_function, RouteTemplate.parse(route), methods))
            self._describe(name, "http", f"/{route} {sorted(methods) if methods else 'ALL'}")
        elif kind == "queueTrigger":
            queue_name = expand(trigger.queue_name, self.settings)
            self.pollers.append(QueuePoller(name, user_function, self.settings, trigger.connection or "AzureWebJobsStorage",
                                            queue_name, self.config, self.stop_event))
            self._describe(name, "queue", queue_name)
        elif kind == "timerTrigger":
            schedule = Schedule(expand(trigger.schedule, self.settings))
            self.timers.append(TimerRunner(name, user_function, schedule, bool(trigger.run_on_startup),
                                           self.stop_event))
            self._describe(name, "timer", schedule.expression)
        else:
            raise ValueError(f"function {name}: trigger {kind!r} is not supported by the local host")

    @staticmethod
    def _describe(name: str, kind: str, detail: str) -> None:
        log.info("function %-22s %-6s %s", name, kind, detail)

    def start(self) -> LocalHost:
        blob_cors.allow_browser_reads(self.settings.get("AzureWebJobsStorage", ""))
        self.server_thread.start()
        for runner in (*self.pollers, *self.timers):
            runner.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.server.shutdown()
        self.server.server_close()
        for poller in self.pollers:
            poller.thread.join(timeout=10)
