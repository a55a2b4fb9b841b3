"""The task every benchmark creates: the test suite's valid definition, in one group."""

from __future__ import annotations

from tests.conftest import make_task


def task_definition(task_queue_id: str, task_group_id: str) -> dict:
    """One definition for every task of a run, like the tasks a decision task creates: one
    group and one deadline, so the group's expiry is extended once, not once per task."""
    return make_task(task_queue_id, taskGroupId=task_group_id,
                     metadata={"name": "bench task", "description": "made by bench.lifecycle",
                               "owner": "bench@example.com", "source": "https://example.com/bench"})
