"""Per-instance serialisation: one queue and one worker task per instance UUID.

Modelled on kopf's `queueing.py`: the first job for an instance starts its worker; the
worker runs that instance's jobs one after another, and ends once its queue has stayed
empty for `idle_seconds`. So a terminate that arrives while a build runs waits for the
build, and different instances never wait for each other. Every worker is owned by one
TaskGroup; `close()` lets each worker finish what it holds and end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Generic, TypeVar

import structlog

from nova_async.common import errors

log = structlog.get_logger("compute.workers")

J = TypeVar("J")
_STOP = object()


class InstanceWorkers(Generic[J]):
    def __init__(self, handler: Callable[[str, J], Awaitable[None]], *, name: str,
                 idle_seconds: float = 5.0) -> None:
        self._handler = handler
        self._name = name
        self._idle = idle_seconds
        self._queues: dict[str, asyncio.Queue[J | object]] = {}
        self._tg = asyncio.TaskGroup()
        self._closed = False

    async def __aenter__(self) -> InstanceWorkers[J]:
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        self.close()
        return await self._tg.__aexit__(et, exc, tb)

    def __len__(self) -> int:
        return len(self._queues)

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, key: str, job: J) -> None:
        """Queue `job` behind whatever instance `key` is already doing."""
        if self._closed:
            raise errors.Unavailable(f"{self._name} is shutting down")
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = asyncio.Queue()
            # Bound before the task exists: the worker copies this context, so its log lines
            # carry the instance uuid.
            with structlog.contextvars.bound_contextvars(instance_uuid=key):
                self._tg.create_task(self._work(key, queue), name=f"{self._name}:{key}")
        queue.put_nowait(job)

    def close(self) -> None:
        """Take no more jobs; each worker ends after the jobs it already holds."""
        if self._closed:
            return
        self._closed = True
        for queue in self._queues.values():
            queue.put_nowait(_STOP)

    async def _work(self, key: str, queue: asyncio.Queue[J | object]) -> None:
        try:
            while True:
                try:
                    async with asyncio.timeout(self._idle):
                        job = await queue.get()
                except TimeoutError:
                    # Nothing can be queued between this check and the return: no await.
                    if queue.empty():
                        return
                    continue
                if job is _STOP:
                    return
                try:
                    await self._handler(key, job)  # type: ignore[arg-type]
                except errors.DatabaseUnavailable as exc:
                    log.warning("instance job cut off by a database outage; picked up again when it is "
                                "back", error=exc.message)
                except Exception:
                    log.exception("instance job failed", job=type(job).__name__)
        finally:
            if self._queues.get(key) is queue:
                del self._queues[key]
