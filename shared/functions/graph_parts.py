"""Queue trigger: create the tasks of one part of a new task graph (see services/scheduler/graph_parts)."""

import json

import azure.functions as func

from shared.services.wiring import get_services

bp = func.Blueprint()


@bp.queue_trigger(arg_name="message", queue_name="%QUEUE_GRAPH_QUEUE%", connection="AzureWebJobsStorage")
def graph_part_creator(message: func.QueueMessage) -> None:
    part = json.loads(message.get_body())
    get_services().graph_parts.create_part(part["taskGraphId"], str(part["part"]))
