"""The in-memory transport: one asyncio queue per topic inside this process.

Messages are still encoded to JSON on the way in and decoded on the way out, so what works
here works over a broker, and nothing shares mutable state across roles by accident."""

from __future__ import annotations

import asyncio

import structlog

from nova_async.bus import messages
from nova_async.bus.base import Bus, Handler, dispatch, next_unless
from nova_async.bus.messages import Message, Notification
from nova_async.common import metrics
from nova_async.common.context import RequestContext
from nova_async.common.flags import first_set

log = structlog.get_logger("bus")

_Item = tuple[bytes, asyncio.Future[bytes] | None]


class MemoryBus(Bus):
    def __init__(self) -> None:
        super().__init__()
        self._queues: dict[str, asyncio.Queue[_Item]] = {}

    def _queue(self, topic: str) -> asyncio.Queue[_Item]:
        if topic not in self._queues:
            self._queues[topic] = asyncio.Queue()
        return self._queues[topic]

    def depth(self, topic: str) -> int:
        return self._queue(topic).qsize()

    def _put(self, topic: str, item: _Item) -> None:
        queue = self._queue(topic)
        queue.put_nowait(item)
        metrics.set_queue_depth(topic, queue.qsize())

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
        queue = self._queue(topic)
        slots = asyncio.Semaphore(concurrency)
        stops = self._stops(until)
        closing = asyncio.create_task(first_set(stops), name=f"bus:{topic}:closing")
        try:
            async with asyncio.TaskGroup() as tg:
                while not any(e.is_set() for e in stops):
                    await slots.acquire()
                    if queue.empty():  # wait for a message or the end, whichever comes first
                        arrived = await next_unless(queue, closing)
                        if arrived is None:
                            slots.release()
                            break
                        data, reply = arrived
                    else:  # a busy topic: no waiting machinery per message
                        data, reply = queue.get_nowait()
                    metrics.set_queue_depth(topic, queue.qsize())
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

