"""libvirt's events on the service's asyncio loop (libvirtaio).

libvirt takes one event-loop implementation per process, for good, and a connection
delivers events only if it was opened after that. So the compute role calls `enable()`
before it opens any connection: the first call registers libvirtaio on the running loop.
Should the process later run another loop (only test runners do that), connections opened
there get no events; `enable()` says so, and the role relies on its periodic
reconciliation alone.

libvirt asks its event loop to watch a socket or arm a timer from whichever thread makes a
call: for a daemon's connection, the executor thread running it (about two such requests per
call). libvirtaio hands those straight to asyncio (add_reader, create_task), whose loop may
only be touched from its own thread. So libvirtaio gets the loop through `LoopFromAnyThread`,
which sends those requests to the loop thread, in the order they were made.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import libvirtaio


class LoopFromAnyThread:
    """The loop as libvirtaio uses it: watching a descriptor goes through the loop's own queue
    from any thread (from the loop thread too, so that a later request never overtakes an
    earlier one), and a task made off the loop thread is made there, returned as a future
    whose cancel() is safe from anywhere. Everything else is the loop's."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._thread = threading.get_ident()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loop, name)

    def _in_order(self, method: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(method, *args)

    def add_reader(self, fd: int, callback: Callable[..., Any], *args: Any) -> None:
        self._in_order(self.loop.add_reader, fd, callback, *args)

    def remove_reader(self, fd: int) -> None:
        self._in_order(self.loop.remove_reader, fd)

    def add_writer(self, fd: int, callback: Callable[..., Any], *args: Any) -> None:
        self._in_order(self.loop.add_writer, fd, callback, *args)

    def remove_writer(self, fd: int) -> None:
        self._in_order(self.loop.remove_writer, fd)

    def create_task(self, coro: Coroutine[Any, Any, Any], **kw: Any) -> asyncio.Task | concurrent.futures.Future:
        if threading.get_ident() == self._thread:
            return self.loop.create_task(coro, **kw)
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


def enable() -> bool:
    """Deliver libvirt events on the running loop; False if another loop already has them."""
    loop = asyncio.get_running_loop()
    current = libvirtaio.getCurrentImpl()
    if current is None:
        libvirtaio.virEventRegisterAsyncIOImpl(loop=LoopFromAnyThread(loop))  # type: ignore[arg-type]
        return True
    return getattr(current.loop, "loop", current.loop) is loop
