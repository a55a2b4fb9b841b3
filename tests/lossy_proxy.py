"""A TCP proxy in front of Azurite that drops connections on purpose.

Armed with `lose("answer")`, it passes the next request through to Azurite and then
closes the client's connection instead of sending the answer: the write landed, and the
writer cannot know. Armed with `lose("request")`, it closes the connection as soon as the
next request arrives, before Azurite sees it. `loss_rate` drops answers at random.
"""

from __future__ import annotations

import random
import socket
import threading
from typing import Callable


class LossyProxy:
    def __init__(self, target_port: int, loss_rate: float = 0.0, seed: int = 0) -> None:
        self.target_port = target_port
        self.loss_rate = loss_rate
        self.dropped = 0
        self._random = random.Random(seed)
        self._armed: list[tuple[str, Callable[[], None] | None]] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def lose(self, what: str, then: Callable[[], None] | None = None) -> None:
        """Drop the next 'request' or 'answer'; call `then` just before dropping it."""
        with self._lock:
            self._armed.append((what, then))

    def endpoint(self, connection_string: str) -> str:
        """`connection_string` with its table endpoint moved to this proxy."""
        parts = [part for part in connection_string.split(";")
                 if part and not part.startswith("TableEndpoint=")]
        parts.append(f"TableEndpoint=http://127.0.0.1:{self.port}/devstoreaccount1")
        return ";".join(parts) + ";"

    def close(self) -> None:
        self._listener.close()

    def _take(self, what: str) -> tuple[bool, Callable[[], None] | None]:
        with self._lock:
            if self._armed and self._armed[0][0] == what:
                self.dropped += 1
                return True, self._armed.pop(0)[1]
            if what == "answer" and self.loss_rate and self._random.random() < self.loss_rate:
                self.dropped += 1
                return True, None
            return False, None

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for sock in (client, upstream):  # no Nagle delays: requests go through as sent
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._pipe, args=(client, upstream, "request"), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, "answer"), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, what: str) -> None:
        try:
            while data := source.recv(65536):
                drop, then = self._take(what)
                if drop:
                    if then:
                        then()
                    break
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
