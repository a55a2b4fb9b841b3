"""The task every benchmark creates: the test suite's valid definition, in one group."""

from __future__ import annotations

from tests.conftest import make_task


def task_definition(task_queue_id: str, task_group_id: str, **overrides) -> dict:
    """One definition for every task of a run, like the tasks a decision task creates: one
    group and one deadline, so the group's expiry is extended once, not once per task.
    `overrides` replace fields (a later deadline for a long run, say)."""
    return make_task(task_queue_id, taskGroupId=task_group_id,
                     metadata={"name": "bench task", "description": "made by the benchmarks",
                               "owner": "bench@example.com", "source": "https://example.com/bench"},
                     **overrides)
