"""The hints a process holds for its claimWork calls: one read serves many calls, each hint
goes to one call, and work made here, or the passing of FRESH seconds, brings a new read."""

import threading

from shared.domain.ids import new_slugid
from shared.services.claims.pending_buffer import PendingBuffer
from shared.services.claims.work_signal import WorkSignal
from shared.storage.tables.pending_table import PendingTable
from tests.conftest import unique_prefix
from tests.memory_storage import MemoryAccount

QUEUE = "prov/worker"
SCHEDULED = "2026-11-25T06:00:00.000Z"


class CountedPending(PendingTable):
    """The PendingTasks adapter, counting its reads of a queue's first hints."""

    def __init__(self, account) -> None:
        super().__init__(account)
        self.reads = 0

    def peek(self, task_queue_id: str, limit: int):
        self.reads += 1
        return super().peek(task_queue_id, limit)


def setup(fresh: float = 60.0, read: int = 500):
    pending, signal = CountedPending(MemoryAccount(unique_prefix())), WorkSignal()
    return pending, signal, PendingBuffer(pending, signal, read=read, fresh=fresh)


def hints(pending: PendingTable, count: int, priority_rank: int = 5) -> list[str]:
    task_ids = sorted(new_slugid() for _ in range(count))
    pending.add_many([(QUEUE, priority_rank, SCHEDULED, task_id, 0) for task_id in task_ids])
    return task_ids


def test_one_read_serves_many_claims_each_hint_to_one_of_them():
    pending, _, buffer = setup()
    task_ids = hints(pending, 40)
    taken = [buffer.take(QUEUE, 4, at_random=False) for _ in range(10)]
    assert [hint.task_id for hand in taken for hint in hand] == task_ids   # in claim order, none twice
    assert pending.reads == 1
    pending.remove_soon([hint for hand in taken for hint in hand])   # claimed, as claimWork deletes them
    assert buffer.take(QUEUE, 4, at_random=False) == [] and pending.reads == 2   # used up: read again


def test_concurrent_claims_get_disjoint_hints():
    pending, _, buffer = setup()
    task_ids = hints(pending, 200)
    hands: list[list[str]] = []
    lock = threading.Lock()

    def claim() -> None:
        for _ in range(5):
            hand = [hint.task_id for hint in buffer.take(QUEUE, 4, at_random=True)]
            with lock:
                hands.append(hand)
    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handed = [task_id for hand in hands for task_id in hand]
    assert len(handed) == len(set(handed)) == 160 and set(handed) <= set(task_ids)


def test_work_made_here_is_seen_at_once_and_other_work_once_the_hints_are_old():
    pending, signal, buffer = setup(fresh=60.0)
    hints(pending, 10, priority_rank=5)
    assert len(buffer.take(QUEUE, 1, at_random=False)) == 1
    urgent = hints(pending, 1, priority_rank=1)   # a better priority, made pending in this process
    signal.notify(QUEUE, 1)
    assert [hint.task_id for hint in buffer.take(QUEUE, 1, at_random=False)] == urgent
    pending2, _, old = setup(fresh=0.0)
    hints(pending2, 10, priority_rank=5)
    old.take(QUEUE, 1, at_random=False)
    elsewhere = hints(pending2, 1, priority_rank=1)   # made by another process: no signal here
    assert [hint.task_id for hint in old.take(QUEUE, 1, at_random=False)] == elsewhere


def test_hints_given_back_are_handed_out_again():
    pending, _, buffer = setup()
    task_ids = hints(pending, 3)
    first = buffer.take(QUEUE, 2, at_random=False)
    buffer.give_back(QUEUE, first[1:])
    assert [hint.task_id for hint in buffer.take(QUEUE, 5, at_random=False)] == task_ids[1:]
    assert pending.reads == 1


def made_here(pending: PendingTable, signal: WorkSignal, count: int, priority_rank: int) -> list[str]:
    """Runs made pending by this process: hints written, then announced with them."""
    written = pending.add_many([(QUEUE, priority_rank, SCHEDULED, new_slugid(), 0) for _ in range(count)])
    signal.notify(QUEUE, count, made=written)
    return sorted(hint.task_id for hint in written)


def test_runs_made_here_join_the_hints_held_in_claim_order_without_a_read():
    pending, signal, buffer = setup()
    older = hints(pending, 3, priority_rank=5)
    assert [hint.task_id for hint in buffer.take(QUEUE, 1, at_random=False)] == older[:1]
    urgent = made_here(pending, signal, 2, priority_rank=1)
    later = made_here(pending, signal, 1, priority_rank=6)
    taken = [hint.task_id for hint in buffer.take(QUEUE, 10, at_random=False)]
    assert taken == urgent + older[1:] + later
    assert pending.reads == 1


def test_a_run_made_here_behind_hints_left_unread_waits_for_the_read_that_finds_it_in_its_place():
    pending, signal, buffer = setup(read=4)
    older = hints(pending, 10, priority_rank=5)            # a read holds 4 of them

    def claim(count: int) -> list[str]:
        taken = buffer.take(QUEUE, count, at_random=False)
        pending.remove_soon(taken)                         # claimed, as claimWork deletes them
        return [hint.task_id for hint in taken]
    assert claim(1) == older[:1]
    behind = made_here(pending, signal, 1, priority_rank=7)   # after the 6 left unread
    ahead = made_here(pending, signal, 1, priority_rank=1)
    assert claim(3) == ahead + older[1:3] and pending.reads == 1
    assert claim(20) == older[3:4] and pending.reads == 1   # what the read held, nothing joined behind it
    handed = [task_id for _ in range(3) for task_id in claim(20)]
    assert handed == older[4:] + behind and pending.reads == 4
