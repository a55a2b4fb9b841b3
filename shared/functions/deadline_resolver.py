"""Timer trigger: tasks past their deadline are resolved (the deadline resolver).

The schedule is an app setting (NCRONTAB), so local runs and tests can sweep every second.
"""

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_DEADLINE_RESOLVER_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def deadline_resolver(timer: func.TimerRequest) -> None:
    get_services().deadline_resolver.sweep()
