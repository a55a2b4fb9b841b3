"""`taskq`: the command line (`python -m taskq`, or `taskq` once installed)."""

from __future__ import annotations

import argparse
import sys

import requests
import taskcluster

from taskq import commands, pools
from taskq.connection import queue
from taskq.output import error_line
from taskq.task_files import TaskFileError

EPILOG = """The Queue is found as the Taskcluster client finds it: TASKCLUSTER_ROOT_URL,
TASKCLUSTER_CLIENT_ID, TASKCLUSTER_ACCESS_TOKEN (default: the local host of `make run`).
`listen` reads events from EVENTS_AMQP_URL. Exit status: 0 on success; 1 when the server
refused, or what was watched did not complete; 2 for a wrong command line."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="taskq", description="Use a Taskcluster-compatible Queue.",
                                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler, help_text: str) -> argparse.ArgumentParser:
        each = sub.add_parser(name, help=help_text, description=help_text)
        each.add_argument("--json", action="store_true", help="print JSON for scripts")
        each.set_defaults(handler=handler)
        return each

    each = command("create", commands.create, "create a task from a YAML or JSON file ('-' reads stdin)")
    each.add_argument("file")
    each.add_argument("--queue", help="taskQueueId, when the file names none")
    each.add_argument("--task-id", help="taskId to use (default: the file's, or a new one)")
    each.add_argument("--watch", action="store_true", help="then wait until it resolves")
    for name, handler, text in (("status", commands.status, "show a task's state and runs"),
                                ("cancel", commands.cancel, "cancel a task"),
                                ("rerun", commands.rerun, "run a resolved task again")):
        command(name, handler, text).add_argument("task_id", metavar="TASK_ID")
    each = command("log", commands.log, "print a task's log, following it live until the run ends")
    each.add_argument("task_id", metavar="TASK_ID")
    each.add_argument("--run", type=int, help="run id (default: the latest)")
    each = command("download", commands.download, "download a run's artifacts (all, or those named)")
    each.add_argument("task_id", metavar="TASK_ID")
    each.add_argument("names", nargs="*", metavar="NAME")
    each.add_argument("--run", type=int, help="run id (default: the latest)")
    each.add_argument("--dest", default=".", help="folder to write into (default: here)")
    each = command("submit-graph", commands.submit_graph, "submit a task graph (seed 000's format) from a file")
    each.add_argument("file")
    each.add_argument("--queue", help="taskQueueId for tasks that name none")
    each.add_argument("--graph-id", help="taskGraphId (= taskGroupId) to use (default: a new one)")
    each.add_argument("--watch", action="store_true", help="then watch it until it finishes or blocks")
    each.add_argument("--timeout", type=float, help="with --watch: give up after this many seconds")
    command("group", commands.group, "list a task group's tasks").add_argument("task_group_id", metavar="TASK_GROUP_ID")
    each = command("watch", commands.watch, "watch a task group (or graph) with a live progress bar until it ends")
    each.add_argument("task_group_id", metavar="TASK_GROUP_ID")
    each.add_argument("--timeout", type=float, help="give up after this many seconds")
    pools.add_commands(sub, command)
    each = command("listen", commands.listen, "print the Queue's events as they happen")
    each.add_argument("--task", help="only this task's")
    each.add_argument("--group", help="only this task group's")
    each.add_argument("--worker-group")
    each.add_argument("--worker-id")
    each.add_argument("--exchange", action="append", help="e.g. task-completed (repeatable; default: all)")
    each.add_argument("--count", type=int, help="stop after this many events")
    each.add_argument("--amqp-url", help="default: EVENTS_AMQP_URL")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.handler(args, queue())
    except taskcluster.exceptions.TaskclusterRestFailure as failure:
        body = failure.body if isinstance(failure.body, dict) else {}
        print(error_line(body.get("code", f"HTTP {failure.status_code}"), body.get("message", str(failure))),
              file=sys.stderr)
    except (taskcluster.exceptions.TaskclusterConnectionError, requests.ConnectionError) as failure:
        print(error_line("ConnectionError", f"cannot reach the Queue: {failure}"), file=sys.stderr)
    except (TaskFileError, ValueError, OSError) as failure:
        print(error_line("", str(failure)), file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1


def main_exit() -> None:
    """The console script's entry point."""
    sys.exit(main())
