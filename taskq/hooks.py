"""`taskq hooks list|trigger|fires`: a deployment's hooks, firing one, and what its fires made.

Through the official `taskcluster.Hooks` client, on the Queue's root URL and credentials.
Errors from the server propagate to `cli`, which prints them as one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import taskcluster

from taskq.connection import client_options
from taskq.output import PEOPLE, emit_json, emit_line


def add_commands(sub) -> None:
    """The `hooks` command and its actions, each with `--json`."""
    hooks = sub.add_parser("hooks", help="list hooks, trigger one, show its last fires",
                           description="A deployment's hooks (Taskcluster's hooks service).")
    actions = hooks.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, handler, help_text: str):
        each = actions.add_parser(name, help=help_text, description=help_text)
        each.add_argument("--json", action="store_true", help="print JSON for scripts")
        each.set_defaults(handler=handler)
        return each

    action("list", list_hooks, "list the hooks (of one group, or of every group)").add_argument(
        "group", nargs="?", metavar="HOOK_GROUP_ID")
    each = action("trigger", trigger, "fire a hook now; prints the taskId of the task it made")
    each.add_argument("group", metavar="HOOK_GROUP_ID")
    each.add_argument("hook", metavar="HOOK_ID")
    each.add_argument("--payload", default="{}", help="the trigger's payload: JSON, or @FILE to read it from a file")
    each = action("fires", fires, "a hook's last fires, newest first")
    each.add_argument("group", metavar="HOOK_GROUP_ID")
    each.add_argument("hook", metavar="HOOK_ID")
    each.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")


def _client() -> taskcluster.Hooks:
    return taskcluster.Hooks(client_options())


def list_hooks(args, queue) -> int:
    client = _client()
    groups = [args.group] if args.group else client.listHookGroups()["groups"]
    hooks = [hook for group in groups for hook in client.listHooks(group)["hooks"]]
    if args.json:
        emit_json({"hooks": hooks})
        return 0
    for hook in hooks:
        schedule = ", ".join(hook["schedule"]) or "-"
        emit_line(f"{hook['hookGroupId']}/{hook['hookId']}  [{schedule}]  {hook['metadata']['name']}")
    PEOPLE.print(f"{len(hooks)} hooks in {len(groups)} groups", markup=False)
    return 0


def trigger(args, queue) -> int:
    payload = _payload(args.payload)
    answer = _client().triggerHook(args.group, args.hook, payload)
    if args.json:
        emit_json(answer)
    elif answer.get("taskId"):
        emit_line(answer["taskId"])
    else:
        PEOPLE.print("the hook's template made no task for this payload", markup=False)
    return 0


def fires(args, queue) -> int:
    client, found, token = _client(), [], None
    while len(found) < args.limit:
        query = {"limit": args.limit - len(found), **({"continuationToken": token} if token else {})}
        answer = client.listLastFires(args.group, args.hook, query=query)
        found += answer["lastFires"]
        token = answer.get("continuationToken")
        if not token:
            break
    if args.json:
        emit_json({"lastFires": found})
        return 0
    for fire in found:
        outcome = fire["taskState"] if fire["result"] == "success" else f"error: {_first_line(fire['error'])}"
        emit_line(f"{fire['taskCreateTime']}  {fire['firedBy']:<20} {fire['taskId']}  {outcome}")
    return 0


def _payload(text: str) -> dict:
    """`--payload`: JSON, or `@path` of a file holding it; ValueError saying what is wrong."""
    source = Path(text[1:]).read_text() if text.startswith("@") else text
    try:
        payload = json.loads(source)
    except ValueError as error:
        raise ValueError(f"--payload is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise ValueError("--payload must be a JSON object")
    return payload


def _first_line(error: str) -> str:
    """A recorded error in one line: a refusal's code and message's first line, else its text's."""
    try:
        parsed = json.loads(error)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("message"):
        return f"{parsed.get('code', '')}: {str(parsed['message']).strip().splitlines()[0]}".lstrip(": ")
    return next((line.strip() for line in error.splitlines() if line.strip()), "")
