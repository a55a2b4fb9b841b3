"""`taskq pool ...`: worker pools of the worker manager, through the official
`taskcluster.WorkerManager` client on the same root URL and credentials as the Queue.

    taskq pool create proj/linux --max 4 [--min 0] [--idle-timeout 60] [--provider local]
    taskq pool update proj/linux --max 8
    taskq pool list
    taskq pool show proj/linux        # the pool and its workers
    taskq pool errors proj/linux
    taskq pool delete proj/linux
"""

from __future__ import annotations

import argparse

import taskcluster

from taskq.connection import client_options
from taskq.output import PEOPLE, emit_json, emit_line
from taskq.pages import every_page

STATES = ("requested", "running", "stopping", "stopped")


def add_commands(sub, command) -> None:
    """`pool` and its subcommands, on the parser's subcommands `sub` (`command` makes one)."""
    pool = sub.add_parser("pool", help="manage worker pools (the worker manager starts their workers)",
                          description="Worker pools: a pool's id is the task queue its workers claim from.")
    actions = pool.add_subparsers(dest="pool_command", required=True, metavar="ACTION")

    def action(name: str, handler, help_text: str, with_id: bool = True) -> argparse.ArgumentParser:
        each = actions.add_parser(name, help=help_text, description=help_text)
        each.add_argument("--json", action="store_true", help="print JSON for scripts")
        each.set_defaults(handler=handler)
        if with_id:
            each.add_argument("worker_pool_id", metavar="POOL_ID", help="<provisionerId>/<workerType>")
        return each
    for name, handler in (("create", create), ("update", update)):
        _definition_options(action(name, handler, f"{name} a worker pool"), required=name == "create")
    action("list", list_pools, "list the worker pools", with_id=False)
    action("show", show, "show a pool and its workers")
    action("errors", errors, "list a pool's errors (newest first)")
    action("delete", delete, "delete a pool (its workers finish and go first)")


def _definition_options(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("--max", type=int, required=required, dest="max_capacity",
                        help="maxCapacity: never more workers' capacity than this")
    parser.add_argument("--min", type=int, dest="min_capacity", help="minCapacity (default 0)")
    parser.add_argument("--idle-timeout", type=int, help="workerConfig.idleTimeoutSecs (default 60; 0: never)")
    parser.add_argument("--scaling-ratio", type=float, help="capacity added per pending task (default 1)")
    parser.add_argument("--capacity-per-instance", type=int, help="tasks one worker runs at once (default 1)")
    parser.add_argument("--provider", help="providerId (default: local on create)")
    parser.add_argument("--description", help="what the pool is for")
    parser.add_argument("--owner", help="an e-mail address (default: nobody@example.com on create)")


def _manager() -> taskcluster.WorkerManager:
    return taskcluster.WorkerManager(client_options())


def create(args, queue) -> int:
    body = {"providerId": args.provider or "local", "description": args.description or "",
            "owner": args.owner or "nobody@example.com", "emailOnError": False, "config": _config({}, args)}
    return _print_pool(_manager().createWorkerPool(args.worker_pool_id, body), args.json, "created")


def update(args, queue) -> int:
    manager = _manager()
    pool = manager.workerPool(args.worker_pool_id)
    body = {key: pool[key] for key in ("providerId", "description", "owner", "emailOnError", "config")}
    body.update({key: value for key, value in (("providerId", args.provider), ("description", args.description),
                                               ("owner", args.owner)) if value is not None})
    body["config"] = _config(body["config"], args)
    return _print_pool(manager.updateWorkerPool(args.worker_pool_id, body), args.json, "updated")


def _config(config: dict, args) -> dict:
    config = dict(config)
    for key, value in (("maxCapacity", args.max_capacity), ("minCapacity", args.min_capacity),
                       ("scalingRatio", args.scaling_ratio), ("capacityPerInstance", args.capacity_per_instance)):
        if value is not None:
            config[key] = value
    if args.idle_timeout is not None:
        config["workerConfig"] = {**config.get("workerConfig", {}), "idleTimeoutSecs": args.idle_timeout}
    return config


def list_pools(args, queue) -> int:
    pools = every_page(lambda query: _manager().listWorkerPools(query=query), "workerPools")
    if args.json:
        emit_json(pools)
    for pool in pools if not args.json else ():
        emit_line(f"{pool['workerPoolId']}  {pool['providerId']}  {_counts(pool)}")
    return 0


def show(args, queue) -> int:
    manager = _manager()
    pool = manager.workerPool(args.worker_pool_id)
    workers = every_page(lambda query: manager.listWorkersForWorkerPool(args.worker_pool_id, query=query), "workers")
    if args.json:
        emit_json({"workerPool": pool, "workers": workers})
        return 0
    _print_pool(pool, False, None)
    for worker in workers:
        emit_line(f"  {worker['workerGroup']}/{worker['workerId']}  {worker['state']}  since {worker['lastModified']}")
    return 0


def errors(args, queue) -> int:
    found = every_page(lambda query: _manager().listWorkerPoolErrors(args.worker_pool_id, query=query), "workerPoolErrors")
    if args.json:
        emit_json(found)
    for error in found if not args.json else ():
        emit_line(f"{error['reported']}  {error['kind']}  {error['description'].splitlines()[0] if error['description'] else ''}")
    return 0


def delete(args, queue) -> int:
    return _print_pool(_manager().deleteWorkerPool(args.worker_pool_id), args.json, "deleted")



def _counts(pool: dict) -> str:
    return ", ".join(f"{pool[state + 'Count']} {state}" for state in STATES if pool[state + "Count"]) or "no workers"


def _print_pool(pool: dict, as_json: bool, done: str | None) -> int:
    if as_json:
        emit_json(pool)
        return 0
    config = pool["config"]
    emit_line(f"{pool['workerPoolId']}  {pool['providerId']}  max {config.get('maxCapacity', '-')}  "
              f"idle timeout {config.get('workerConfig', {}).get('idleTimeoutSecs', 60)} s  {_counts(pool)}")
    if done == "deleted":
        PEOPLE.print(f"deleted worker pool {pool['workerPoolId']}: its workers finish and go, then the pool goes",
                     markup=False)
    elif done:
        PEOPLE.print(f"{done} worker pool {pool['workerPoolId']}: tasks for it start workers "
                     f"(taskq pool show {pool['workerPoolId']})", markup=False)
    return 0
