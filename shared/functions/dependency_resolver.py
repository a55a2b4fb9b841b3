"""Queue trigger: a task resolved; unblock its dependents and update its group."""

import json

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.queue_trigger(arg_name="message", queue_name="%QUEUE_RESOLVED_QUEUE%", connection="AzureWebJobsStorage")
def dependency_resolver(message: func.QueueMessage) -> None:
    get_services().dependency_resolver.handle_message(json.loads(message.get_body()))
