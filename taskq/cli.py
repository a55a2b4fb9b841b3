"""`taskq`: the command line (`python -m taskq`, or `taskq` once installed)."""

from __future__ import annotations

import argparse
import sys

from taskq import commands, hooks, index, pools, secrets
from taskq.connection import queue
from taskq.failures import debugging, describe
from taskq.ids import slug_argument
from taskq.output import error_line

EPILOG = """The Queue is found as the Taskcluster client finds it: TASKCLUSTER_ROOT_URL,
TASKCLUSTER_CLIENT_ID, TASKCLUSTER_ACCESS_TOKEN (default: the local host of `make run`); the
index and secrets services on the same root URL. `listen` reads events from EVENTS_AMQP_URL, or from Azure Service Bus with
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
    each = command("group", commands.group, "list a task group's tasks, and what the watchdog found about it")
    each.add_argument("task_group_id", metavar="TASK_GROUP_ID", type=group_id)
    each = command("on-stall", commands.on_stall, "what the watchdog does with a task group once it is stalled: "
                                                  "report it (the default), or cancel its unresolved tasks too")
    each.add_argument("task_group_id", metavar="TASK_GROUP_ID", type=group_id)
    each.add_argument("action", choices=("report", "cancel"))
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
    hooks.add_commands(sub)
    _index_and_secrets(sub)
    return parser


def _group(sub, name: str, help_text: str):
    """A command with commands of its own (`taskq index find ...`): their maker, as `command`."""
    group = sub.add_parser(name, help=help_text, description=help_text).add_subparsers(
        dest=f"{name}_command", required=True, metavar="COMMAND")

    def command(each_name: str, handler, each_help: str) -> argparse.ArgumentParser:
        each = group.add_parser(each_name, help=each_help, description=each_help)
        each.add_argument("--json", action="store_true", help="print JSON for scripts")
        each.set_defaults(handler=handler)
        return each
    return command


def _index_and_secrets(sub) -> None:
    command = _group(sub, "index", "find tasks by name in the index")
    command("find", index.find, "the task indexed at a path").add_argument("path", metavar="INDEX_PATH")
    command("list", index.list_namespace, "the namespaces and tasks directly under a namespace").add_argument(
        "namespace", nargs="?", default="", metavar="NAMESPACE", help="default: the root")
    command = _group(sub, "secrets", "read and write secrets")
    command("get", secrets.get, "print a secret's value").add_argument("name", metavar="NAME")
    each = command("set", secrets.set_value, "set a secret (a JSON object) until it expires")
    each.add_argument("name", metavar="NAME")
    each.add_argument("--expires", required=True, help="a date-time, or from now: '30 days', '1 year'")
    value = each.add_mutually_exclusive_group(required=True)
    value.add_argument("--value", help="the JSON object (visible to other users of this machine: prefer --file)")
    value.add_argument("--file", help="a file holding the JSON object ('-': stdin)")
    command("list", secrets.list_names, "the names of the secrets")


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
