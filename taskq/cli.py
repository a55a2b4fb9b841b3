"""`taskq`: the command line (`python -m taskq`, or `taskq` once installed)."""

from __future__ import annotations

import argparse
import sys

from taskq import commands, pools
from taskq.connection import queue
from taskq.failures import debugging, describe
from taskq.ids import slug_argument
from taskq.output import error_line

EPILOG = """The Queue is found as the Taskcluster client finds it: TASKCLUSTER_ROOT_URL,
TASKCLUSTER_CLIENT_ID, TASKCLUSTER_ACCESS_TOKEN (default: the local host of `make run`).
`listen` reads events from EVENTS_AMQP_URL, or from Azure Service Bus with
EVENTS_SERVICE_BUS_NAMESPACE. Exit status: 0 on success; 1 when the server refused, or what
was watched did not complete; 2 for a wrong command line. An error is one line on stderr."""
GRAPH_FORMAT = """A task graph file (YAML or JSON) maps labels to tasks:

  tasks:
    build: {task: {taskQueueId: proj/linux, payload: {command: [[make]]}}}
    test:  {requires: [build], reruns: 2, task: {payload: {command: [[make, test]]}}}

`requires` lists the labels that must complete first, `reruns` how often a failure is
retried, `task` a task definition as `taskq create` takes it; `{"$subs": "taskId:<label>"}`
anywhere in a task stands for that label's taskId. See docs/task-graphs.md."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        """A wrong command line in one line, as every other error (argparse adds the usage)."""
        self.exit(2, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="taskq", description="Use a Taskcluster-compatible Queue.", epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler, help_text: str, epilog: str | None = None) -> argparse.ArgumentParser:
        each = sub.add_parser(name, help=help_text, description=help_text, epilog=epilog,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
        each.add_argument("--json", action="store_true", help="print JSON for scripts")
        each.set_defaults(handler=handler)
        return each

    each = command("create", commands.create, "create a task from a YAML or JSON file ('-' reads stdin)")
    each.add_argument("file")
    each.add_argument("--queue", help="taskQueueId, when the file names none")
    each.add_argument("--task-id", type=task_id, help="taskId to use (default: the file's, or a new one)")
    each.add_argument("--group", type=slug_argument("taskGroupId"),
                      help="taskGroupId to put it in (default: the file's, or a group of its own)")
    each.add_argument("--watch", action="store_true", help="then wait until it resolves")
    for name, handler, text in (("status", commands.status, "show a task's state and runs"),
                                ("cancel", commands.cancel, "cancel a task"),
                                ("rerun", commands.rerun, "run a resolved task again")):
        command(name, handler, text).add_argument("task_id", metavar="TASK_ID", type=task_id)
    each = command("log", commands.log, "print a task's log, following it live until the run ends")
    each.add_argument("task_id", metavar="TASK_ID", type=task_id)
    each.add_argument("--run", type=int, help="run id (default: the latest)")
    each = command("download", commands.download, "download a run's artifacts (all, or those named)")
    each.add_argument("task_id", metavar="TASK_ID", type=task_id)
    each.add_argument("names", nargs="*", metavar="NAME")
    each.add_argument("--run", type=int, help="run id (default: the latest)")
    each.add_argument("--dest", default=".", help="folder to write into (default: here)")
    each = command("submit-graph", commands.submit_graph, "submit a task graph (labelled tasks and what each "
                   "requires) from a file to the scheduler", epilog=GRAPH_FORMAT)
    each.add_argument("file")
    each.add_argument("--queue", help="taskQueueId for tasks that name none")
    each.add_argument("--graph-id", type=slug_argument("taskGraphId"),
                      help="taskGraphId (= taskGroupId) to use (default: a new one)")
    each.add_argument("--watch", action="store_true", help="then watch it until it finishes or blocks")
    each.add_argument("--timeout", type=float, help="with --watch: give up after this many seconds")
    each = command("group", commands.group, "list a task group's tasks")
    each.add_argument("task_group_id", metavar="TASK_GROUP_ID", type=group_id)
    each = command("watch", commands.watch, "watch a task group (or graph) with a live progress bar until it ends")
    each.add_argument("task_group_id", metavar="TASK_GROUP_ID", type=group_id)
    each.add_argument("--timeout", type=float, help="give up after this many seconds")
    pools.add_commands(sub, command)
    each = command("listen", commands.listen, "print the Queue's events as they happen")
    each.add_argument("--task", type=task_id, help="only this task's (its task events)")
    each.add_argument("--group", type=group_id, help="only this task group's")
    each.add_argument("--worker-group", help="only the task events of runs of this workerGroup")
    each.add_argument("--worker-id", help="only the task events of runs of this workerId")
    each.add_argument("--exchange", action="append", help="e.g. task-completed (repeatable; default: all)")
    each.add_argument("--count", type=int, help="stop after this many events")
    each.add_argument("--amqp-url", help="the AMQP broker (default: EVENTS_AMQP_URL, or the local host's)")
    each.add_argument("--service-bus", metavar="NAMESPACE",
                      help="read from this Azure Service Bus namespace (<name>.servicebus.windows.net; default: "
                           "EVENTS_SERVICE_BUS_NAMESPACE), signed in as `az login` did")
    return parser


task_id, group_id = slug_argument("taskId"), slug_argument("taskGroupId")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.handler(args, queue())
    except KeyboardInterrupt:
        return 130
    except Exception as failure:   # noqa: BLE001 (every failure is one line: see failures.py)
        if debugging():
            raise
        print(error_line(*describe(failure)), file=sys.stderr)
    return 1


def main_exit() -> None:
    """The console script's entry point."""
    sys.exit(main())
