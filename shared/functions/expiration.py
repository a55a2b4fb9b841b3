"""Timer trigger: delete tasks, task groups, workers, task queues and artifacts (with their
objects' blobs) whose `expires` has passed.

The schedule is an app setting (NCRONTAB); hourly is plenty in production, since each
sweep reads only what came due.
"""

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_EXPIRATION_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def expiration_sweep(timer: func.TimerRequest) -> None:
    for sweep in get_services().sweeps:
        sweep.sweep()
