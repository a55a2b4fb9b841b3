"""Hearing at once that a run this worker holds was cancelled: task-exception events for its
own workerGroup/workerId, on the Queue's AMQP exchanges (when EVENTS_AMQP_URL is set).

Polling the run's status (`run_watch`) notices it too, within a few seconds; this makes it
immediate and spares the status reads' latency. A broker that cannot be reached is logged
and otherwise ignored: the polling still works.
"""

from __future__ import annotations

import logging
import threading

from taskq.events import Subscription, bindings

log = logging.getLogger("taskq_worker.cancel_listener")


class CancelListener(threading.Thread):
    def __init__(self, url: str, worker_group: str, worker_id: str, on_cancel) -> None:
        super().__init__(name="cancel-listener", daemon=True)
        self.url, self.worker_group, self.worker_id, self.on_cancel = url, worker_group, worker_id, on_cancel
        self.stopping = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        try:
            subscription = Subscription(self.url, bindings(["task-exception"], workerGroup=self.worker_group,
                                                           workerId=self.worker_id))
        except Exception as error:  # any broker trouble: polling still notices cancellations
            log.warning("cannot listen for cancellations error=%s", type(error).__name__)
            return
        self.ready.set()
        log.info("listening for cancellations workerGroup=%s workerId=%s", self.worker_group, self.worker_id)
        try:
            for event in subscription.events(self.stopping):
                self.on_cancel(event.payload["status"]["taskId"], int(event.payload["runId"]))
        except Exception as error:
            log.warning("cancellation listener stopped error=%s", type(error).__name__)
        finally:
            subscription.close()
