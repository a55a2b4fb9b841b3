"""The worker manager's provisioner: a queue trigger for the wake-ups of one pool (a task
became pending there, the pool changed, a worker was removed) and a timer over every pool,
the safety net for what the wake-ups missed. The timer's schedule is an app setting
(NCRONTAB), so local runs and tests can look often."""

import json

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.queue_trigger(arg_name="message", queue_name="%WORKER_MANAGER_QUEUE%", connection="AzureWebJobsStorage")
def provisioner_wake_up(message: func.QueueMessage) -> None:
    get_services().worker_manager.provisioner.handle_message(json.loads(message.get_body()))


@bp.timer_trigger(arg_name="timer", schedule="%WORKER_MANAGER_PROVISIONER_SCHEDULE%", run_on_startup=False,
                  use_monitor=False)
def provisioner_sweep(timer: func.TimerRequest) -> None:
    get_services().worker_manager.provisioner.provision_all()
