"""A sharded table: every row of one owner in one physical table, owners spread over all."""

from shared.domain.ids import new_slugid
from shared.storage.patterns.buckets import IN_BUCKETS, bucket_range
from shared.storage.tables.requirement_table import RequirementTable
from shared.storage.patterns.table_shards import SHARDS, TableShards
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount


def test_an_owner_has_one_table_and_owners_spread_over_all():
    shards = TableShards(MemoryAccount(unique_prefix()), "Rows")
    owners = [new_slugid() for _ in range(1000)]
    assert all(shards.of(owner) is shards.of(owner) for owner in owners[:10])
    assert len({id(shards.of(owner)) for owner in owners}) == SHARDS
    rows = [(owner, n) for owner in owners[:50] for n in range(3)]
    split = shards.split(rows, lambda row: row[0])
    assert sorted(row for _, part in split for row in part) == sorted(rows)
    for table, part in split:
        assert all(shards.of(owner) is table for owner, _ in part)


def test_a_task_s_requirements_are_read_and_written_in_its_own_shard():
    account = MemoryAccount(unique_prefix())
    requirements = RequirementTable(account)
    tasks = [new_slugid() for _ in range(40)]
    requirements.add([(task_id, required) for task_id in tasks for required in "ab"])
    requirements.satisfy(tasks[0], "a")
    assert requirements.remaining(tasks[0], 5) == ["b"] and requirements.remaining(tasks[1], 5) == ["a", "b"]
    requirements.forget(tasks[1])
    assert requirements.remaining(tasks[1], 5) == []
    shards = TableShards(account, "TaskRequirements")
    assert [row["RowKey"] for row in shards.of(tasks[2]).query_entities(
        IN_BUCKETS, parameters=bucket_range(tasks[2])) if row["RowKey"][0] != "~"] == ["a", "b"]
