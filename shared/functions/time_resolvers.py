"""Timer triggers: resolve claims that ran out and tasks past their deadline.

Schedules are app settings (NCRONTAB), so local runs and tests can sweep every second.
"""

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_CLAIM_RESOLVER_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def claim_resolver(timer: func.TimerRequest) -> None:
    get_services().claim_expiry.sweep()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_DEADLINE_RESOLVER_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def deadline_resolver(timer: func.TimerRequest) -> None:
    get_services().deadlines.sweep()
