"""Sequential lifecycles against the hosts of two source trees, block by block, on one Azurite:
whether a change made the Queue faster, measured against the code before it.

    python -m bench.trees BEFORE_TREE AFTER_TREE [--blocks 6] [--lifecycles 300] [--group-per-task]

Each tree (a checkout, e.g. `git worktree add ../before HEAD~1`) serves its own host
(`python -m devhost` run from the tree, with this project's virtualenv), on tables of its own in one Azurite and one RabbitMQ. After a warm-up block each,
the blocks alternate (A B, B A, A B, ...) so that both meet the machine's changing speed
alike: this machine's speed moved by a tenth within minutes, more than most single changes
are worth, so one run of each, an hour apart, tells nothing. Prints each block's rate, each
tree's median and mean, and after/before; and each call's median time on either side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from devhost.azurite import Azurite
from tests.conftest import Server, start_server

from bench.local_host import SETTINGS, warm_up
from bench.report import progress
from bench.sequential import CALLS, _lifecycles, add_block_options


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.trees", description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path, help="the source tree of the code before")
    parser.add_argument("after", type=Path, help="the source tree of the code after")
    parser.add_argument("--blocks", type=int, default=6, help="measured blocks per tree (default 6)")
    add_block_options(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    trees = [args.before.resolve(), args.after.resolve()]
    os.environ.pop("PYTHONPATH", None)   # each host imports its own tree's modules
    with Azurite() as azurite:
        servers = [_start(azurite, tree) for tree in trees]
        try:
            clients = []
            for tree, server in zip(trees, servers):
                warm_up(server)
                clients.append(server.client())
                _lifecycles(clients[-1], args.lifecycles, f"warm-up (not measured), {tree.name}",
                            group_per_task=args.group_per_task)
            rates: list[list[float]] = [[], []]
            samples: list[dict[str, list[float]]] = [{call: [] for call in CALLS}, {call: [] for call in CALLS}]
            for block in range(args.blocks):
                for which in ((0, 1) if block % 2 == 0 else (1, 0)):
                    done = _lifecycles(clients[which], args.lifecycles, f"block {block + 1}/{args.blocks}, "
                                                                        f"{trees[which].name}",
                                       group_per_task=args.group_per_task)
                    rates[which].append(done["lifecycles"] / done["seconds"])
                    for call in CALLS:
                        samples[which][call] += done["samples"][call]
        finally:
            for server in servers:
                server.stop()
    for tree, figures in zip(trees, rates):
        print(f"{tree}: median {statistics.median(figures):.2f} /s, mean {statistics.mean(figures):.2f} /s "
              f"(blocks {', '.join(f'{rate:.2f}' for rate in figures)})")
    print(f"after / before: {statistics.mean(rates[1]) / statistics.mean(rates[0]):.3f} (means), "
          f"{statistics.median(rates[1]) / statistics.median(rates[0]):.3f} (medians)")
    for call in CALLS:
        before, after = (statistics.median(side[call]) * 1000 for side in samples)
        print(f"{call}: median {before:.2f} ms before, {after:.2f} ms after")
    return 0


def _start(azurite: Azurite, tree: Path) -> Server:
    """The host of `tree`, with the settings `bench.local_host` gives this project's."""
    progress(f"starting the host of {tree}")
    return start_server(azurite, Path(tempfile.mkdtemp(prefix="bench-trees-")), tree, **SETTINGS)


if __name__ == "__main__":
    sys.exit(main())
