"""A daemon thread that calls a method of an object every few seconds, for as long as the
object lives (it holds the object weakly, so the thread ends soon after the object goes)."""

from __future__ import annotations

import logging
import threading
import time
import weakref

log = logging.getLogger("queue.storage")


def every(seconds: float, owner: object, method: str, name: str) -> threading.Thread:
    """Call `owner.<method>()` every `seconds`; a failure is logged and tried again next time."""
    owner_ref = weakref.ref(owner)

    def loop() -> None:
        while True:
            time.sleep(seconds)
            target = owner_ref()
            if target is None:
                return
            try:
                getattr(target, method)()
            except Exception:   # storage or the bus unreachable: the next pass tries again
                log.warning("%s failed; trying again in %s s", name, seconds, exc_info=True)
            del target

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread
