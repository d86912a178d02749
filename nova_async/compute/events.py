"""libvirt's events on the service's asyncio loop (libvirtaio).

libvirt takes one event-loop implementation per process, for good, and a connection
delivers events only if it was opened after that. So the compute role calls `enable()`
before it opens any connection: the first call registers libvirtaio on the running loop.
Should the process later run another loop (only test runners do that), connections opened
there get no events; `enable()` says so, and the role relies on its periodic
reconciliation alone.

libvirt asks its event loop to watch a socket or arm a timer from whichever thread makes a
call: for a daemon's connection, the executor thread running it (about two such requests per
call, measured). libvirtaio does both at once, on that thread. Watching a socket that way is
sound (epoll's own calls are thread-safe, and doing it at once keeps its order with the
socket's close, so a reused descriptor number never gets a stale watch). Tasks are another
matter: libvirtaio makes one for each running timer and for each removed watch's free
callback (two at every connection's close, on the closing thread, measured), and a task may
only be made or cancelled on the loop's own thread. So libvirtaio gets the loop through
`LoopFromAnyThread`, which makes a task asked for elsewhere on the loop's thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

import libvirtaio


class LoopFromAnyThread:
    """The loop as libvirtaio uses it: a task asked for off the loop's thread (a timer, a free
    callback) is made on it, and returned as a future whose cancel() is safe from any thread;
    everything else is the loop's own."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._thread = threading.get_ident()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loop, name)

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
