"""An event bus in memory, for the service tests: it keeps what was published, in order,
and can be told to refuse (a broker that is down). The real adapters are tested against a
real RabbitMQ (tests/events) and the Service Bus SDK."""

from __future__ import annotations

import threading
from typing import Sequence

from shared.domain.task_events import Event
from shared.events.bus import BusUnavailable


class MemoryBus:
    def __init__(self) -> None:
        self.published: list[Event] = []
        self.down = False
        self._lock = threading.Lock()

    def publish(self, events: Sequence[Event]) -> None:
        with self._lock:
            if self.down:
                raise BusUnavailable("the test took the bus down")
            self.published.extend(events)

    def close(self) -> None:
        pass

    def of(self, task_id: str) -> list[str]:
        """The exchanges of what was published about `task_id`, in order (repeats dropped,
        as a consumer does by message id)."""
        seen, out = set(), []
        for event in self.published:
            if event.body.get("status", {}).get("taskId") == task_id and event.id not in seen:
                seen.add(event.id)
                out.append(event.exchange)
        return out
