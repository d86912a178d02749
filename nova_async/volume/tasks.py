"""The volume role's background work (a create from an image, a delete, an extend): every
task is named and kept in one set the role owns, so none is fire-and-forget; the role
drains the set when it stops, and cancels what is still running after its deadline (a
restart's recovery finishes that work from the rows' states)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

log = structlog.get_logger("volume")


class Work:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def spawn(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(self._logged(name, coro), name=name)
        self._tasks.add(task)
        self._idle.clear()
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not self._tasks:
            self._idle.set()

    @staticmethod
    async def _logged(name: str, coro: Coroutine[Any, Any, None]) -> None:
        # The work records its own failure in the row (status error…); this is the backstop
        # for a failure in doing so (the database away): the row stays in its transient
        # state and the next start finishes it.
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("volume work failed", task=name)

    async def idle(self) -> None:
        """Until nothing is running (tests, and the drain at stop)."""
        await self._idle.wait()

    async def drain(self, timeout: float = 30.0) -> None:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.wait(list(self._tasks))
