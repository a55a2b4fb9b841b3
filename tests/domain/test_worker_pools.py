"""Worker pool ids, definitions (create, update, delete as Taskcluster does them) and configs."""

from datetime import timedelta

import pytest

from shared.domain.errors import InvalidInput
from shared.domain.timestamps import to_iso, utcnow
from shared.domain.worker_pools import (
    DEFAULT_IDLE_TIMEOUT_SECS, DEFAULT_REGISTRATION_TIMEOUT, DEFAULT_REREGISTRATION_TIMEOUT, NULL_PROVIDER,
    PoolConfig, WorkerPool, is_worker_pool_id, split_worker_pool_id,
)

NOW = utcnow()
BODY = {"providerId": "local", "description": "builds", "owner": "me@example.com", "emailOnError": False,
        "config": {"maxCapacity": 3, "workerConfig": {"idleTimeoutSecs": 5, "shell": "bash"}}}


@pytest.mark.parametrize("value", ["proj/linux", "a_B-9/x", "p" * 38 + "/" + "w" * 38])
def test_worker_pool_ids_are_task_queue_ids(value):
    assert is_worker_pool_id(value)
    assert "/".join(split_worker_pool_id(value)) == value


@pytest.mark.parametrize("value", ["proj", "proj/Linux", "proj/linux-", "a/b/c", "p" * 39 + "/x", "proj/linux\n", 7])
def test_other_ids_are_refused_naming_the_field(value):
    assert not is_worker_pool_id(value)
    with pytest.raises(InvalidInput, match="^workerPoolId: "):
        split_worker_pool_id(value)


def test_config_defaults_are_taskclusters_and_ours():
    config = PoolConfig.from_json({"maxCapacity": 4})
    assert (config.min_capacity, config.max_capacity, config.scaling_ratio, config.capacity_per_instance) == (0, 4, 1.0, 1)
    assert config.lifecycle.reregistration_timeout == DEFAULT_REREGISTRATION_TIMEOUT == 345_600
    assert config.lifecycle.registration_timeout == DEFAULT_REGISTRATION_TIMEOUT
    assert config.idle_timeout_secs == DEFAULT_IDLE_TIMEOUT_SECS == 60


def test_config_keeps_worker_config_and_provider_settings():
    config = PoolConfig.from_json({"maxCapacity": 2, "workerConfig": {"idleTimeoutSecs": 5, "shell": "bash"},
                                   "lifecycle": {"registrationTimeout": 30}, "container": {"cpu": 0.5}})
    assert dict(config.worker_config) == {"idleTimeoutSecs": 5, "shell": "bash"}
    assert config.lifecycle.registration_timeout == 30
    assert dict(config.provider_settings) == {"container": {"cpu": 0.5}}


def test_min_above_max_is_refused_naming_the_field():
    with pytest.raises(InvalidInput, match=r"^config.minCapacity: 5 is more than config.maxCapacity \(2\)"):
        PoolConfig.from_json({"minCapacity": 5, "maxCapacity": 2})


def test_create_keeps_the_config_as_written():
    pool = WorkerPool.create("proj/linux", BODY, NOW)
    assert pool.to_json() == {**BODY, "workerPoolId": "proj/linux", "created": to_iso(NOW), "lastModified": to_iso(NOW)}
    with pytest.raises(InvalidInput, match="workerPoolId"):
        WorkerPool.create("nope", BODY, NOW)


def test_update_remembers_the_provider_it_replaced_and_checks_the_id():
    pool = WorkerPool.create("proj/linux", BODY, NOW)
    later = NOW + timedelta(minutes=1)
    moved = pool.updated({**BODY, "providerId": "static", "workerPoolId": "proj/linux",
                          "created": "2000-01-01T00:00:00.000Z"}, later)
    assert (moved.provider_id, moved.previous_provider_ids) == ("static", ("local",))
    assert (moved.created, moved.last_modified) == (pool.created, to_iso(later))
    assert moved.updated({**BODY, "providerId": "local"}, later).previous_provider_ids == ("local", "static")
    with pytest.raises(InvalidInput, match="^workerPoolId: 'proj/other'"):
        pool.updated({**BODY, "workerPoolId": "proj/other"}, later)


def test_delete_hands_the_pool_to_the_null_provider_once():
    deleted = WorkerPool.create("proj/linux", BODY, NOW).deleted(NOW)
    assert deleted.provider_id == NULL_PROVIDER and deleted.previous_provider_ids == ("local",)
    assert deleted.deleted(NOW + timedelta(hours=1)) is deleted


def test_a_pool_created_again_is_the_same_definition_only_with_the_same_owners_fields():
    pool = WorkerPool.create("proj/linux", BODY, NOW)
    later = NOW + timedelta(minutes=5)
    assert pool.same_definition(WorkerPool.create("proj/linux", BODY, later))   # when does not matter
    for changed in ({"description": "other"}, {"emailOnError": True}, {"config": {"maxCapacity": 4}}):
        assert not pool.same_definition(WorkerPool.create("proj/linux", {**BODY, **changed}, NOW)), changed
