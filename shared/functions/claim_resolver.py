"""Timer trigger: claims past `takenUntil` are resolved (the claim resolver).

The schedule is an app setting (NCRONTAB), so local runs and tests can sweep every second.
"""

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_CLAIM_RESOLVER_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def claim_resolver(timer: func.TimerRequest) -> None:
    get_services().claim_resolver.sweep()
