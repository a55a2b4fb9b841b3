"""Independent steps of one request, run at once: their round trips cost one wait, not one each."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable


def at_once(pool: ThreadPoolExecutor, steps: list[Callable[[], object]], settle: bool = False) -> list:
    """Run `steps` concurrently, the last in this thread and the others on `pool` (a step
    handed to a thread costs a tenth of a millisecond or more); their results in order. An
    error is raised once all are done, or, with `settle`, returned in place of its step's
    result. A step must not submit to `pool` itself: it could wait for a thread that waits
    for it."""
    if not steps:
        return []
    futures = [pool.submit(step) for step in steps[:-1]]
    try:
        last = steps[-1]()
    except Exception as error:
        last = error
    outcomes = []
    for future in futures:
        try:
            outcomes.append(future.result())
        except Exception as error:
            outcomes.append(error)
    outcomes.append(last)
    errors = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    if errors and not settle:
        raise errors[0]
    return outcomes
