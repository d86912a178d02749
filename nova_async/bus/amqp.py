"""The RabbitMQ transport (aio-pika), for roles split across processes and hosts.

Layout on the broker, all names prefixed `nova-async.`:
- one durable queue per topic (`nova-async.conductor`, `nova-async.compute.edge-2`, …),
  shared by every consumer of that topic; senders declare it too, so a cast to a host
  that has not started yet waits in its queue instead of being dropped. With
  `rabbit_quorum_queue` they are quorum queues (`x-queue-type: quorum`), replicated over the
  nodes of a RabbitMQ cluster, as oslo.messaging's option of that name declares Nova's;
- one exclusive reply queue per process for the answers to its calls, matched to the
  waiting caller by correlation id. It stays a classic queue whatever the option: it lives
  and dies with its process, which declares it again on whichever node it reconnects to
  (oslo.messaging too keeps its reply queues classic unless a separate option says otherwise);
- notifications go where Nova's versioned notifications go, as oslo.messaging's rabbit driver
  sends them with its default options: the topic exchange `nova` (durable false, auto-delete
  false), routing key `versioned_notifications.info` or `.error`, a body in oslo's 2.0 envelope
  (`{"oslo.version": "2.0", "oslo.message": "<JSON>"}`), and before the first publish of each
  priority the queue of that name declared and bound as oslo's notifier declares it, so that
  what is sent before any listener starts waits there, and so that neither an oslo.messaging
  listener's declarations nor ours fail (PRECONDITION_FAILED) whichever comes first. With
  `rabbit_quorum_queue` that is as oslo declares them with the same option: the exchange
  durable, the queues quorum queues. Each of our processes also binds one exclusive (classic)
  queue of its own to both keys and hands what arrives to its `listen()` blocks.

A RabbitMQ cluster is given as the list of its nodes (bus/brokers.py): the bus connects to the
first that answers, and when it loses that node it reconnects to the next one that answers,
where aio-pika restores the publishing and reply channels as after a broker restart, and each
role queue's consumer attaches itself again (bus/amqp_consumer.py). A
queue's type cannot change once declared: a declaration that disagrees with the broker's
queue ends with one line naming the queue and what to do (`_mismatch`), not a retry loop.

Delivery: casts are persistent and confirmed by the broker (by a majority of the nodes, for a
quorum queue); a publish that fails while the connection is down is retried once the
connection is back, on the same node or another, until a deadline, so a broker restart or a
cluster node dying loses no cast. A broker away for longer than a restart takes (OUTAGE_GRACE)
is not waited for any more: publishes fail at once (errors.Unavailable, a 503 to an HTTP
caller), and once it is back the roles pick up what is recorded but was not delivered, as
after a database outage (Bus.next_return). Nothing here waits without a bound: the first
connection, every publish and its confirm, every call, and the close at shutdown. A cast is
acknowledged only after its handler returns, so a consumer that dies mid-way has it
redelivered to another (handlers are idempotent). A call is acknowledged when it is received:
its caller is waiting and decides what a lost answer means, and running a claim twice behind
its back would be worse. Only a call whose handler is idempotent (Message.REDELIVERABLE:
deleting allocations, deallocating ports) is acknowledged once answered, so that a node dying
with it leaves it to another copy instead of to the caller's timeout; and its caller asks again
when its reply queue is declared anew while it waits (a broker restart takes that queue, with
an answer in it or on its way). Retries can duplicate a message; each carries a message id,
and a consumer does not handle again an id it is handling or has just handled.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import aio_pika
import aiormq
import msgspec
import structlog
from aio_pika.abc import AbstractIncomingMessage, AbstractQueue, AbstractRobustChannel, AbstractRobustConnection
from yarl import URL

from nova_async.bus import messages
from nova_async.bus.amqp_consumer import KeptConsumer
from nova_async.bus.base import Bus, Handler, dispatch, next_unless
from nova_async.bus.brokers import broker_urls, redacted, shown
from nova_async.bus.messages import Message, Notification
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.flags import Flag, first_set

log = structlog.get_logger("bus")

PREFIX = "nova-async."
# oslo.messaging's names and defaults (control_exchange "nova" as Nova sets it; the topic of
# [notifications] versioned_notifications_topics; amqp_durable_queues and amqp_auto_delete false).
NOTIFY_EXCHANGE = "nova"
NOTIFY_TOPIC = "versioned_notifications"
NOTIFY_PRIORITIES = ("info", "error")
NOTIFY_DURABLE = False      # amqp_durable_queues false; rabbit_quorum_queue makes it true
QUORUM = {"x-queue-type": "quorum"}
REDELIVER_HEADER = "x-nova-async-redeliverable"   # a call acknowledged once answered (Message.REDELIVERABLE)
RECONNECT_INTERVAL = 1.0    # seconds between attempts to reach a broker that went away
CONNECT_TIMEOUT = 30.0      # the first connection, at start
NODE_TIMEOUT = 10.0         # of a cluster's nodes, one that does not finish connecting in this long is passed over
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


class NodesConnection(aio_pika.RobustConnection):
    """aio-pika's robust connection, over the nodes of a RabbitMQ cluster: each (re)connection
    tries them in turn, beginning with the one after the node it last had, so that losing a
    node moves the process to another one; aio-pika then restores the channels, queues and
    consumers there as it does after a broker restart. `url` is the node in use."""

    def __init__(self, urls: list[str], **kwargs: object) -> None:
        super().__init__(URL(urls[0]), **kwargs)
        self.nodes = [URL(url) for url in urls]
        self._next = 0

    # aio-pika makes every connection and reconnection through this one (private) method, to
    # `self.url`: it has no list of hosts, and this is where one fits. An aio-pika that renames
    # the method fails at import, and tests/integration/bus/test_amqp_cluster.py covers it.
    _connect_to_url = aio_pika.RobustConnection._RobustConnection__connect_transport  # type: ignore[attr-defined]

    async def _RobustConnection__connect_transport(self) -> None:
        failure: BaseException | None = None
        for step in range(len(self.nodes)):
            index = (self._next + step) % len(self.nodes)
            self.url = self.nodes[index]
            try:
                async with asyncio.timeout(NODE_TIMEOUT if len(self.nodes) > 1 else None):
                    await self._connect_to_url()
            except _LOST as exc:
                failure = exc
                continue
            self._next = (index + 1) % len(self.nodes)
            return
        assert failure is not None
        raise failure


class AmqpBus(Bus):
    """`async with AmqpBus("amqp://user:pass@host:5672/vhost") as bus:` connects, and closes on
    exit. The transport may name several nodes of a cluster (bus/brokers.py); `quorum` declares
    the role and notification queues as quorum queues."""

    delivers_calls_twice = True

    def __init__(self, transport: str, *, quorum: bool = False, publish_timeout: float = 60.0,
                 reconnect_interval: float = RECONNECT_INTERVAL) -> None:
        super().__init__()
        self.nodes = broker_urls(transport)
        self.quorum = quorum
        self._queue_arguments = dict(QUORUM) if quorum else None
        self._notify_durable = NOTIFY_DURABLE or quorum   # oslo: amqp_durable_queues or rabbit_quorum_queue
        self.publish_timeout = publish_timeout
        self._reconnect_interval = reconnect_interval
        self._connection: AbstractRobustConnection | None = None
        self._publisher: AbstractRobustChannel | None = None
        self._notifications: aio_pika.abc.AbstractExchange | None = None
        self._notify_queues: set[str] = set()   # versioned_notifications.<priority> declared
        self._reply_queue = f"{PREFIX}reply.{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        self._pending: dict[str, asyncio.Future[bytes]] = {}
        self._replies_declared = Flag()   # set, then replaced, each time the reply queue is declared
        self._declared: set[str] = set()
        self._intake: list[KeptConsumer] = []        # of the reply and notification queues
        self._renewing = asyncio.Lock()
        self._keepers: list[asyncio.Task[None]] = []
        self._up = True
        self._away_since: float | None = None   # time.monotonic() when the connection was lost

    async def __aenter__(self) -> AmqpBus:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def url(self) -> str:
        """The node in use (or to be tried first), with its password: not for logs."""
        return str(self._connection.url) if self._connection is not None else self.nodes[0]

    async def connect(self) -> None:
        connection = NodesConnection(
            self.nodes, reconnect_interval=self._reconnect_interval,
            client_properties={"connection_name": f"nova-async {socket.gethostname()} pid {os.getpid()}"})
        try:
            await connection.connect(timeout=CONNECT_TIMEOUT)
        except (aiormq.exceptions.AMQPError, OSError) as exc:  # TimeoutError among them
            await connection.close()
            where = redacted(self.nodes[0]) if len(self.nodes) == 1 else f"any of {shown(self.nodes)}"
            raise errors.Unavailable(f"cannot reach RabbitMQ at {where}: {exc}") from None
        self._connection = connection
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
        log.info("connected to RabbitMQ", url=redacted(self.url), quorum_queues=self.quorum)

    async def _open_channels(self, connection: AbstractRobustConnection) -> None:
        self._publisher, self._notifications = await self._publishing_channel(connection)
        # The reply and notification queues: exclusive (they go with the connection, and are
        # declared again wherever it reconnects), each kept attached by a consumer of its own.
        self._intake = [
            KeptConsumer(connection, self._reply_queue, declare=self._declare_replies, deliver=self._on_reply,
                         no_ack=True, reconnect_interval=self._reconnect_interval,
                         attached=self._reply_queue_declared),
            KeptConsumer(connection, f"{self._reply_queue}.notifications", declare=self._declare_notes,
                         deliver=self._on_notification, no_ack=True, reconnect_interval=self._reconnect_interval)]
        for consumer in self._intake:
            await consumer.start()
            self._keepers.append(asyncio.create_task(consumer.keep(), name=f"bus:{consumer.name}:consumer"))

    async def _publishing_channel(self, connection: AbstractRobustConnection,
                                  ) -> tuple[AbstractRobustChannel, aio_pika.abc.AbstractExchange]:
        # Unroutable publishes raise (PublishError) instead of vanishing: see _send.
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        try:
            exchange = await channel.declare_exchange(
                NOTIFY_EXCHANGE, aio_pika.ExchangeType.TOPIC, durable=self._notify_durable, auto_delete=False)
        except aio_pika.exceptions.ChannelPreconditionFailed as exc:
            raise errors.Unavailable(self._exchange_mismatch(exc)) from None
        return channel, exchange

    async def _renew_publisher(self, refused: AbstractRobustChannel | None) -> None:
        """Publish on a new channel from now on, in place of `refused`, whose publishes the
        broker nacks or never confirms while the connection is up: after a RabbitMQ node with
        quorum queue leaders on it was killed, a channel that published to them has been seen
        to be refused for over a minute, while a new channel's publishes were confirmed."""
        assert self._connection is not None
        async with self._renewing:
            if self._publisher is not refused or self._closing.is_set():
                return   # another publish renewed it already
            async with asyncio.timeout(CONFIRM_TIMEOUT):
                self._publisher, self._notifications = await self._publishing_channel(self._connection)
            log.info("publishing on a new channel: the broker kept refusing the old one")
        with contextlib.suppress(*_LOST):
            async with asyncio.timeout(CONFIRM_TIMEOUT):
                await refused.close()

    def _reply_queue_declared(self) -> None:
        declared, self._replies_declared = self._replies_declared, Flag()
        declared.set()

    async def _declare_replies(self, channel: aio_pika.abc.AbstractChannel) -> AbstractQueue:
        return await channel.declare_queue(self._reply_queue, exclusive=True, timeout=CONFIRM_TIMEOUT)

    async def _declare_notes(self, channel: aio_pika.abc.AbstractChannel) -> AbstractQueue:
        notes = await channel.declare_queue(f"{self._reply_queue}.notifications", exclusive=True,
                                            timeout=CONFIRM_TIMEOUT)
        for priority in NOTIFY_PRIORITIES:
            await notes.bind(NOTIFY_EXCHANGE, routing_key=f"{NOTIFY_TOPIC}.{priority}", timeout=CONFIRM_TIMEOUT)
        return notes

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
        for keeper in self._keepers:
            keeper.cancel()
        if self._keepers:
            # Bounded: a close must end even if a library swallowed a keeper's cancellation.
            _, stuck = await asyncio.wait(self._keepers, timeout=CONFIRM_TIMEOUT)
            for keeper in stuck:
                log.warning("a consumer's keeper did not stop when told; left behind",
                            task=keeper.get_name(), stack=_stack(keeper))
        for consumer in self._intake:
            await consumer.close()
        if self._connection is not None:
            # A broker that is away does not answer a close: do not wait for it past a bound.
            with contextlib.suppress(TimeoutError, *_LOST):
                async with asyncio.timeout(CONFIRM_TIMEOUT):
                    await self._connection.close()

    def heard(self) -> bool:
        return True   # the nova exchange's queues keep what is sent for listeners to come

    # -- sending

    async def call(self, topic: str, msg: Message, *, context: RequestContext | None = None,
                   timeout: float | None = None, version: str | None = None) -> Message | None:
        timeout = self.call_timeout if timeout is None else timeout
        body = messages.encode(msg, context, version)   # before anything waits: it may refuse
        correlation_id = uuid.uuid4().hex
        reply = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = reply
        message = aio_pika.Message(
            body, content_type="application/json", message_id=uuid.uuid4().hex,
            correlation_id=correlation_id, reply_to=self._reply_queue,
            # Persistent so that a broker restart does not lose it, yet it expires with the
            # caller's patience: nobody should act on a question nobody waits for any more.
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT, expiration=timeout,
            headers={REDELIVER_HEADER: True} if type(msg).REDELIVERABLE else None)
        async def sent_and_answered() -> bytes:
            deadline = asyncio.get_running_loop().time() + timeout
            declared = self._replies_declared
            await self._send(topic, message, deadline=deadline)
            while type(msg).REDELIVERABLE:
                await asyncio.wait((reply, declared.future()), return_when=asyncio.FIRST_COMPLETED)
                if reply.done():
                    break
                # The reply queue was declared again (it is not durable: a broker restart takes it,
                # and an answer in it or on its way), while this answer was due. Asking twice is
                # harmless here: ask again, as a new message (a copy of the same one is dropped
                # by a consumer that handled it).
                declared = self._replies_declared
                log.info("asking again: the answer may have gone with the reply queue", topic=topic,
                         message=type(msg).__name__)
                await self._send(topic, _asked_again(message, deadline - asyncio.get_running_loop().time()),
                                 deadline=deadline)
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
        routing_key = f"{NOTIFY_TOPIC}.{note.priority.lower()}"
        # As kombu sends it for oslo.messaging: JSON, utf-8, persistent, priority 0.
        message = aio_pika.Message(oslo_body(note), content_type="application/json", content_encoding="utf-8",
                                   delivery_mode=aio_pika.DeliveryMode.PERSISTENT, priority=0, headers={})

        async def attempt() -> None:
            if routing_key not in self._notify_queues:
                # oslo's notifier declares the queue it publishes to (its "default queue"),
                # once per connection, with the exchange's durable and auto-delete and the
                # quorum argument when rabbit_quorum_queue is set: an oslo listener's declare
                # of the same queue is then identical.
                async with self._declaring() as channel:
                    queue = await self._declare(channel, routing_key, durable=self._notify_durable)
                    await queue.bind(NOTIFY_EXCHANGE, routing_key=routing_key, timeout=CONFIRM_TIMEOUT)
                self._notify_queues.add(routing_key)
            assert self._notifications is not None
            await self._notifications.publish(message, routing_key, mandatory=False, timeout=CONFIRM_TIMEOUT)

        try:
            await self._retrying(attempt, deadline=asyncio.get_running_loop().time() + NOTIFY_WINDOW)
        except errors.Unavailable as exc:
            log.warning("notification dropped", event_type=note.event_type, error=exc.message)

    async def _send(self, topic: str, message: aio_pika.Message, *, deadline: float) -> None:
        """Publish to `topic`'s queue (declaring it first) and wait for the broker's confirm."""
        name = queue_name(topic)

        async def attempt() -> None:
            if name not in self._declared:
                # Not restored on reconnect (a channel of its own, closed at once): the queue
                # is durable, and if the broker lost it anyway the publish comes back
                # unroutable and we declare again.
                async with self._declaring() as channel:
                    await self._declare(channel, name)
                self._declared.add(name)
            assert self._publisher is not None
            try:
                await self._publisher.default_exchange.publish(message, name, timeout=CONFIRM_TIMEOUT)
            except aio_pika.exceptions.PublishError:
                self._declared.discard(name)
                raise

        await self._retrying(attempt, deadline=deadline, unroutable_retries=True)

    @contextlib.asynccontextmanager
    async def _declaring(self) -> AsyncIterator[aio_pika.abc.AbstractChannel]:
        """A channel for declarations on the way to a publish: one the broker refuses
        (PRECONDITION_FAILED) closes this channel, not the publisher's with confirms pending."""
        assert self._connection is not None
        async with asyncio.timeout(CONFIRM_TIMEOUT):   # it waits for a connection being restored
            channel = await self._connection.channel(publisher_confirms=False)
        try:
            yield channel
        finally:
            with contextlib.suppress(*_LOST):
                await channel.close()

    async def _declare(self, channel: aio_pika.abc.AbstractChannel, name: str, *,
                       durable: bool = True) -> AbstractQueue:
        """Declare a role queue (or, with durable given, a notification queue) of the type the
        option asks for. A queue of the other type is not retried: an error that names it."""
        try:
            # Not remembered for restoring by a robust channel: those used here are closed after.
            robust = {"robust": False} if isinstance(channel, aio_pika.RobustChannel) else {}
            return await channel.declare_queue(name, durable=durable, arguments=self._queue_arguments,
                                               timeout=CONFIRM_TIMEOUT, **robust)
        except aio_pika.exceptions.ChannelPreconditionFailed as exc:
            raise errors.Unavailable(self._mismatch(name, exc), code="bus.queue_type") from None

    def _mismatch(self, name: str, exc: BaseException) -> str:
        asked, other = ("quorum", "classic") if self.quorum else ("classic", "quorum")
        return (f"RabbitMQ queue {name} exists, and not as rabbit_quorum_queue = {str(self.quorum).lower()} "
                f"declares it (a {asked} queue), and a queue's type cannot change: keep the {other} queues "
                f"(rabbit_quorum_queue = {str(not self.quorum).lower()}), or let the old setting empty the "
                f"queue, stop every nova-async process, delete it (rabbitmqctl delete_queue {name}) and "
                f"start them with the new one (README: Split over processes and hosts). "
                f"RabbitMQ said: {_reason(exc)}")

    def _exchange_mismatch(self, exc: BaseException) -> str:
        return (f"RabbitMQ exchange {NOTIFY_EXCHANGE} exists, and not as rabbit_quorum_queue = "
                f"{str(self.quorum).lower()} declares it (durable={self._notify_durable}, as oslo.messaging "
                f"does with that option): set the option as Nova's services on this broker have it, or "
                f"remove the exchange (it goes when every node restarts if it is not durable); README: "
                f"Split over processes and hosts. RabbitMQ said: {_reason(exc)}")

    async def _retrying(self, attempt: Callable[[], Awaitable[object]], *, deadline: float,
                        unroutable_retries: bool = False) -> None:
        """Run `attempt` until it succeeds or `deadline` passes, waiting out reconnections."""
        assert self._publisher is not None
        loop = asyncio.get_running_loop()
        pause = 0.05
        while True:
            publisher = self._publisher
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
            if not isinstance(failure, aio_pika.exceptions.PublishError):   # not unroutable
                log.warning("publish failed; retrying when the broker is back", error=repr(failure),
                            retry_in=round(pause, 2))
            else:
                # The broker is there and the queue is not (yet): a reply queue whose caller is
                # reconnecting, or died; quietly, since a dead node's callers make many of these.
                log.debug("message unroutable; retrying while its queue may still come", error=repr(failure),
                          retry_in=round(pause, 2))
            # There is nothing to wait on that says a lost connection has been noticed, so pause
            # first (the connection may still look up), then wait for the channel to be restored.
            await asyncio.sleep(min(pause, remaining))
            pause = min(pause * 2, 1.0)
            nacked = (isinstance(failure, aio_pika.exceptions.DeliveryError)
                      and not isinstance(failure, aio_pika.exceptions.PublishError))
            if (nacked or isinstance(failure, TimeoutError)) and self._up:
                with contextlib.suppress(*_LOST):   # TimeoutError among them
                    await self._renew_publisher(publisher)
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
        arrived: asyncio.Queue[AbstractIncomingMessage] = asyncio.Queue()

        async def arrive(message: AbstractIncomingMessage) -> None:
            arrived.put_nowait(message)

        consumer = KeptConsumer(self._connection, queue_name(topic), topic=topic, prefetch=concurrency,
                                declare=lambda channel: self._declare(channel, queue_name(topic)),
                                deliver=arrive, waiting=arrived.qsize,
                                reconnect_interval=self._reconnect_interval)
        await consumer.start()
        seen = _Seen()

        async def handle(message: AbstractIncomingMessage) -> None:
            try:
                await self._handle(topic, message, handler, seen)
            finally:
                consumer.settled(message)

        stopped = asyncio.create_task(first_set(stops), name=f"bus:{topic}:closing")
        try:
            async with asyncio.TaskGroup() as tg:
                keeper = tg.create_task(consumer.keep(), name=f"bus:{topic}:consumer")
                while (message := await next_unless(arrived, stopped)) is not None:
                    tg.create_task(handle(message), name=f"bus:{topic}:handler")
                keeper.cancel()
                await consumer.detach()
                # Delivered but not started: back to the queue for another consumer.
                while not arrived.empty():
                    await _settle(arrived.get_nowait().nack(requeue=True))
        finally:
            stopped.cancel()
            await asyncio.gather(stopped, return_exceptions=True)
            await consumer.close()

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
            # A call is acknowledged on arrival, unless its sender marked it redeliverable
            # (Message.REDELIVERABLE): then once answered, and a copy that dies with it leaves
            # it to another.
            redeliverable = bool((message.headers or {}).get(REDELIVER_HEADER))
            if not redeliverable:
                await _settle(message.ack())
            try:
                if not seen.begin(message_id):
                    return
                try:
                    answer = await dispatch(message.body, handler, topic)
                finally:
                    seen.end(message_id)
                await self._answer(message.reply_to, message.correlation_id or "", answer, topic)
            finally:
                if redeliverable:
                    await _settle(message.ack())
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
        message = aio_pika.Message(answer, content_type="application/json", correlation_id=correlation_id)

        async def attempt() -> None:
            assert self._publisher is not None
            await self._publisher.default_exchange.publish(message, reply_to, timeout=CONFIRM_TIMEOUT)

        try:
            # Returned as unroutable while the caller is still re-declaring its reply queue
            # after a broker restart: retried for a while.
            await self._retrying(attempt,
                                 deadline=asyncio.get_running_loop().time() + REPLY_WINDOW,
                                 unroutable_retries=True)
        except errors.Unavailable as exc:
            log.warning("answer to a call lost; the caller will time out", topic=topic, error=exc.message)


def _asked_again(message: aio_pika.Message, remaining: float) -> aio_pika.Message:
    """`message` under a new id, expiring when its caller stops waiting."""
    return aio_pika.Message(message.body, content_type=message.content_type, message_id=uuid.uuid4().hex,
                            correlation_id=message.correlation_id, reply_to=message.reply_to,
                            delivery_mode=message.delivery_mode, expiration=max(remaining, 0.001),
                            headers=message.headers)


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


def _reason(exc: BaseException) -> str:
    """The broker's own words from a refused declaration, on one line."""
    return " ".join(str(arg) for arg in exc.args if isinstance(arg, str | int)).replace("\n", " ") or repr(exc)


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


def _stack(task: asyncio.Task) -> str:
    """Where `task` waits, for a log line."""
    out = io.StringIO()
    task.print_stack(file=out)
    return out.getvalue()


async def _settle(outcome: Awaitable[None]) -> bool:
    """Ack or nack; False when the channel it came on is gone (the broker redelivers it)."""
    try:
        await outcome
        return True
    except _LOST:
        return False

