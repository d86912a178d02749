"""The in-memory transport: one inbox per topic inside this process.

Messages are still encoded to JSON on the way in and decoded on the way out, so what works
here works over a broker, and nothing shares mutable state across roles by accident."""

from __future__ import annotations

import asyncio
import collections

import structlog

from nova_async.bus import messages
from nova_async.bus.base import Bus, Handler, dispatch
from nova_async.bus.messages import Message, Notification
from nova_async.common import metrics
from nova_async.common.context import RequestContext
from nova_async.common.flags import any_set

log = structlog.get_logger("bus")

_Item = tuple[bytes, asyncio.Future[bytes] | None]


class _Inbox:
    """A topic's messages, and the futures of consumers waiting while there are none. Lighter
    than an asyncio.Queue (four deques, and a task per wait for a consumer that also watches
    for its end): a process of a thousand simulated hosts has a topic per host."""

    __slots__ = ("items", "_waiting")

    def __init__(self) -> None:
        self.items: collections.deque[_Item] = collections.deque()
        self._waiting: list[asyncio.Future[None]] = []

    def put(self, item: _Item) -> None:
        self.items.append(item)
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:   # each looks again; one gets the item
            if not waiter.done():
                waiter.set_result(None)

    async def next_unless(self, stopped: asyncio.Future[None]) -> _Item | None:
        """The next item, or None once `stopped` is done with none here."""
        while not self.items:
            if stopped.done():
                return None
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)

            # A callback on `stopped` rather than asyncio.wait on both: an idle topic waits
            # once per message it gets, and wait's own futures and set cost more than this.
            def wake(_: asyncio.Future[None], waiter: asyncio.Future[None] = waiter) -> None:
                if not waiter.done():
                    waiter.set_result(None)
            stopped.add_done_callback(wake)
            try:
                await waiter
            finally:
                stopped.remove_done_callback(wake)
                waiter.cancel()
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
        return self.items.popleft()


class MemoryBus(Bus):
    def __init__(self) -> None:
        super().__init__()
        self._inboxes: dict[str, _Inbox] = {}

    def _inbox(self, topic: str) -> _Inbox:
        inbox = self._inboxes.get(topic)
        if inbox is None:
            inbox = self._inboxes[topic] = _Inbox()
            metrics.read_queue_depth(topic, inbox.items.__len__)
        return inbox

    def depth(self, topic: str) -> int:
        return len(self._inbox(topic).items)

    def _put(self, topic: str, item: _Item) -> None:
        self._inbox(topic).put(item)

    async def call(self, topic: str, msg: Message, *, context: RequestContext | None = None,
                   timeout: float | None = None, version: str | None = None) -> Message | None:
        timeout = self.call_timeout if timeout is None else timeout
        reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._put(topic, (messages.encode(msg, context, version), reply))

        async def answered() -> bytes:
            return await reply
        return await self.answer_within(topic, msg, timeout, answered)

    async def cast(self, topic: str, msg: Message, *, context: RequestContext | None = None,
                   version: str | None = None) -> None:
        self._put(topic, (messages.encode(msg, context, version), None))

    async def publish(self, note: Notification) -> None:
        self._deliver(note)

    async def consume(self, topic: str, handler: Handler, *, concurrency: int = 64,
                      until: asyncio.Event | None = None) -> None:
        inbox = self._inbox(topic)
        slots = asyncio.Semaphore(concurrency)
        stops = self._stops(until)
        closing = any_set(stops)
        try:
            async with asyncio.TaskGroup() as tg:
                while not any(e.is_set() for e in stops):
                    await slots.acquire()
                    # a message, or the end, whichever comes first (on a busy topic, at once)
                    arrived = await inbox.next_unless(closing)
                    if arrived is None:
                        slots.release()
                        break
                    data, reply = arrived
                    tg.create_task(self._handle(topic, data, reply, handler, slots),
                                   name=f"bus:{topic}:handler")
        finally:
            closing.cancel()
            await asyncio.gather(closing, return_exceptions=True)

    @staticmethod
    async def _handle(topic: str, data: bytes, reply: asyncio.Future[bytes] | None,
                      handler: Handler, slots: asyncio.Semaphore) -> None:
        try:
            answer = await dispatch(data, handler, topic)
            if reply is not None and not reply.done():
                reply.set_result(answer)
            elif reply is None:
                # A cast has nobody to tell; its failure is logged where it happened.
                _, error = messages.decode_reply(answer)
                if error is not None:
                    log.warning("cast failed", topic=topic, error=error.message, code=error.code)
        finally:
            slots.release()

