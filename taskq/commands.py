"""One function per `taskq` command: read the arguments, call the Queue, print the answer.

Each returns the process's exit status: 0 for success, 1 when what was watched did not end
well (a failed task, a blocked graph). Errors from the server propagate to `cli`, which
prints them as one line.
"""

from __future__ import annotations

import time
from pathlib import Path

import taskcluster

from taskq import downloads
from taskq import event_source
from taskq import events
from taskq import groups
from taskq import logs
from taskq.connection import scheduler
from taskq.output import PEOPLE, emit_json, emit_line, first_line
from taskq.progress import GroupProgress, describe
from taskq.states import RESOLVED
from taskq.task_files import load_graph, load_task


def _ui_link(queue, task_group_id: str) -> str:
    return f"{queue.options['rootUrl'].rstrip('/')}/api/ui/task-group/{task_group_id}"


def _status_line(status: dict) -> str:
    return f"{status['taskId']} {status['state']}"


def create(args, queue) -> int:
    file_task_id, definition = load_task(args.file, args.queue)
    if args.group:
        definition["taskGroupId"] = args.group
    task_id = args.task_id or file_task_id or taskcluster.slugId()
    status = queue.createTask(task_id, definition)["status"]
    if args.json and not args.watch:
        emit_json({"taskId": task_id, "status": status})
    elif not args.json:
        emit_line(task_id)
        PEOPLE.print(f"created {task_id} ({status['state']}) on {status['taskQueueId']}; "
                     f"watch it at {_ui_link(queue, status['taskGroupId'])}", markup=False)
    return watch_task(queue, task_id, args.json) if args.watch else 0


def watch_task(queue, task_id: str, as_json: bool, poll: float = 0.5) -> int:
    """Print each state the task passes through until it resolves."""
    last = None
    while True:
        status = queue.status(task_id)["status"]
        if status["state"] != last:
            last = status["state"]
            if as_json:
                emit_json({"taskId": task_id, "status": status})
            else:
                PEOPLE.print(f"{task_id} {last}", markup=False)
        if last in RESOLVED:
            return 0 if last == "completed" else 1
        time.sleep(poll)


def status(args, queue) -> int:
    answer = queue.status(args.task_id)["status"]
    if args.json:
        emit_json({"status": answer})
        return 0
    emit_line(_status_line(answer))
    for run in answer["runs"]:
        worker = f" on {run['workerGroup']}/{run['workerId']}" if run.get("workerId") else ""
        reason = run.get("reasonResolved") or run.get("reasonCreated", "")
        emit_line(f"  run {run['runId']}: {run['state']}{worker} ({reason})")
    return 0


def _status_command(call):
    def command(args, queue) -> int:
        answer = call(queue, args.task_id)["status"]
        emit_json({"status": answer}) if args.json else emit_line(_status_line(answer))
        return 0
    return command


cancel = _status_command(lambda queue, task_id: queue.cancelTask(task_id))
rerun = _status_command(lambda queue, task_id: queue.rerunTask(task_id))


def log(args, queue) -> int:
    run = logs.follow(queue, args.task_id, args.run)
    return 0 if run["state"] == "completed" else 1


def download(args, queue) -> int:
    names = args.names or [artifact["name"] for artifact in downloads.list_artifacts(queue, args.task_id, args.run)]
    folder = Path(args.dest)
    results = []
    for index, name in enumerate(names, 1):
        PEOPLE.print(f"[{index}/{len(names)}] {name}", markup=False)
        results.append(downloads.download(queue, args.task_id, args.run, name, folder, note=logs.note))
    for result in results:
        if args.json:
            continue
        emit_line(f"{result['name']}: not downloaded ({result['error']}): {first_line(result['message'])}"
                  if "error" in result else f"{result['path']} ({result['bytes']} bytes)")
    if args.json:
        emit_json({"taskId": args.task_id, "artifacts": results})
    return 1 if any("error" in result for result in results) else 0


def submit_graph(args, queue) -> int:
    graph = load_graph(args.file, args.queue)
    graph_id = args.graph_id or taskcluster.slugId()
    answer = scheduler().createTaskGraph(graph_id, graph)
    if args.json and not args.watch:
        emit_json({"taskGraphId": graph_id, **answer})
    elif not args.json:
        emit_line(graph_id)
        PEOPLE.print(f"submitted graph {graph_id} ({len(graph['tasks'])} tasks); "
                     f"watch it at {_ui_link(queue, graph_id)}", markup=False)
    if args.watch:
        args.task_group_id = graph_id
        return watch(args, queue)
    return 0


def group(args, queue) -> int:
    snapshot = groups.snapshot(queue, scheduler(), args.task_group_id)
    if args.json:
        emit_json({**snapshot.as_json(), "tasks": snapshot.tasks})
        return 0
    for entry in snapshot.tasks:
        emit_line(f"{entry['status']['taskId']} {entry['status']['state']:<11} {entry['task']['metadata']['name']}")
    graph = f" (graph {snapshot.graph_state})" if snapshot.graph_state else ""
    PEOPLE.print(f"{len(snapshot.tasks)} tasks{graph}: {describe(snapshot.counts, markup=False)}", markup=False)
    if snapshot.blockage():
        PEOPLE.print(snapshot.blockage(), markup=False)
    return 0


def watch(args, queue) -> int:
    last_json = None
    with GroupProgress(args.task_group_id) as bar:
        def on_change(snapshot):
            nonlocal last_json
            bar.show(snapshot.counts, snapshot.graph_state or "")
            if args.json and snapshot.as_json() != last_json:
                last_json = snapshot.as_json()
                emit_json(last_json)
        final = groups.watch(queue, scheduler(), args.task_group_id, on_change, timeout=args.timeout)
    ended_well = final.all_completed and final.graph_state in (None, "finished")
    if not args.json:
        blockage = f"; {final.blockage()}" if final.blockage() else ""
        PEOPLE.print(f"{args.task_group_id}: {'done' if ended_well else 'ended'}: "
                     f"{describe(final.counts, markup=False)}{blockage}", markup=False)
    return 0 if ended_well else 1


def listen(args, queue) -> int:
    exchanges = events.chosen_exchanges(args.exchange, {"--task": args.task, "--worker-group": args.worker_group,
                                                        "--worker-id": args.worker_id})
    chosen = events.bindings(exchanges, taskId=args.task,
                             taskGroupId=args.group, workerGroup=args.worker_group, workerId=args.worker_id)
    subscription, where = event_source.open(args, chosen)
    PEOPLE.print(f"listening on {len(chosen)} exchanges of {where} (Ctrl-C stops)", markup=False)
    try:
        for count, event in enumerate(subscription.events(), 1):
            emit_json(event.as_json()) if args.json else emit_line(_event_line(event))
            if args.count and count >= args.count:
                return 0
    finally:
        subscription.close()
    return 0


def _event_line(event: events.Event) -> str:
    status = event.payload.get("status", {})
    if status:
        run = f" run {event.payload['runId']}" if "runId" in event.payload else ""
        return f"{event.exchange:<20} {status.get('taskId')}{run} {status.get('state')}"
    return f"{event.exchange:<20} {event.payload.get('taskGroupId', event.routing_key)}"
