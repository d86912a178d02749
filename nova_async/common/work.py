"""A role's background work (the volume role's creates from an image, deletes, extends; the
image role's import tasks): every task is named and belongs to a TaskGroup that the role
enters for as long as it runs (`async with work`), so none is fire-and-forget. Leaving it
lets what is running finish within the drain's deadline and cancels the rest (a restart's
recovery finishes or fails that work from the rows' states)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from types import TracebackType
from typing import Any

import structlog

from nova_async.common import errors

log = structlog.get_logger("work")


class Work:
    def __init__(self, service: str, drain_within: float = 30.0) -> None:
        self._service = service
        self._tg: asyncio.TaskGroup | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._drain_within = drain_within

    async def __aenter__(self) -> Work:
        tg = asyncio.TaskGroup()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        tg, self._tg = self._tg, None  # later work is refused
        assert tg is not None
        try:
            await asyncio.wait_for(self._idle.wait(), self._drain_within)
        except TimeoutError:
            for task in list(self._tasks):
                task.cancel()
        finally:
            # The tasks log their own failures (`_logged`): the group has none to raise.
            await tg.__aexit__(et, exc, tb)

    def spawn(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        if self._tg is None:
            coro.close()
            raise errors.Unavailable(f"the {self._service} service is not running")
        task = self._tg.create_task(self._logged(name, coro), name=name)
        self._tasks.add(task)
        self._idle.clear()
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not self._tasks:
            self._idle.set()

    async def _logged(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        # The work records its own failure in the row (status error…); this is the backstop
        # for a failure in doing so (the database away): the row stays in its transient
        # state and the next start finishes it.
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background work failed", service=self._service, task=name)

    async def idle(self) -> None:
        """Until nothing is running (tests)."""
        await self._idle.wait()
