"""Timer trigger: the hooks' scheduled fires that came due are made (see services/hooks/scheduler.py).

The schedule is an app setting (NCRONTAB): every few seconds, since a fire is made at the
first run after its time. Azure runs one instance of a timer function at a time; two runs
at once (another host, a restart) still make each fire once.
"""

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.timer_trigger(arg_name="timer", schedule="%HOOKS_SCHEDULER_SCHEDULE%", run_on_startup=False, use_monitor=False)
def hooks_scheduler(timer: func.TimerRequest) -> None:
    get_services().hook_scheduler.sweep()
