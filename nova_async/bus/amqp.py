"""The RabbitMQ transport (aio-pika), for roles split across processes and hosts.

Layout on the broker, all names prefixed `nova-async.`:
- one durable queue per topic (`nova-async.conductor`, `nova-async.compute.edge-2`, …),
  shared by every consumer of that topic; senders declare it too, so a cast to a host
  that has not started yet waits in its queue instead of being dropped;
- one exclusive reply queue per process for the answers to its calls, matched to the
  waiting caller by correlation id;
- notifications go where Nova's versioned notifications go, as oslo.messaging's rabbit driver
  sends them with its default options: the topic exchange `nova` (durable false, auto-delete
  false), routing key `versioned_notifications.info` or `.error`, a body in oslo's 2.0 envelope
  (`{"oslo.version": "2.0", "oslo.message": "<JSON>"}`), and before the first publish of each
  priority the queue of that name declared and bound as oslo's notifier declares it, so that
  what is sent before any listener starts waits there, and so that neither an oslo.messaging
  listener's declarations nor ours fail (PRECONDITION_FAILED) whichever comes first. Each of
  our processes also binds one exclusive queue of its own to both keys and hands what arrives
  to its `listen()` blocks.

Delivery: casts are persistent and confirmed by the broker; a publish that fails while the
connection is down is retried once `connect_robust` has reconnected, until a deadline, so a
broker restart loses no cast. A broker away for longer than a restart takes (OUTAGE_GRACE)
is not waited for any more: publishes fail at once (errors.Unavailable, a 503 to an HTTP
caller), and once it is back the roles pick up what is recorded but was not delivered, as
after a database outage (Bus.next_return). Nothing here waits without a bound: the first
connection, every publish and its confirm, every call, and the close at shutdown. A cast is acknowledged only after its handler returns, so a
consumer that dies mid-way has it redelivered to another (handlers are idempotent). A call
is acknowledged when it is received: its caller is waiting and decides what a lost answer
means, and running a claim twice behind its back would be worse. Retries can duplicate a
message; each carries a message id, and a consumer does not handle again an id it is
handling or has just handled.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable

import aio_pika
import aiormq
import msgspec
import structlog
from aio_pika.abc import AbstractIncomingMessage, AbstractRobustChannel, AbstractRobustConnection
from yarl import URL

from nova_async.bus import messages
from nova_async.bus.base import Bus, Handler, dispatch, first_set, next_unless
from nova_async.bus.messages import Message, Notification
from nova_async.common import errors, metrics
from nova_async.common.context import RequestContext

log = structlog.get_logger("bus")

PREFIX = "nova-async."
# oslo.messaging's names and defaults (control_exchange "nova" as Nova sets it; the topic of
# [notifications] versioned_notifications_topics; amqp_durable_queues and amqp_auto_delete false).
NOTIFY_EXCHANGE = "nova"
NOTIFY_TOPIC = "versioned_notifications"
NOTIFY_PRIORITIES = ("info", "error")
NOTIFY_DURABLE = False
DEPTH_INTERVAL = 5.0  # seconds between samples of a consumed queue's depth
RECONNECT_INTERVAL = 1.0    # seconds between attempts to reach a broker that went away
CONNECT_TIMEOUT = 30.0      # the first connection, at start
CONFIRM_TIMEOUT = 10.0      # one publish attempt waits this long for the broker's confirm
OUTAGE_GRACE = 30.0         # a publish waits for a reconnection while the broker has been away less than this
REPLY_WINDOW = 30.0         # an answer keeps being retried this long while its caller reconnects
NOTIFY_WINDOW = 5.0         # a notification is best effort: dropped after this long
RECENT_IDS = 10_000         # message ids a consumer remembers having handled

# What aio-pika raises when the connection or a channel goes away under an operation
# (AMQP errors, OSErrors, and RuntimeErrors such as ChannelInvalidStateError).
_LOST = aio_pika.exceptions.CONNECTION_EXCEPTIONS


def queue_name(topic: str) -> str:
    return PREFIX + topic


def redacted(url: str) -> str:
    """The broker URL without its password, for logs and errors."""
    parsed = URL(url)
    return str(parsed.with_password("***")) if parsed.password else url


class AmqpBus(Bus):
    """`async with AmqpBus("amqp://user:pass@host:5672/vhost") as bus:` connects, and closes on exit."""

    def __init__(self, url: str, *, publish_timeout: float = 60.0,
                 reconnect_interval: float = RECONNECT_INTERVAL) -> None:
        super().__init__()
        self.url = url
        self.publish_timeout = publish_timeout
        self._reconnect_interval = reconnect_interval
        self._connection: AbstractRobustConnection | None = None
        self._publisher: AbstractRobustChannel | None = None
        self._notifications: aio_pika.abc.AbstractExchange | None = None
        self._notify_queues: set[str] = set()   # versioned_notifications.<priority> declared
        self._reply_queue = f"{PREFIX}reply.{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        self._pending: dict[str, asyncio.Future[bytes]] = {}
        self._declared: set[str] = set()
        self._up = True
        self._away_since: float | None = None   # time.monotonic() when the connection was lost

    async def __aenter__(self) -> AmqpBus:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        try:
            self._connection = await aio_pika.connect_robust(
                self.url, reconnect_interval=self._reconnect_interval, timeout=CONNECT_TIMEOUT,
                client_properties={"connection_name": f"nova-async {socket.gethostname()} pid {os.getpid()}"})
        except (aiormq.exceptions.AMQPError, OSError) as exc:  # TimeoutError among them
            raise errors.Unavailable(f"cannot reach RabbitMQ at {redacted(self.url)}: {exc}") from None
        # aiormq and aio-pika log every failed reconnection attempt (once a second while the
        # broker is away); ours say once when it went away and once when it came back.
        logging.getLogger("aiormq.connection").setLevel(logging.CRITICAL)
        logging.getLogger("aio_pika.robust_connection").setLevel(logging.ERROR)
        self._connection.close_callbacks.add(self._on_connection_lost)
        self._connection.reconnect_callbacks.add(self._on_reconnected)
        try:
            await self._open_channels(self._connection)
        except BaseException:
            await self.close()
            raise
        log.info("connected to RabbitMQ", url=redacted(self.url))

    async def _open_channels(self, connection: AbstractRobustConnection) -> None:
        # Unroutable publishes raise (PublishError) instead of vanishing: see _send.
        self._publisher = await connection.channel(publisher_confirms=True, on_return_raises=True)
        self._notifications = await self._publisher.declare_exchange(
            NOTIFY_EXCHANGE, aio_pika.ExchangeType.TOPIC, durable=NOTIFY_DURABLE, auto_delete=False)
        intake = await connection.channel(publisher_confirms=False)
        replies = await intake.declare_queue(self._reply_queue, exclusive=True, auto_delete=True)
        await replies.consume(self._on_reply, no_ack=True)
        notes = await intake.declare_queue(f"{self._reply_queue}.notifications", exclusive=True,
                                           auto_delete=True)
        for priority in NOTIFY_PRIORITIES:
            await notes.bind(NOTIFY_EXCHANGE, routing_key=f"{NOTIFY_TOPIC}.{priority}")
        await notes.consume(self._on_notification, no_ack=True)

    def _on_connection_lost(self, _connection: object, exc: BaseException | None = None) -> None:
        # Called again for each failed attempt to reconnect: said once per outage.
        if self._up and not self._closing.is_set():
            self._up = False
            self._away_since = time.monotonic()
            log.warning("lost the connection to RabbitMQ; reconnecting", url=redacted(self.url),
                        error=repr(exc))

    def _on_reconnected(self, _connection: object) -> None:
        self._up = True
        self._away_since = None
        log.info("reconnected to RabbitMQ", url=redacted(self.url))
        self._came_back()

    async def close(self) -> None:
        self._closing.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(errors.Unavailable("the bus closed before an answer came"))
        if self._connection is not None:
            # A broker that is away does not answer a close: do not wait for it past a bound.
            with contextlib.suppress(TimeoutError, *_LOST):
                async with asyncio.timeout(CONFIRM_TIMEOUT):
                    await self._connection.close()

    def heard(self) -> bool:
        return True   # the nova exchange's queues keep what is sent for listeners to come

    # -- sending

    async def call(self, topic: str, msg: Message, *, context: RequestContext | None = None,
                   timeout: float = 60.0, version: str | None = None) -> Message | None:
        body = messages.encode(msg, context, version)   # before anything waits: it may refuse
        correlation_id = uuid.uuid4().hex
        reply = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = reply
        message = aio_pika.Message(
            body, content_type="application/json", message_id=uuid.uuid4().hex,
            correlation_id=correlation_id, reply_to=self._reply_queue,
            # Persistent so that a broker restart does not lose it, yet it expires with the
            # caller's patience: nobody should act on a question nobody waits for any more.
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT, expiration=timeout)
        async def sent_and_answered() -> bytes:
            await self._send(topic, message, deadline=asyncio.get_running_loop().time() + timeout)
            return await reply
        try:
            return await self.answer_within(topic, msg, timeout, sent_and_answered)
        finally:
            self._pending.pop(correlation_id, None)

    async def cast(self, topic: str, msg: Message, *, context: RequestContext | None = None,
                   version: str | None = None) -> None:
        message = aio_pika.Message(messages.encode(msg, context, version), content_type="application/json",
                                   message_id=uuid.uuid4().hex, delivery_mode=aio_pika.DeliveryMode.PERSISTENT)
        await self._send(topic, message, deadline=asyncio.get_running_loop().time() + self.publish_timeout)

    async def publish(self, note: Notification) -> None:
        exchange = self._notifications
        assert exchange is not None and self._publisher is not None
        publisher = self._publisher
        routing_key = f"{NOTIFY_TOPIC}.{note.priority.lower()}"
        # As kombu sends it for oslo.messaging: JSON, utf-8, persistent, priority 0.
        message = aio_pika.Message(oslo_body(note), content_type="application/json", content_encoding="utf-8",
                                   delivery_mode=aio_pika.DeliveryMode.PERSISTENT, priority=0, headers={})

        async def attempt() -> None:
            if routing_key not in self._notify_queues:
                # oslo's notifier declares the queue it publishes to (its "default queue"),
                # once per connection, with the exchange's durable and auto-delete and no
                # arguments: an oslo listener's declare of the same queue is then identical.
                queue = await publisher.declare_queue(routing_key, durable=NOTIFY_DURABLE, auto_delete=False,
                                                      timeout=CONFIRM_TIMEOUT)
                await queue.bind(exchange, routing_key=routing_key, timeout=CONFIRM_TIMEOUT)
                self._notify_queues.add(routing_key)
            await exchange.publish(message, routing_key, mandatory=False, timeout=CONFIRM_TIMEOUT)

        try:
            await self._retrying(attempt, deadline=asyncio.get_running_loop().time() + NOTIFY_WINDOW)
        except errors.Unavailable as exc:
            log.warning("notification dropped", event_type=note.event_type, error=exc.message)

    async def _send(self, topic: str, message: aio_pika.Message, *, deadline: float) -> None:
        """Publish to `topic`'s queue (declaring it first) and wait for the broker's confirm."""
        assert self._publisher is not None
        publisher = self._publisher
        name = queue_name(topic)

        async def attempt() -> None:
            if name not in self._declared:
                # Not restored on reconnect (robust=False): the queue is durable, and if the
                # broker lost it anyway the publish comes back unroutable and we declare again.
                await publisher.declare_queue(name, durable=True, robust=False, timeout=CONFIRM_TIMEOUT)
                self._declared.add(name)
            try:
                await publisher.default_exchange.publish(message, name, timeout=CONFIRM_TIMEOUT)
            except aio_pika.exceptions.PublishError:
                self._declared.discard(name)
                raise

        await self._retrying(attempt, deadline=deadline, unroutable_retries=True)

    async def _retrying(self, attempt: Callable[[], Awaitable[object]], *, deadline: float,
                        unroutable_retries: bool = False) -> None:
        """Run `attempt` until it succeeds or `deadline` passes, waiting out reconnections."""
        assert self._publisher is not None
        loop = asyncio.get_running_loop()
        pause = 0.05
        while True:
            try:
                await attempt()
                return
            except (aio_pika.exceptions.PublishError, aio_pika.exceptions.DeliveryError) as exc:
                if not unroutable_retries:
                    raise errors.Unavailable(f"the broker refused the message: {exc!r}") from None
                failure: BaseException = exc
            except _LOST as exc:
                failure = exc
            if self._away_since is not None:  # a restart is waited out; an outage is not
                deadline = min(deadline, loop.time() + self._away_since + OUTAGE_GRACE - time.monotonic())
            remaining = deadline - loop.time()
            if remaining <= 0 or self._closing.is_set():
                raise errors.Unavailable(f"RabbitMQ at {redacted(self.url)} did not take a message: "
                                         f"{failure!r}") from None
            log.warning("publish failed; retrying when the broker is back", error=repr(failure),
                        retry_in=round(pause, 2))
            # There is nothing to wait on that says a lost connection has been noticed, so pause
            # first (the connection may still look up), then wait for the channel to be restored.
            await asyncio.sleep(min(pause, remaining))
            pause = min(pause * 2, 1.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._publisher.ready(), max(0.0, deadline - loop.time()))

    # -- receiving

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        future = self._pending.get(message.correlation_id or "")
        if future is not None and not future.done():
            future.set_result(message.body)

    async def _on_notification(self, message: AbstractIncomingMessage) -> None:
        if not self._listeners:
            return
        try:
            note = from_oslo_body(message.body)
        except Exception as exc:
            log.warning("undecodable notification dropped", error=str(exc))
            return
        self._deliver(note)

    async def consume(self, topic: str, handler: Handler, *, concurrency: int = 64,
                      until: asyncio.Event | None = None) -> None:
        assert self._connection is not None
        stops = self._stops(until)
        if any(e.is_set() for e in stops):
            return
        channel = await self._connection.channel(publisher_confirms=False)
        try:
            # The broker hands this consumer at most `concurrency` unacknowledged messages.
            await channel.set_qos(prefetch_count=concurrency)
            queue = await channel.declare_queue(queue_name(topic), durable=True)
            arrived: asyncio.Queue[AbstractIncomingMessage] = asyncio.Queue()
            tag = await queue.consume(arrived.put)
            seen = _Seen()
            stopped = asyncio.create_task(first_set(stops), name=f"bus:{topic}:closing")
            try:
                async with asyncio.TaskGroup() as tg:
                    depth = tg.create_task(_watch_depth(channel, topic, arrived), name=f"bus:{topic}:depth")
                    while (message := await next_unless(arrived, stopped)) is not None:
                        tg.create_task(self._handle(topic, message, handler, seen), name=f"bus:{topic}:handler")
                    depth.cancel()
                    with contextlib.suppress(*_LOST):
                        await queue.cancel(tag)
                    # Delivered but not started: back to the queue for another consumer.
                    while not arrived.empty():
                        await _settle(arrived.get_nowait().nack(requeue=True))
            finally:
                stopped.cancel()
                await asyncio.gather(stopped, return_exceptions=True)
        finally:
            with contextlib.suppress(*_LOST):
                await channel.close()

    async def _handle(self, topic: str, message: AbstractIncomingMessage, handler: Handler,
                      seen: _Seen) -> None:
        try:
            await self._handle_one(topic, message, handler, seen)
        except Exception:
            # Handler errors are answered by dispatch(); what is left is the broker going away
            # past every retry. The consumer carries on: the broker redelivers an unacknowledged
            # cast, and a caller whose answer was lost times out.
            log.exception("message not settled", topic=topic, message_id=message.message_id)

    async def _handle_one(self, topic: str, message: AbstractIncomingMessage, handler: Handler,
                          seen: _Seen) -> None:
        message_id = message.message_id or ""
        if message.reply_to:
            await _settle(message.ack())
            if not seen.begin(message_id):
                return
            try:
                answer = await dispatch(message.body, handler, topic)
            finally:
                seen.end(message_id)
            await self._answer(message.reply_to, message.correlation_id or "", answer, topic)
            return
        earlier = seen.running(message_id)
        if earlier is not None:
            # The same cast again (a redelivery after a reconnect, or a publish retried) while
            # it is still being handled here: settle this copy once the first one is done.
            await earlier.wait()
        if not seen.begin(message_id):
            await _settle(message.ack())
            return
        try:
            answer = await dispatch(message.body, handler, topic)
        finally:
            seen.end(message_id)
        if not await _settle(message.ack()):
            log.info("cast handled but not acknowledged (connection lost); its redelivery will be "
                     "recognised", topic=topic, message_id=message_id)
        _, error = messages.decode_reply(answer)
        if error is not None:
            # A cast has nobody to tell; its failure is logged where it happened.
            log.warning("cast failed", topic=topic, error=error.message, code=error.code)

    async def _answer(self, reply_to: str, correlation_id: str, answer: bytes, topic: str) -> None:
        assert self._publisher is not None
        publisher = self._publisher
        message = aio_pika.Message(answer, content_type="application/json", correlation_id=correlation_id)
        try:
            # Returned as unroutable while the caller is still re-declaring its reply queue
            # after a broker restart: retried for a while.
            await self._retrying(lambda: publisher.default_exchange.publish(message, reply_to,
                                                                            timeout=CONFIRM_TIMEOUT),
                                 deadline=asyncio.get_running_loop().time() + REPLY_WINDOW,
                                 unroutable_retries=True)
        except errors.Unavailable as exc:
            log.warning("answer to a call lost; the caller will time out", topic=topic, error=exc.message)


def oslo_body(note: Notification) -> bytes:
    """A notification as oslo.messaging's rabbit driver sends it: the message (envelope, a
    `_unique_id` its listeners drop duplicates by, no `_context_*` keys: an empty context) as a
    JSON string inside the 2.0 envelope."""
    inner = {**note.envelope(), "_unique_id": uuid.uuid4().hex}
    return _json.encode({"oslo.version": "2.0", "oslo.message": _json.encode(inner).decode()})


def from_oslo_body(body: bytes) -> Notification:
    """What `oslo_body` (or Nova itself) sent, back into a Notification."""
    outer = msgspec.json.decode(body)
    inner = msgspec.json.decode(outer["oslo.message"]) if "oslo.message" in outer else outer
    return Notification(event_type=inner["event_type"], payload=inner.get("payload") or {},
                        priority=inner.get("priority") or "INFO", publisher_id=inner.get("publisher_id") or "",
                        message_id=inner.get("message_id") or "", timestamp=inner.get("timestamp") or "")


_json = msgspec.json.Encoder()


async def _watch_depth(channel: AbstractRobustChannel, topic: str,
                       arrived: asyncio.Queue[AbstractIncomingMessage]) -> None:
    """The queue-depth gauge: what waits at the broker plus what this consumer holds unstarted.
    The broker tells only in answer to a declare, so it is sampled (robust=False: the channel
    already restores this queue after a reconnect; a passive declare would answer from cache)."""
    while True:
        with contextlib.suppress(*_LOST):
            queue = await channel.declare_queue(queue_name(topic), durable=True, robust=False)
            waiting = queue.declaration_result.message_count or 0
            metrics.set_queue_depth(topic, waiting + arrived.qsize())
        await asyncio.sleep(DEPTH_INTERVAL)


class _Seen:
    """Message ids one consumer is handling, and those it handled lately."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Event] = {}
        self._recent: collections.OrderedDict[str, None] = collections.OrderedDict()

    def running(self, message_id: str) -> asyncio.Event | None:
        return self._running.get(message_id)

    def begin(self, message_id: str) -> bool:
        """False when this id is being handled or was handled lately: do not handle it again."""
        if not message_id:
            return True
        if message_id in self._running or message_id in self._recent:
            return False
        self._running[message_id] = asyncio.Event()
        return True

    def end(self, message_id: str) -> None:
        if not message_id:
            return
        self._running.pop(message_id).set()
        self._recent[message_id] = None
        if len(self._recent) > RECENT_IDS:
            self._recent.popitem(last=False)


async def _settle(outcome: Awaitable[None]) -> bool:
    """Ack or nack; False when the channel it came on is gone (the broker redelivers it)."""
    try:
        await outcome
        return True
    except _LOST:
        return False

