"""A group's or graph's rows, one per task, and a task's dependents, spread over bucket
partitions: no partition grows with the group, and the rows still read back in task id
order, across buckets and pages."""

from collections import Counter
from dataclasses import replace

import pytest

from shared.domain.ids import new_slugid
from shared.storage.client.account import StorageAccount
from shared.storage.patterns import long_text
from shared.storage.patterns.buckets import SEPARATOR, WIDE, bucket, first_keys, first_rows_by_key, forget_buckets
from shared.storage.tables.dependency_table import Dependent, DependencyTable
from shared.storage.errors import Closed
from shared.storage.tables.requirement_table import RequirementTable
from shared.storage.patterns.table_shards import SHARDS
from shared.storage.tables.task_graph_table import LabelRecord, TaskGraphTable
from shared.storage.tables.task_group_table import FirstResolution, TaskGroupRecord, TaskGroupTable, group_partition
from tests.conftest import as_members, unique_prefix
from tests.memory_storage import MemoryAccount


@pytest.fixture(params=["azurite", "memory"])
def account(request):
    if request.param == "memory":
        return MemoryAccount(unique_prefix())
    return StorageAccount(request.getfixturevalue("azurite").connection_string, unique_prefix())


RESOLVED = FirstResolution("2030-01-01T00:00:00.000Z", "2029-01-01T00:00:00.000Z", 1)


def rows_by_partition(table) -> Counter:
    return Counter(row["PartitionKey"] for row in table.query_entities("PartitionKey ne ''", select=["PartitionKey"]))


def test_a_large_group_keeps_every_partition_small(account):
    groups, group_id = TaskGroupTable(account), new_slugid()
    members = sorted(new_slugid() for _ in range(1000))
    groups.add_members(group_id, as_members(members))
    sizes = rows_by_partition(account.table("TaskGroups"))
    assert sum(sizes.values()) == 3000 + len(sizes)        # and a count of unresolved rows in each
    assert len(sizes) >= 24 and max(sizes.values()) <= 200   # 32 buckets of about 94 rows each
    assert all(partition.startswith(group_id + SEPARATOR) for partition in sizes)


def test_members_read_back_in_task_id_order_from_any_point(account):
    groups, group_id = TaskGroupTable(account), new_slugid()
    members = sorted(new_slugid() for _ in range(300))
    groups.add_members(group_id, as_members(members))
    assert groups.members(group_id, "", 1000) == members
    for start in (0, 17, 150, 298):   # the rest of the bucket of `after`, then the buckets after it
        assert groups.members(group_id, members[start], 40) == members[start + 1:start + 41]
    assert groups.members(group_id, members[-1], 10) == []


def group_rows(account) -> Counter:
    """`rows_by_partition` of TaskGroups and of the tables a wide group's buckets are spread over."""
    return sum((rows_by_partition(account.table(f"TaskGroupsW{shard:02d}")) for shard in range(SHARDS)),
               rows_by_partition(account.table("TaskGroups")))


def wide_group(groups: TaskGroupTable) -> str:
    """A group made with wide buckets, as a large graph's is."""
    group_id = new_slugid()
    groups.insert(TaskGroupRecord(group_id, "-", "2031-01-01T00:00:00.000Z", bucket_width=WIDE))
    return group_id


def test_a_wide_group_keeps_its_rows_in_buckets_of_two_characters(account):
    groups = TaskGroupTable(account)
    group_id = wide_group(groups)
    members = sorted(new_slugid() for _ in range(600))
    groups.add_members(group_id, as_members(members))
    # its row (in the partition of its namesake's bucket of width 1); its buckets elsewhere
    assert set(rows_by_partition(account.table("TaskGroups"))) == {group_partition(group_id)}
    spread = [rows_by_partition(account.table(f"TaskGroupsW{shard:02d}")) for shard in range(SHARDS)]
    assert sum(1 for table in spread if table) >= 24   # each bucket in one of 32 tables
    buckets = group_rows(account)
    del buckets[group_partition(group_id)]
    assert {len(partition) - len(group_id) - 1 for partition in buckets} == {2}
    assert sum(buckets.values()) == 1800 + len(buckets) and max(buckets.values()) <= 20   # vs ~60 a bucket of 1
    assert groups.members(group_id, "", 1000) == members
    for start in (0, 17, 300, 598):
        assert groups.members(group_id, members[start], 40) == members[start + 1:start + 41]


def test_another_process_reads_a_groups_width_from_its_row(account):
    group_id = wide_group(TaskGroupTable(account))
    writer, resolver = TaskGroupTable(account), TaskGroupTable(account)   # neither made the group
    members = [new_slugid() for _ in range(50)]
    writer.add_members(group_id, as_members(members))
    assert all(resolver.member_resolved(group_id, task_id, RESOLVED) for task_id in members[:-1])
    assert resolver.unresolved(group_id, 5) == [members[-1]]
    assert not resolver.member_resolved(group_id, members[-1], RESOLVED)   # the last one: none left
    assert not resolver.any_unresolved(group_id)
    writer.forget(group_id)
    assert not group_rows(account)


def test_a_sealed_wide_group_refuses_members_in_any_of_its_buckets():
    groups = TaskGroupTable(MemoryAccount(unique_prefix()))   # (4,096 buckets to mark: the fake alone)
    group_id = wide_group(groups)
    groups.add_members(group_id, as_members([new_slugid()]))
    groups.seal_members(group_id, "2029-01-01T00:00:00.000Z")
    for task_id in (new_slugid(), "_-" + new_slugid()[2:]):   # any bucket, one of the rarest characters
        with pytest.raises(Closed):
            groups.add_members(group_id, as_members([task_id]))
    assert groups.add_members(group_id, as_members([first := new_slugid()]), refuse_sealed=False) == set()
    assert first in groups.members(group_id, "", 10)


def test_a_wide_graph_finds_its_labels_and_closes_them_in_its_groups_buckets(account):
    groups = TaskGroupTable(account)
    graph_id = wide_group(groups)
    graphs = TaskGraphTable(account, groups)
    records = [LabelRecord(graph_id, f"label-{i:03d}", new_slugid(), (), 1, 1) for i in range(60)]
    graphs.add_labels(records)
    assert {row["PartitionKey"] for shard in range(SHARDS)
            for row in account.table(f"TaskGraphLabelsW{shard:02d}").query_entities("PartitionKey ne ''")} \
        == {bucket(graph_id, record.task_id, WIDE) for record in records}
    assert not rows_by_partition(account.table("TaskGraphs"))
    assert graphs.labels(graph_id) == records
    some = records[7]
    assert graphs.label_of(graph_id, some.task_id) == some.label
    assert graphs.load_label(graph_id, some.label, some.task_id) == some
    for record in records[:-1]:
        groups.open_labels.remove(graph_id, record.task_id, WIDE)
    assert graphs.any_open(graph_id)
    groups.open_labels.remove(graph_id, records[-1].task_id, WIDE)
    assert not graphs.any_open(graph_id)


def test_labels_written_in_task_graphs_before_they_moved_are_read_and_saved_there(account):
    groups, graph_id = TaskGroupTable(account), new_slugid()
    graphs = TaskGraphTable(account, groups)
    records = [LabelRecord(graph_id, f"label-{i}", new_slugid(), (), 2, 2) for i in range(3)]
    old, new = account.table("TaskGraphs"), account.table("TaskGraphLabels")
    for record in records:   # as a graph of an earlier version left them
        partition = bucket(graph_id, record.task_id)
        old.upsert_entity({"PartitionKey": partition, "RowKey": f"label.{record.label}", "taskId": record.task_id,
                           **long_text.to_columns("requires", "[]"), "reruns": 2, "rerunsLeft": 2, "rerunOfRun": -1})
        old.upsert_entity({"PartitionKey": partition, "RowKey": f"task.{record.task_id}", "label": record.label})
    some = records[1]
    assert graphs.labels(graph_id) == records
    assert graphs.label_of(graph_id, some.task_id) == some.label
    for found in (graphs.load_label(graph_id, some.label, some.task_id), graphs.load_label(graph_id, some.label)):
        assert found == some and found.legacy
    graphs.save_label(replace(graphs.load_label(graph_id, some.label), reruns_left=1))
    assert graphs.load_label(graph_id, some.label, some.task_id).reruns_left == 1
    assert not rows_by_partition(new)
    graphs.forget(graph_id)
    assert not rows_by_partition(old)


def test_a_group_is_resolved_once_its_last_bucket_is_empty(account):
    groups, group_id = TaskGroupTable(account), new_slugid()
    members = [new_slugid() for _ in range(100)]
    groups.add_members(group_id, as_members(members))
    for task_id in members[:-1]:
        groups.member_resolved(group_id, task_id, RESOLVED)
    assert groups.unresolved(group_id, 5) == [members[-1]]
    groups.member_resolved(group_id, members[-1], RESOLVED)
    assert groups.unresolved(group_id) == []


def test_forgetting_a_group_or_a_graph_leaves_no_row_of_theirs(account):
    groups, owner, other = TaskGroupTable(account), new_slugid(), new_slugid()
    graphs = TaskGraphTable(account, groups)
    groups.add_members(owner, as_members([new_slugid() for _ in range(150)]))
    groups.add_members(other, as_members([new_slugid()]))
    graphs.add_labels([LabelRecord(owner, f"label-{i}", new_slugid(), (), 0, 0) for i in range(150)])
    groups.forget(owner)
    graphs.forget(owner)
    only_other = {bucket(other, groups.members(other, "", 1)[0])}
    assert set(rows_by_partition(account.table("TaskGroups"))) == only_other
    assert not rows_by_partition(account.table("TaskGraphLabels"))
    assert not rows_by_partition(account.table("TaskGraphs"))   # the open labels were in the group's buckets


def test_a_fan_out_keeps_every_partition_small_and_reads_its_dependents_in_order(account):
    edges, root, other = DependencyTable(account), new_slugid(), new_slugid()
    dependents = sorted(new_slugid() for _ in range(1000))
    edges.add([(root, Dependent(task_id, "all-completed", 1), "2030-01-01T00:00:00.000Z") for task_id in dependents]
              + [(other, Dependent(dependents[0], "all-resolved", 2), "2030-01-01T00:00:00.000Z")])
    sizes = rows_by_partition(edges._shards.of(root))   # noqa: SLF001 (the root's rows are in one shard)
    assert sum(sizes[p] for p in sizes if p.startswith(root)) == 1000 and max(sizes.values()) <= 80   # 32 buckets
    pages, after = [], ""
    while page := edges.dependents(root, after, 300):
        pages.append(page)
        after = page[-1].task_id
    assert [len(page) for page in pages] == [300, 300, 300, 100]
    assert [dependent.task_id for page in pages for dependent in page] == dependents
    assert edges.dependents(other, "", 5) == [Dependent(dependents[0], "all-resolved", 2)]
    edges.forget(dependents[0], [root, other])
    assert edges.dependents(other, "", 5) == [] and edges.dependents(root, "", 1)[0].task_id == dependents[1]


def test_a_fan_in_keeps_every_partition_small_and_is_ready_once_its_last_requirement_goes(account):
    requirements, fan_in, other = RequirementTable(account), new_slugid(), new_slugid()
    required = sorted(new_slugid() for _ in range(1000))
    requirements.add([(fan_in, task_id) for task_id in required] + [(other, required[0])])
    sizes = rows_by_partition(requirements._shards.of(fan_in))   # noqa: SLF001 (the fan-in's rows are in one shard)
    fan_in_sizes = [sizes[p] for p in sizes if p.startswith(fan_in)]
    # each requirement and its marker, and a count per bucket
    assert sum(fan_in_sizes) == 2000 + len(fan_in_sizes) and max(sizes.values()) <= 160
    assert requirements.remaining(fan_in, 5) == required[:5]
    assert all(requirements.satisfy(fan_in, task_id) for task_id in required[:-1])
    assert requirements.remaining(fan_in, 5) == [required[-1]]
    assert not requirements.satisfy(fan_in, required[-1])
    assert requirements.remaining(fan_in) == [] and requirements.remaining(other) == [required[0]]
    requirements.forget(other)
    assert requirements.remaining(other) == []


def test_a_graph_finds_its_labels_by_task_and_by_name(account):
    groups, graph_id = TaskGroupTable(account), new_slugid()
    graphs = TaskGraphTable(account, groups)
    records = [LabelRecord(graph_id, f"label-{i:03d}", new_slugid(), (), 1, 1) for i in range(120)]
    graphs.add_labels(records)
    assert graphs.labels(graph_id) == records
    some = records[42]
    assert graphs.label_of(graph_id, some.task_id) == some.label
    assert graphs.load_label(graph_id, some.label, some.task_id) == some
    assert graphs.load_label(graph_id, some.label) == some   # a blocked graph's status knows no taskId
    for record in records[:-1]:
        groups.open_labels.remove(graph_id, record.task_id)   # as a completion closes it, with its membership
    assert graphs.any_open(graph_id)
    groups.open_labels.remove(graph_id, records[-1].task_id)
    assert not graphs.any_open(graph_id)


def test_first_keys_reads_across_storage_pages(account):
    table, owner = account.table("Buckets"), new_slugid()
    task_ids = sorted(new_slugid() for _ in range(1200))
    for partition in {bucket(owner, task_id) for task_id in task_ids}:
        chunk = [task_id for task_id in task_ids if bucket(owner, task_id) == partition]
        for start in range(0, len(chunk), 100):
            table.submit_transaction([("upsert", {"PartitionKey": partition, "RowKey": "x." + task_id})
                                      for task_id in chunk[start:start + 100]])
    assert first_keys(table, owner, "x.", "", 1100) == task_ids[:1100]
    assert first_keys(table, owner, "x.", task_ids[40], 1100) == task_ids[41:1141]
    assert forget_buckets(table, owner) == 1200
    assert first_keys(table, owner, "x.", "", 10) == []


def test_rows_spread_by_something_else_are_read_in_key_order_across_partitions(account):
    """Rows put in partitions by a hash, not by their keys: the first rows of all, in key order."""
    table = account.table("Spread")
    keys = [f"k{number:03d}" for number in range(60)]
    for index, key in enumerate(keys):
        table.upsert_entity({"PartitionKey": f"owner~{index * 7 % 5}", "RowKey": key, "x": index})
    table.upsert_entity({"PartitionKey": "owner~9", "RowKey": "k000", "x": -1})   # a partition not asked
    partitions = [f"owner~{chosen}" for chosen in range(5)]
    rows = first_rows_by_key(table, partitions, "RowKey gt @after", {"after": "k010"}, 12, ["x"])
    assert [row["RowKey"] for row in rows] == keys[11:23] and [row["x"] for row in rows] == list(range(11, 23))
    assert first_rows_by_key(table, partitions, "RowKey gt @after", {"after": "k059"}, 12) == []
