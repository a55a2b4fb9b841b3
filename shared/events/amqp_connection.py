"""One AMQP 0-9-1 connection that publishes, and does nothing else: a socket, the frames
`pamqp` encodes and decodes, and the few replies a publisher waits for.

Why not pika's BlockingConnection, which the consumers use: every publish ran pika's I/O
loop (registering and removing the socket with its poller, checking each file descriptor
against an abstract class), 0.2 ms of CPU a confirmed publish against 0.08 ms here, and
sampled in a host running a task graph, a fifth of the time it held the interpreter. A
publisher needs little of AMQP: open the connection and two channels, declare exchanges,
send a message's three frames, and wait for one reply (a confirm, a commit). What the
broker may say meanwhile is handled: a Connection.Blocked (resource alarm) only stretches
the wait, up to `reply_timeout`; a channel or connection closed by the broker ends this
connection, as any socket error does, with AmqpConnectionError.

Heartbeats are turned off (the broker proposes them; a publisher idle for hours could not
answer them between calls). The caller holds a lock: this object is one thread's at a time.
"""

from __future__ import annotations

import socket
import ssl
import struct
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from pamqp import commands, constants, frame, header
from pamqp.body import ContentBody
from pamqp.exceptions import PAMQPException

CONFIRMING, TRANSACTED = 1, 2   # the channels: one in confirm mode, one transacted
FRAME_OVERHEAD = 8              # a frame's header (7 bytes) and end byte
_FRAME_HEADER = struct.Struct(">BHI")


class AmqpConnectionError(Exception):
    """The connection cannot be used (any more): refused, lost, closed or confused."""


@dataclass(frozen=True)
class BrokerAddress:
    host: str
    port: int
    username: str
    password: str
    virtual_host: str
    tls: bool

    @classmethod
    def from_url(cls, url: str) -> BrokerAddress:
        """amqp[s]://user:password@host[:port][/virtual host], as RabbitMQ and pika read it."""
        parts = urlsplit(url)
        if parts.scheme not in ("amqp", "amqps"):
            raise ValueError(f"an AMQP URL starts with amqp:// or amqps://, not {parts.scheme}://")
        tls = parts.scheme == "amqps"
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        return cls(parts.hostname or "localhost", parts.port or (5671 if tls else 5672),
                   unquote(parts.username or "guest"), unquote(parts.password or "guest"),
                   unquote(path) if path else "/", tls)

    def __repr__(self) -> str:   # never the password
        return f"BrokerAddress({self.host}:{self.port}, vhost {self.virtual_host!r}, user {self.username!r})"


class AmqpConnection:
    def __init__(self, address: BrokerAddress, exchanges: list[str], connect_timeout: float,
                 reply_timeout: float) -> None:
        """Connect, open the two channels and declare `exchanges` (durable topic exchanges)."""
        self.address = address
        self._buffer = bytearray()
        self._delivery_tag = 0
        self._socket: socket.socket | None = None
        try:
            self._socket = self._connect(connect_timeout)
            self._handshake()
            self._declare(exchanges)
            self._socket.settimeout(reply_timeout)
        except BaseException:
            self._abandon()
            raise

    @property
    def is_open(self) -> bool:
        return self._socket is not None

    def publish_confirmed(self, exchange: str, routing_key: str, body: bytes,
                          properties: commands.Basic.Properties) -> None:
        """One message, returning once the broker has confirmed it."""
        self._send(self._message(CONFIRMING, exchange, routing_key, body, properties))
        self._delivery_tag += 1
        reply = self._reply(CONFIRMING, (commands.Basic.Ack, commands.Basic.Nack))
        if isinstance(reply, commands.Basic.Nack):
            self._fail(f"the broker refused message {reply.delivery_tag}")
        if reply.delivery_tag != self._delivery_tag and not reply.multiple:
            self._fail(f"confirm of message {reply.delivery_tag}, awaiting {self._delivery_tag}")

    def publish_committed(self, messages: list[tuple[str, str, bytes, commands.Basic.Properties]]) -> None:
        """Several messages in one transaction, returning once it is committed."""
        frames = [self._message(TRANSACTED, *message) for message in messages]
        self._send(b"".join(frames) + frame.marshal(commands.Tx.Commit(), TRANSACTED))
        self._reply(TRANSACTED, (commands.Tx.CommitOk,))

    def close(self) -> None:
        """Close politely (the broker logs no lost connection), or just drop the socket."""
        if self._socket is None:
            return
        try:
            self._send(frame.marshal(commands.Connection.Close(200, "closing", 0, 0), 0))
            self._reply(0, (commands.Connection.CloseOk,))
        except AmqpConnectionError:
            pass
        self._abandon()

    # -- frames ------------------------------------------------------------------------------

    def _connect(self, timeout: float) -> socket.socket:
        try:
            sock = socket.create_connection((self.address.host, self.address.port), timeout=timeout)
        except OSError as error:
            raise AmqpConnectionError(f"cannot connect to {self.address.host}:{self.address.port}: {error}") from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.address.tls:
            try:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.address.host)
            except (OSError, ssl.SSLError) as error:
                sock.close()
                raise AmqpConnectionError(f"TLS with {self.address.host} failed: {error}") from error
        return sock

    def _handshake(self) -> None:
        self._send(frame.marshal(header.ProtocolHeader(), 0))
        self._reply(0, (commands.Connection.Start,))
        self._send(frame.marshal(commands.Connection.StartOk(
            client_properties={"product": "taskcluster-queue on Azure Functions",
                               "capabilities": {"publisher_confirms": True, "connection.blocked": True}},
            mechanism="PLAIN", response=f"\0{self.address.username}\0{self.address.password}"), 0))
        tune = self._reply(0, (commands.Connection.Tune,))
        self._frame_max = tune.frame_max or constants.FRAME_MAX_SIZE
        self._send(frame.marshal(commands.Connection.TuneOk(channel_max=tune.channel_max or 2,
                                                            frame_max=self._frame_max, heartbeat=0), 0)
                   + frame.marshal(commands.Connection.Open(virtual_host=self.address.virtual_host), 0))
        self._reply(0, (commands.Connection.OpenOk,))
        for channel, mode, ok in ((CONFIRMING, commands.Confirm.Select(), commands.Confirm.SelectOk),
                                  (TRANSACTED, commands.Tx.Select(), commands.Tx.SelectOk)):
            self._send(frame.marshal(commands.Channel.Open(), channel) + frame.marshal(mode, channel))
            self._reply(channel, (commands.Channel.OpenOk,))
            self._reply(channel, (ok,))

    def _declare(self, exchanges: list[str]) -> None:
        """All at once, then their replies: one round trip, not one per exchange."""
        if not exchanges:
            return
        self._send(b"".join(frame.marshal(commands.Exchange.Declare(exchange=name, exchange_type="topic",
                                                                    durable=True), CONFIRMING)
                            for name in exchanges))
        for _ in exchanges:
            self._reply(CONFIRMING, (commands.Exchange.DeclareOk,))

    def _message(self, channel: int, exchange: str, routing_key: str, body: bytes,
                 properties: commands.Basic.Properties) -> bytes:
        step = self._frame_max - FRAME_OVERHEAD
        return b"".join([frame.marshal(commands.Basic.Publish(exchange=exchange, routing_key=routing_key), channel),
                         frame.marshal(header.ContentHeader(0, len(body), properties), channel),
                         *(frame.marshal(ContentBody(body[start:start + step]), channel)
                           for start in range(0, len(body), step))])

    def _send(self, data: bytes) -> None:
        if self._socket is None:
            raise AmqpConnectionError("the connection is closed")
        try:
            self._socket.sendall(data)
        except OSError as error:
            self._fail(f"sending to the broker failed: {error}")

    def _reply(self, channel: int, expected: tuple[type, ...]):
        """The next method frame, which must be one of `expected` on `channel`; what the
        broker may send between (a blocked notice, a returned message) is passed over."""
        while True:
            on, value = self._frame()
            if isinstance(value, commands.Connection.Close):
                self._closed_by_broker(f"the broker closed the connection: {value.reply_code} {value.reply_text}")
            if isinstance(value, commands.Channel.Close):   # the whole connection goes: simpler than one channel
                self._fail(f"the broker closed channel {on}: {value.reply_code} {value.reply_text}")
            if on == channel and isinstance(value, expected):
                return value
            if isinstance(value, (commands.Connection.Blocked, commands.Connection.Unblocked,
                                  commands.Basic.Return, header.ContentHeader, ContentBody)):
                continue   # blocked: the reply comes when the alarm ends, or the wait times out
            self._fail(f"unexpected {type(value).__name__} on channel {on} (awaiting "
                       f"{' or '.join(kind.__name__ for kind in expected)})")

    def _frame(self):
        while True:
            if self._buffer[:4] == b"AMQP":   # a protocol header back: the broker wants another version
                self._fail(f"the broker does not speak AMQP 0-9-1: {bytes(self._buffer[:8])!r}")
            if len(self._buffer) >= 7:
                size = _FRAME_HEADER.unpack_from(self._buffer)[2]   # type, channel, size
                end = 7 + size + 1
                if len(self._buffer) >= end:
                    try:
                        _, channel, value = frame.unmarshal(bytes(self._buffer[:end]))
                    except PAMQPException as error:
                        self._fail(f"a frame from the broker could not be read: {error}")
                    del self._buffer[:end]
                    return channel, value
            try:
                data = self._socket.recv(65536)
            except (OSError, AttributeError) as error:
                self._fail(f"no answer from the broker: {error or type(error).__name__}")
            if not data:
                self._fail("the broker closed the connection")
            self._buffer += data

    def _closed_by_broker(self, why: str) -> None:
        try:   # the polite answer (Connection.CloseOk); the socket goes anyway
            self._socket.sendall(frame.marshal(commands.Connection.CloseOk(), 0))
        except OSError:
            pass
        self._fail(why)

    def _fail(self, why: str):
        self._abandon()
        raise AmqpConnectionError(why)

    def _abandon(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
