"""A consumer that keeps itself attached to its queue (bus/amqp.py): of a role queue, of the
process's reply queue, of its notifications queue.

It consumes on a channel of its own that aio-pika does not restore: when that channel goes
(the connection lost, the broker restarted, a cluster node died, the broker cancelled the
consumer because the queue went away), or when the broker has held messages ready for a
while that this consumer has room for and none arrived, the channel is dropped and a new one
opened and attached, on whichever node the connection reaches, until that succeeds. aio-pika's
own restoring was seen to leave, under load, a consumer registered at the broker that received
nothing more, and with a RabbitMQ node killed, a process without its reply queue (then
auto-delete, which it no longer is); this one is checked against what the broker says.

Messages that arrived on a dropped channel are still handled: their acknowledgement fails and
the broker delivers them again, and the consumer's handled-ids set (`_Seen` in amqp.py) settles
the second copy without running it twice.

For a role queue the same sampling gives the queue-depth gauge: what waits at the broker plus
what arrived here and has not started.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import aio_pika
import structlog
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractQueue

from nova_async.common import errors, metrics

log = structlog.get_logger("bus")

DEPTH_INTERVAL = 5.0   # seconds between samples of the queue at the broker
STALL_AFTER = 15.0     # messages ready at the broker, room here, and nothing arrived this long: attach again
OPEN_TIMEOUT = 10.0    # opening the channel and attaching; sampling; closing a dropped channel

# What aio-pika raises when the connection or a channel goes away under an operation.
LOST = aio_pika.exceptions.CONNECTION_EXCEPTIONS

Declare = Callable[[AbstractChannel], Awaitable[AbstractQueue]]
Deliver = Callable[[AbstractIncomingMessage], Awaitable[None]]


class KeptConsumer:
    """`start()` (a queue of the wrong type is the caller's error), then run `keep()` until
    cancelled; `detach()` stops deliveries, `close()` closes the channel once the handlers are
    done. `declare` declares (and binds) the queue on a channel; `deliver` gets each message.
    A role queue (`topic`) has `prefetch` and acknowledgements, and its depth is a gauge; the
    reply and notification queues (`no_ack`) neither."""

    def __init__(self, connection: aio_pika.abc.AbstractConnection, name: str, *, declare: Declare,
                 deliver: Deliver, reconnect_interval: float, prefetch: int = 0, no_ack: bool = False,
                 topic: str | None = None, waiting: Callable[[], int] = lambda: 0,
                 attached: Callable[[], None] = lambda: None) -> None:
        self._connection = connection
        self._attached = attached   # told after each attachment, the first one too
        self.name = name          # for logs
        self.topic = topic
        self._prefetch = prefetch
        self._no_ack = no_ack
        self._declare = declare
        self._deliver = deliver
        self._waiting = waiting   # delivered here, not started: counted in the gauge
        self._interval = reconnect_interval
        self._channel: AbstractChannel | None = None
        self._queue: AbstractQueue | None = None
        self._tag: str | None = None
        self._lost = asyncio.Event()
        self._why = ""
        # What the current channel delivered and is not yet settled (what the broker counts
        # against `prefetch`): by id, those of a dropped channel left out.
        self._unsettled: dict[int, AbstractIncomingMessage] = {}
        self.delivered = 0        # messages that arrived, over every channel
        self.attachments = 0      # channels attached so far (1 once started; more after re-attaching)

    async def start(self) -> None:
        """Attach, trying again while the broker refuses for a passing reason: a connection
        closed under the declaration (a cluster still settling its quorum queues has been seen
        to answer INTERNAL_ERROR), a timeout."""
        attempts = 0
        while True:
            try:
                await self.attach()
                return
            except (*LOST, TimeoutError, asyncio.CancelledError) as exc:
                _unless_cancelled(exc)
                attempts += 1
                if attempts % 10 == 1:
                    log.warning("consumer not attached yet; retrying", queue=self.name, error=repr(exc),
                                attempts=attempts)
            await asyncio.sleep(self._interval)

    async def attach(self) -> None:
        channel = aio_pika.Channel(self._connection, publisher_confirms=False)
        lost = asyncio.Event()
        async with asyncio.timeout(OPEN_TIMEOUT):
            await channel.initialize()
        try:
            async with asyncio.timeout(OPEN_TIMEOUT):
                if self._prefetch:
                    # The broker hands this consumer at most `prefetch` unacknowledged messages.
                    await channel.set_qos(prefetch_count=self._prefetch)
                queue = await self._declare(channel)
                underlay = await channel.get_underlay_channel()
                underlay.on_consumer_cancel_callbacks.add(
                    lambda _frame: self._note_lost(lost, "cancelled by the broker"))
                channel.close_callbacks.add(
                    lambda _channel, exc=None: self._note_lost(lost, f"channel closed: {exc!r}"))
                tag = await queue.consume(self._arrived, no_ack=self._no_ack)
        except BaseException:
            await _close(channel)
            raise
        self._channel, self._queue, self._tag, self._lost = channel, queue, tag, lost
        self._unsettled = {}
        self.attachments += 1
        self._attached()

    def _note_lost(self, lost: asyncio.Event, why: str) -> None:
        if not lost.is_set():
            self._why = why
            lost.set()

    async def _arrived(self, message: AbstractIncomingMessage) -> None:
        self.delivered += 1
        if not self._no_ack:
            self._unsettled[id(message)] = message
        await self._deliver(message)

    def settled(self, message: AbstractIncomingMessage) -> None:
        """`message` is done with (acknowledged, or its channel gone)."""
        self._unsettled.pop(id(message), None)

    async def keep(self) -> None:
        """Watch the attachment and make a new one whenever it is lost or stalls; until cancelled.
        It never ends otherwise: whatever goes wrong on the way is logged and the consumer
        attaches again (were this to end, the consumer would stay registered at the broker and
        take its share of the messages while nobody handled them)."""
        while True:
            _stop_if_told()
            try:
                why = await self._trouble()
            except Exception as exc:   # not expected: said in full, and the channel made again
                _unless_cancelled(exc)
                log.exception("watching the consumer failed; attaching again", queue=self.name)
                why = repr(exc)
            log.warning("consumer detached from its queue; attaching again", queue=self.name, reason=why)
            await self._drop()
            while True:
                await asyncio.sleep(self._interval)
                _stop_if_told()
                try:
                    await self.attach()
                except (*LOST, TimeoutError, errors.Unavailable, asyncio.CancelledError) as exc:
                    _unless_cancelled(exc)
                    log.debug("consumer not attached yet; retrying", queue=self.name, error=repr(exc))
                    continue
                except Exception as exc:
                    _unless_cancelled(exc)
                    log.exception("attaching the consumer failed; retrying", queue=self.name)
                    continue
                log.info("consumer attached again", queue=self.name)
                break

    async def _drop(self) -> None:
        channel, self._channel = self._channel, None
        try:
            await _close(channel)
        except Exception:
            log.exception("closing the consumer's old channel failed", queue=self.name)

    async def _trouble(self) -> str:
        """Return why this attachment is no good, once it is not; meanwhile sample the queue."""
        quiet_since: float | None = None   # since when messages have waited that we had room for
        delivered = self.delivered
        while True:
            _stop_if_told()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DEPTH_INTERVAL):
                    await self._lost.wait()
            if self._lost.is_set():
                return self._why
            try:
                async with asyncio.timeout(OPEN_TIMEOUT):
                    ready = await self._ready()
            except TimeoutError as exc:
                _unless_cancelled(exc)
                return "the broker did not answer a sample of the queue"
            except (*LOST, errors.Unavailable, asyncio.CancelledError) as exc:
                _unless_cancelled(exc)
                if self._lost.is_set():
                    return self._why
                return f"sampling the queue failed: {exc!r}"
            if self.topic is not None:
                metrics.set_queue_depth(self.topic, ready + self._waiting())
            now = time.monotonic()
            room = self._no_ack or len(self._unsettled) < self._prefetch
            if ready and room and self.delivered == delivered:
                quiet_since = now if quiet_since is None else quiet_since
                if now - quiet_since >= STALL_AFTER:
                    return (f"{ready} messages ready at the broker for {round(now - quiet_since)} s "
                            f"and none delivered")
            else:
                quiet_since = None
            delivered = self.delivered

    async def _ready(self) -> int:
        # Declared again as attach() declared it: the broker tells a queue's depth only in
        # answer to a declaration.
        assert self._channel is not None
        queue = await self._declare(self._channel)
        return queue.declaration_result.message_count or 0

    async def detach(self) -> None:
        """Stop deliveries; what was delivered stays to be settled on the open channel."""
        if self._queue is not None and self._tag is not None:
            with contextlib.suppress(*LOST, TimeoutError):
                async with asyncio.timeout(OPEN_TIMEOUT):
                    await self._queue.cancel(self._tag)

    async def close(self) -> None:
        await self._drop()


def _stop_if_told() -> None:
    """Raise CancelledError if this task has been told to stop and is still running: the
    cancellation was swallowed on the way. Python 3.11's asyncio.wait_for (which aio-pika's
    declarations use for their timeout) does that when what it waited for completes as the
    cancellation comes: it returns the result and the task goes on, marked cancelling. A bus
    closing was seen to wait 30 minutes for such a keeper, which went on sampling its queue."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError()


def _unless_cancelled(exc: BaseException) -> None:
    """Raise CancelledError if this task has been cancelled, whatever `exc` is; else return.

    aiormq raises CancelledError for a connection closed under an operation (a broker node
    killed): that one is a lost connection like any other, and a consumer that took it for its
    own end would stop keeping itself attached, unnoticed. The other way round, a task awaiting
    one of aiormq's own tasks gets its cancellation back as the connection error that task was
    failed with: caught as a lost connection, it would keep this task running after it was told
    to stop, and whoever waits for it (a bus closing) would wait for ever."""
    task = asyncio.current_task()
    if task is None or task.cancelling():
        if isinstance(exc, asyncio.CancelledError):
            raise exc
        if task is not None:
            raise asyncio.CancelledError() from exc


async def _close(channel: AbstractChannel | None) -> None:
    """Close a channel that may already be gone, within a bound: a broker that is away does
    not answer a close."""
    if channel is None or channel.is_closed:
        return
    try:
        async with asyncio.timeout(OPEN_TIMEOUT):
            await channel.close()
    except (*LOST, TimeoutError, asyncio.CancelledError) as exc:
        _unless_cancelled(exc)
