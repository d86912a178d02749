"""Events that long-lived loops wait on without a task per wait.

`asyncio.wait` takes futures as they are but wraps a coroutine such as `event.wait()` in a
task of its own, and so does `asyncio.wait_for` (Python 3.11): one more task made and
destroyed at every wait. A service with a thousand simulated compute hosts slept in some
7,000 such tasks (each host's periodic loops, bus consumer and resume watch), half of all
its tasks at rest. A `Flag` is an
`asyncio.Event` that also hands out one shared future, done once it is set: `first_set` and
`set_within` wait on those futures, and fall back to a task only for a plain Event; `any_set`
is a future of its own that a loop can wait on again and again."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence


class Flag(asyncio.Event):
    def __init__(self) -> None:
        super().__init__()
        self._future: asyncio.Future[None] | None = None

    def future(self) -> asyncio.Future[None]:
        """A future done once the flag is set (done already if it is), shared by every waiter:
        never cancel it."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
            if self.is_set():
                self._future.set_result(None)
        return self._future

    def set(self) -> None:
        super().set()
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    def clear(self) -> None:
        super().clear()
        if self._future is not None and self._future.done():
            self._future = None


def _waits(events: Sequence[asyncio.Event]) -> tuple[list[asyncio.Future], list[asyncio.Task]]:
    waits: list[asyncio.Future] = []
    tasks: list[asyncio.Task] = []
    for event in events:
        if isinstance(event, Flag):
            waits.append(event.future())
        else:
            tasks.append(task := asyncio.ensure_future(event.wait()))
            waits.append(task)
    return waits, tasks


async def _cancel(tasks: list[asyncio.Task]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


def any_set(events: Sequence[asyncio.Event]) -> asyncio.Future[None]:
    """A future done once any of `events` is set: for Flags, callbacks on their shared futures
    rather than a task; a task of `first_set` otherwise. Cancel it once done with it (that
    also takes its callbacks off the Flags' futures)."""
    if not all(isinstance(event, Flag) for event in events):
        return asyncio.ensure_future(first_set(events))
    combined: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    sources = [event.future() for event in events]   # type: ignore[attr-defined]

    def fire(_: asyncio.Future[None]) -> None:
        if not combined.done():
            combined.set_result(None)

    def detach(_: asyncio.Future[None]) -> None:
        for source in sources:
            source.remove_done_callback(fire)

    for source in sources:
        source.add_done_callback(fire)
    combined.add_done_callback(detach)
    return combined


async def first_set(events: Sequence[asyncio.Event]) -> None:
    """Return as soon as any of `events` is set."""
    waits, tasks = _waits(events)
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await _cancel(tasks)


async def set_within(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to `seconds` for `event`; whether it is set."""
    waits, tasks = _waits([event])
    try:
        await asyncio.wait(waits, timeout=seconds)
    finally:
        await _cancel(tasks)
    return event.is_set()
