"""Timer trigger run when the host starts: build the process's services at once, so its event
bus connects and declares every exchange (consumers may bind before the first event, as with
Taskcluster, whose services declare their exchanges on start) instead of on the first request.

Azure runs a `run_on_startup` timer on every instance when it starts (a scale-out too), which
is what is wanted here; the daily run after that only re-declares what exists (idempotent).
"""

import logging

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()
log = logging.getLogger("queue.startup")


@bp.timer_trigger(arg_name="timer", schedule="0 0 3 * * *", run_on_startup=True, use_monitor=False)
def startup(timer: func.TimerRequest) -> None:
    services = get_services()
    log.info("services ready; event bus: %s", type(services.bus).__name__ if services.bus else "none")
