"""Write ids and request boundaries: unique across threads and processes."""

import os
import threading

from shared.storage.client import unique_ids
from shared.storage.client.unique_ids import unique_id


def test_ids_drawn_by_many_threads_at_once_are_all_different():
    drawn, lock = [], threading.Lock()

    def draw():
        mine = [unique_id() for _ in range(5000)]
        with lock:
            drawn.extend(mine)
    threads = [threading.Thread(target=draw) for _ in range(8)]
    [thread.start() for thread in threads]
    [thread.join() for thread in threads]
    assert len(set(drawn)) == len(drawn) == 40_000


def test_a_forked_process_draws_from_a_prefix_of_its_own():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: its next id, to the parent
        os.write(write, unique_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    ours = unique_id()
    assert child[:16] != ours[:16] and ours[:16] == unique_ids._prefix
