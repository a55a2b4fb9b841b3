"""Timer trigger: finish what crashed processes left undone (seed 003's watchdog)."""

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.timer_trigger(arg_name="timer", schedule="%QUEUE_REPAIR_SCHEDULE%", run_on_startup=False, use_monitor=False)
def repair_sweep(timer: func.TimerRequest) -> None:
    get_services().repairs.sweep()
