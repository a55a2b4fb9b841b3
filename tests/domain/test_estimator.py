"""The estimator's two guarantees, over generated pools: never above maxCapacity, never two
new workers for one pending task; and the figures of Taskcluster's formula on known cases."""

from hypothesis import assume, given
from hypothesis import strategies as st

from shared.domain.estimator import PoolCapacity, estimate
from shared.domain.worker_pools import PoolConfig
from shared.domain.workers import WorkerState

counts = st.integers(min_value=0, max_value=500)


@st.composite
def pools(draw, per_worker=st.just(1), minimum=None):
    maximum = draw(st.integers(min_value=0, max_value=200))
    return PoolConfig(
        max_capacity=maximum,
        min_capacity=draw(st.integers(min_value=0, max_value=maximum)) if minimum is None else min(minimum, maximum),
        scaling_ratio=draw(st.sampled_from([1.0, 0.9, 0.5, 0.3, 0.1, 0.0]) | st.floats(0, 1)),
        capacity_per_instance=draw(per_worker),
    )


capacities = st.builds(PoolCapacity, running=counts, requested=counts, stopping=counts)


@given(pools(per_worker=st.integers(1, 8)), capacities, counts, counts)
def test_never_above_max_capacity(config, capacity, pending, claimed):
    result = estimate(config, capacity, pending, claimed)
    after = capacity.held + result.workers_to_start * config.capacity_per_instance
    assert after <= max(config.max_capacity, capacity.held)
    assert result.workers_to_start >= 0


@given(pools(minimum=0), capacities, counts, counts)
def test_never_two_new_workers_for_one_pending_task(config, capacity, pending, claimed):
    """Each new worker has a pending task that neither an idle running worker nor a
    requested one is about to take."""
    result = estimate(config, capacity, pending, claimed)
    assert result.workers_to_start <= max(0, result.adjusted_pending - capacity.requested)


@given(pools(per_worker=st.integers(2, 8), minimum=0), capacities, counts, counts)
def test_with_several_tasks_a_worker_only_the_last_new_worker_has_spare_room(config, capacity, pending, claimed):
    result = estimate(config, capacity, pending, claimed)
    uncovered = max(0, result.adjusted_pending - capacity.requested)
    assert result.workers_to_start == 0 or (result.workers_to_start - 1) * config.capacity_per_instance < uncovered


@given(pools(per_worker=st.integers(1, 4)), capacities, counts, counts)
def test_a_second_pass_before_anyone_registers_starts_nothing_more(config, capacity, pending, claimed):
    """The provisioner runs again (a wake-up, the timer) while the workers it asked for
    boot: they count as requested, and nothing more is started for the same tasks."""
    first = estimate(config, capacity, pending, claimed)
    booting = PoolCapacity(capacity.running, capacity.requested + first.workers_to_start * config.capacity_per_instance,
                           capacity.stopping)
    assert estimate(config, booting, pending, claimed).workers_to_start == 0


small = st.integers(min_value=0, max_value=20)


@given(pools(), st.builds(PoolCapacity, running=small, requested=small, stopping=small), counts, counts)
def test_min_capacity_is_kept_when_there_is_room(config, capacity, pending, claimed):
    assume(capacity.held < config.min_capacity)
    result = estimate(config, capacity, pending, claimed)
    assert capacity.held + result.workers_to_start >= config.min_capacity


def test_taskclusters_figures_at_ratio_one():
    config = PoolConfig(max_capacity=10)
    result = estimate(config, PoolCapacity(running=3), pending=6, claimed=1)
    # idle 3 - 1 = 2; adjusted 6 - 2 = 4; desired 4 + 3 = 7; add 7 - 3 = 4
    assert (result.idle_capacity, result.adjusted_pending, result.desired_capacity) == (2, 4, 7)
    assert result.workers_to_start == 4


def test_requested_workers_cover_their_tasks_and_new_tasks_get_new_workers():
    """5 workers are booting for 5 tasks, 5 more tasks arrive: 5 more workers (Taskcluster
    would start none until the first 5 register)."""
    result = estimate(PoolConfig(max_capacity=20), PoolCapacity(requested=5), pending=10, claimed=0)
    assert result.workers_to_start == 5


def test_scaling_ratio_rounds_up_without_float_noise():
    half = PoolConfig(max_capacity=100, scaling_ratio=0.5)
    assert estimate(half, PoolCapacity(), pending=3, claimed=0).workers_to_start == 2
    assert estimate(PoolConfig(max_capacity=100, scaling_ratio=0.3), PoolCapacity(), 10, 0).workers_to_start == 3


def test_clamped_to_max_and_stopping_workers_count():
    config = PoolConfig(max_capacity=8)
    assert estimate(config, PoolCapacity(), pending=200, claimed=0).workers_to_start == 8
    assert estimate(config, PoolCapacity(running=2, stopping=3), pending=200, claimed=2).workers_to_start == 3


def test_min_capacity_without_pending_tasks_and_an_idle_pool_scales_to_it():
    assert estimate(PoolConfig(max_capacity=5, min_capacity=2), PoolCapacity(), 0, 0).workers_to_start == 2
    assert estimate(PoolConfig(max_capacity=5), PoolCapacity(running=2), 0, 0).workers_to_start == 0


def test_a_worker_wider_than_the_room_left_is_not_started():
    config = PoolConfig(max_capacity=6, capacity_per_instance=4)
    assert estimate(config, PoolCapacity(running=4), pending=10, claimed=4).workers_to_start == 0
    assert estimate(config, PoolCapacity(), pending=1, claimed=0).workers_to_start == 1


def test_capacity_of_workers_by_state():
    capacity = PoolCapacity.of([(WorkerState.RUNNING, 2), (WorkerState.REQUESTED, 1), (WorkerState.STOPPING, 4),
                                (WorkerState.STOPPED, 8), (WorkerState.RUNNING, 1)])
    assert (capacity.running, capacity.requested, capacity.stopping) == (3, 1, 4)
    assert (capacity.existing, capacity.held) == (4, 8)
