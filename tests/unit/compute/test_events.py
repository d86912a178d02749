"""libvirtaio's loop, as libvirt's threads use it (compute/events.py): libvirt asks for a
socket watch or a timer from the thread that makes a call, and only the loop thread may
touch the loop."""

from __future__ import annotations

import asyncio
import socket
import threading

from nova_async.compute.events import LoopFromAnyThread
from tests.waiting import until


async def test_watches_asked_for_from_another_thread_are_made_on_the_loop_in_order():
    loop = asyncio.get_running_loop()
    proxy = LoopFromAnyThread(loop)
    ours, theirs = socket.socketpair()
    heard: list[bool] = []

    def readable() -> None:
        heard.append(threading.get_ident() == threading.main_thread().ident)
        ours.recv(100)

    try:
        # watched, unwatched and watched again, all from a thread, as libvirt's calls do
        def from_a_call() -> None:
            proxy.add_reader(ours.fileno(), readable)
            proxy.remove_reader(ours.fileno())
            proxy.add_reader(ours.fileno(), readable)

        await asyncio.to_thread(from_a_call)
        theirs.send(b"x")
        await until(lambda: heard, what="the watch made from another thread")
        assert heard == [True]   # on the loop's thread

        # the last request wins, also when it comes from the loop thread after a thread's
        await asyncio.to_thread(proxy.add_writer, ours.fileno(), lambda: None)
        proxy.remove_writer(ours.fileno())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not loop.remove_writer(ours.fileno())   # nothing left to remove
    finally:
        loop.remove_reader(ours.fileno())
        ours.close()
        theirs.close()


async def test_a_timer_started_and_cancelled_from_another_thread():
    # In debug mode asyncio refuses a task made off its thread: the loop itself would raise.
    loop = asyncio.get_running_loop()
    proxy = LoopFromAnyThread(loop)
    debug = loop.get_debug()
    loop.set_debug(True)
    try:
        await _timer_from_another_thread(proxy)
    finally:
        loop.set_debug(debug)


async def _timer_from_another_thread(proxy) -> None:
    ran_on: list[int] = []
    ended = asyncio.Event()

    async def timer() -> None:
        ran_on.append(threading.get_ident())
        try:
            await asyncio.sleep(3600)
        finally:
            ended.set()

    task = await asyncio.to_thread(asyncio.ensure_future, timer(), loop=proxy)  # as libvirtaio does
    await until(lambda: ran_on, what="the timer running")
    assert ran_on == [threading.get_ident()]   # the loop's thread
    await asyncio.to_thread(task.cancel)
    await asyncio.wait_for(ended.wait(), 10)

    # from the loop thread, a plain task
    here = asyncio.ensure_future(asyncio.sleep(0), loop=proxy)
    assert isinstance(here, asyncio.Task)
    await here
