"""The pools' layering: work in a pool may wait only on pools of lower layers, checked on submit."""

import pytest

from shared.runtime import thread_pools
from shared.runtime.thread_pools import LayeringBroken, Pool


def test_every_pool_has_a_name_of_its_own_and_a_purpose():
    pools = thread_pools.pools()
    assert len({pool.name for pool in pools}) == len(pools) > 10
    assert all(pool.purpose and "_" not in pool.name for pool in pools)   # threads are named <pool>_<n>


def test_work_in_a_pool_may_wait_on_a_lower_layer():
    upper, lower = Pool("test-upper", 2, 7, "a test's"), Pool("test-lower", 2, 6, "a test's")
    thread_pools._BY_NAME.update({"test-upper": upper, "test-lower": lower})
    try:
        assert upper.submit(lambda: lower.submit(lambda: 42).result()).result(timeout=5) == 42
    finally:
        for name in ("test-upper", "test-lower"):
            thread_pools._BY_NAME.pop(name)


@pytest.mark.parametrize("layer", [6, 7])
def test_work_in_a_pool_may_not_wait_on_its_own_layer_or_a_higher_one(layer):
    lower, target = Pool("test-lower", 2, 6, "a test's"), Pool("test-target", 2, layer, "a test's")
    thread_pools._BY_NAME.update({"test-lower": lower, "test-target": target})
    try:
        with pytest.raises(LayeringBroken, match="test-lower_0 .layer 6. may not wait on test-target"):
            lower.submit(lambda: target.submit(lambda: 42).result()).result(timeout=5)
        assert lower.submit(lambda: target.detach(lambda: 42).result()).result(timeout=5) == 42
    finally:
        for name in ("test-lower", "test-target"):
            thread_pools._BY_NAME.pop(name)


def test_a_thread_of_no_pool_may_hand_work_to_any():
    assert thread_pools.TASK_READS.submit(lambda: "read").result(timeout=5) == "read"


def test_map_runs_a_single_item_in_the_calling_thread_and_many_on_the_pool():
    import threading
    pool = thread_pools.TASK_READS
    assert list(pool.map(lambda _: threading.current_thread().name, ["one"])) == [threading.current_thread().name]
    names = list(pool.map(lambda _: threading.current_thread().name, ["one", "two"]))
    assert all(name.startswith("task-read_") for name in names)
    assert list(pool.map(lambda a, b: a + b, [1, 2], [10, 20])) == [11, 22]
    assert list(pool.map(str, [])) == []


def test_a_single_items_error_is_raised_when_its_result_is_read():
    def fail(_):
        raise ValueError("refused")
    results = thread_pools.TASK_READS.map(fail, ["one"])   # ran already, as on the pool
    with pytest.raises(ValueError, match="refused"):
        list(results)


def test_a_single_item_is_held_to_the_layering_too():
    lower, target = Pool("test-lower", 2, 6, "a test's"), Pool("test-target", 2, 6, "a test's")
    thread_pools._BY_NAME.update({"test-lower": lower, "test-target": target})
    try:
        with pytest.raises(LayeringBroken):
            lower.submit(lambda: list(target.map(str, [1]))).result(timeout=5)
    finally:
        for name in ("test-lower", "test-target"):
            thread_pools._BY_NAME.pop(name)
