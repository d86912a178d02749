"""libvirtaio's loop, as libvirt's threads use it (compute/events.py): libvirt arms a timer
from the thread that makes a call, libvirtaio makes it a task, and only the loop's thread may
make or cancel one."""

from __future__ import annotations

import asyncio
import threading

from nova_async.compute.events import LoopFromAnyThread
from tests.waiting import until


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
