"""The transport-independent part of the bus: the interface and the dispatching of one
received message to its handler, errors included."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import structlog

from nova_async.bus import messages
from nova_async.bus.caps import NO_CAPS, VersionCaps
from nova_async.bus.messages import ErrorReply, Message, Notification
from nova_async.common import errors, metrics
from nova_async.common.context import RequestContext
from nova_async.common.flags import Flag

log = structlog.get_logger("bus")

T = TypeVar("T")
Handler = Callable[[Message, RequestContext | None], Awaitable[Message | None]]


class Bus(abc.ABC):
    """A transport. What every transport shares lives here: the notification listeners of
    this process and the event that stops intake."""

    # Whether one call can reach two consumers: a publish retried after its confirm was lost
    # may have been taken the first time too (a broker); a queue in memory hands it over once.
    delivers_calls_twice = False

    def __init__(self) -> None:
        # The versions other services receive (bus/caps.py), which the typed clients send
        # at; the supervisor sets it when roles are split over processes.
        self.caps: VersionCaps = NO_CAPS
        # How long a call waits for its answer unless it says otherwise ([service]
        # rpc_response_timeout; the supervisor sets it).
        self.call_timeout = 60.0
        self._listeners: list[asyncio.Queue[Notification]] = []
        self._closing = Flag()
        self._returned = Flag()   # set, then replaced, at each reconnection

    def next_return(self) -> asyncio.Event:
        """An event set when the transport next reconnects after losing its broker (never, in
        memory): messages may have been lost meanwhile, and roles pick their work up again."""
        return self._returned

    def _came_back(self) -> None:
        returned, self._returned = self._returned, Flag()
        returned.set()

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Queue[Notification]]:
        """Receive every notification that reaches this process while the block runs."""
        q: asyncio.Queue[Notification] = asyncio.Queue()
        self._listeners.append(q)
        try:
            yield q
        finally:
            self._listeners.remove(q)

    def heard(self) -> bool:
        """Whether a notification published now reaches anyone: in memory, only this process's
        listeners (so nothing need be built for none); a broker's consumers are not known."""
        return bool(self._listeners)

    def _deliver(self, note: Notification) -> None:
        for q in self._listeners:
            q.put_nowait(note)

    def stop_intake(self) -> None:
        """Stop taking new messages; consumers finish what they hold and return."""
        self._closing.set()

    def _stops(self, until: asyncio.Event | None) -> list[asyncio.Event]:
        return [self._closing] + ([until] if until is not None else [])

    @staticmethod
    async def answer_within(topic: str, msg: Message, timeout: float,
                            reply: Callable[[], Awaitable[bytes]]) -> Message | None:
        """What every transport's call does around getting its reply: the deadline (a
        BusTimeout that names who did not answer), the answer or the error it carries, and
        the RPC latency metric by outcome."""
        started = time.perf_counter()
        outcome = "error"
        try:
            async with asyncio.timeout(timeout):
                data = await reply()
            answer = unwrap(data)
            outcome = "ok"
            return answer
        except TimeoutError:
            outcome = "timeout"
            raise errors.BusTimeout(f"no answer from {topic} to {type(msg).__name__} "
                                    f"within {timeout:g} s") from None
        finally:
            metrics.observe_rpc(topic, time.perf_counter() - started, message=type(msg).__name__,
                                outcome=outcome)

    @abc.abstractmethod
    async def call(self, topic: str, msg: Message, *, context: RequestContext | None = None,
                   timeout: float | None = None, version: str | None = None) -> Message | None:
        """Send `msg` to one consumer of `topic` and wait for its answer (`timeout`, else
        `call_timeout`); its errors re-raise here. `version`: the receiver's cap, to convert
        `msg` down to (messages.encode)."""

    @abc.abstractmethod
    async def cast(self, topic: str, msg: Message, *, context: RequestContext | None = None,
                   version: str | None = None) -> None:
        """Hand `msg` to one consumer of `topic`; do not wait for it to be handled."""

    @abc.abstractmethod
    async def publish(self, note: Notification) -> None:
        """Tell every listener that something happened."""

    @abc.abstractmethod
    async def consume(self, topic: str, handler: Handler, *, concurrency: int = 64,
                      until: asyncio.Event | None = None) -> None:
        """Handle messages on `topic` until `until` is set (or all intake stops), then wait
        for the messages in flight."""


async def dispatch(data: bytes, handler: Handler, topic: str) -> bytes:
    """Decode, check the version, run the handler, and encode its answer or its error."""
    try:
        msg, context, version = messages.decode(data)
    except Exception as exc:  # a message we cannot even read
        log.error("undecodable message", topic=topic, error=str(exc))
        return messages.encode_reply(error=ErrorReply("InvalidInput", f"undecodable message: {exc}",
                                                      "bad_message"))
    if version != msg.VERSION and not _understood(version, msg.VERSION):
        # Never a guess: a newer minor's fields would be dropped unread by the decoder.
        text = (f"{type(msg).__name__} version {version} cannot be handled here "
                f"(this side speaks {msg.VERSION}: older minors of its major only)")
        log.error("message version refused", topic=topic, message=type(msg).__name__, version=version,
                  speaks=msg.VERSION)
        return messages.encode_reply(error=ErrorReply("Conflict", text, messages.VERSION_MISMATCH))
    try:
        answer = await handler(msg, context)
    except errors.NovaAsyncError as exc:
        return messages.encode_reply(error=ErrorReply(errors.wire_kind(exc), exc.message, exc.code))
    except Exception as exc:
        log.exception("handler failed", topic=topic, message=type(msg).__name__)
        return messages.encode_reply(error=ErrorReply("NovaAsyncError", f"{topic}: {exc}", "internal_error"))
    return messages.encode_reply(answer)


def _understood(version: str, speaks: str) -> bool:
    """Whether a receiver that speaks `speaks` reads a message sent at `version`: the same
    major, and a minor no newer than its own."""
    try:
        sent, own = messages.parse(version), messages.parse(speaks)
    except ValueError:
        return False
    return sent[0] == own[0] and sent[1] <= own[1]


def unwrap(data: bytes) -> Message | None:
    answer, error = messages.decode_reply(data)
    if error is not None:
        raise errors.rebuild(error.kind, error.message, error.code)
    return answer


async def next_unless(queue: asyncio.Queue[T], stopped: asyncio.Future[Any]) -> T | None:
    """`queue`'s next item, or None when `stopped` is done first (an item that arrives then
    stays in the queue for whoever drains it). Items are never None."""
    getter = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait({getter, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if getter not in done:
        getter.cancel()
        return None
    return getter.result()
