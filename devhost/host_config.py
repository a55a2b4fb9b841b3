"""The parts of `host.json` this host honours."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


def _seconds(text: str | None, default: float) -> float:
    """`HH:MM:SS` (host.json's TimeSpan) in seconds."""
    if not text:
        return default
    hours, minutes, seconds = text.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


@dataclass(frozen=True)
class HostConfig:
    route_prefix: str = "api"
    batch_size: int = 16
    max_dequeue_count: int = 5
    visibility_timeout: float = 0.0
    max_polling_interval: float = 60.0
    base64_messages: bool = True
    new_batch_threshold: int | None = None   # None: Azure's default, half of batchSize

    @property
    def fetch_below(self) -> int:
        """How few messages may be in flight before the next batch is fetched
        (`newBatchThreshold`): at most batchSize + this many run at once."""
        return self.batch_size // 2 if self.new_batch_threshold is None else self.new_batch_threshold

    @classmethod
    def read(cls, app_dir: Path) -> HostConfig:
        path = Path(app_dir) / "host.json"
        extensions = json.loads(path.read_text()).get("extensions", {}) if path.exists() else {}
        http, queues = extensions.get("http", {}), extensions.get("queues", {})
        return cls(
            route_prefix=http.get("routePrefix", "api").strip("/"),
            batch_size=int(queues.get("batchSize", 16)),
            max_dequeue_count=int(queues.get("maxDequeueCount", 5)),
            visibility_timeout=_seconds(queues.get("visibilityTimeout"), 0.0),
            max_polling_interval=_seconds(queues.get("maxPollingInterval"), 60.0),
            base64_messages=queues.get("messageEncoding", "base64").lower() != "none",
            new_batch_threshold=int(queues["newBatchThreshold"]) if "newBatchThreshold" in queues else None,
        )
