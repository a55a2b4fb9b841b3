"""Timer triggers: every time-driven sweep of the queue, and its watchdog. Each schedule is an
app setting (NCRONTAB), so local runs and tests can sweep every second, and Azure every few
seconds or hourly as each needs (each sweep reads only what came due).
"""

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_CLAIM_RESOLVER_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def claim_resolver(timer: func.TimerRequest) -> None:
    """Claims past `takenUntil`: their runs resolved and retried."""
    get_services().claim_resolver.sweep()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_DEADLINE_RESOLVER_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def deadline_resolver(timer: func.TimerRequest) -> None:
    """Tasks past their deadline: resolved exception/deadline-exceeded."""
    get_services().deadline_resolver.sweep()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_REPAIR_SCHEDULE%", run_on_startup=False, use_monitor=False)
def repair_sweep(timer: func.TimerRequest) -> None:
    """What crashed processes left undone: resolutions whose dependents were not processed,
    graph parts never created (the repair intents that come due)."""
    get_services().repairs.sweep()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_EXPIRATION_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def expiration_sweep(timer: func.TimerRequest) -> None:
    """Tasks, task groups, workers, task queues and artifacts (with their objects' blobs),
    secrets and clients whose `expires` has passed: deleted; audit history entries older
    than 30 days: purged."""
    for sweep in get_services().sweeps:
        sweep.sweep()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_WATCHDOG_SCHEDULE%", run_on_startup=False, use_monitor=False)
def watchdog(timer: func.TimerRequest) -> None:
    """Task groups whose tasks stopped moving (seed 003's invariant): those that came due for a
    look are examined, repaired or reported (see `sweeps/watchdog` and docs/watchdog.md)."""
    get_services().watchdog.sweep()
