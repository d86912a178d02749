"""Flags: waits on several events, or with a deadline, that cost no task when the events are
Flags, and behave as before on plain asyncio.Events."""

from __future__ import annotations

import asyncio

from nova_async.common.flags import Flag, any_set, first_set, set_within


async def test_waiting_on_flags_makes_no_task():
    a, b = Flag(), Flag()
    before = len(asyncio.all_tasks())
    waiting = asyncio.ensure_future(first_set([a, b]))
    sleeping = asyncio.ensure_future(set_within(a, 60))
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before + 2   # the two waiters themselves, nothing under them
    b.set()
    await asyncio.wait_for(waiting, 5)
    assert not sleeping.done()
    a.set()
    assert await asyncio.wait_for(sleeping, 5) is True


async def test_a_deadline_passes_and_says_so():
    flag = Flag()
    assert await set_within(flag, 0.01) is False
    flag.set()
    assert await set_within(flag, 60) is True   # set already: at once


async def test_a_cleared_flag_is_waited_for_again():
    flag = Flag()
    flag.set()
    assert flag.future().done()
    flag.clear()
    assert not flag.future().done()
    assert await set_within(flag, 0.01) is False


async def test_a_cancelled_waiter_leaves_the_shared_future_alone():
    flag = Flag()
    waiter = asyncio.ensure_future(first_set([flag]))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert not flag.future().cancelled()
    flag.set()
    assert await set_within(flag, 60) is True


async def test_plain_events_still_work_and_leave_no_task_behind():
    a, b = asyncio.Event(), Flag()
    before = len(asyncio.all_tasks())
    waiting = asyncio.ensure_future(first_set([a, b]))
    await asyncio.sleep(0)
    a.set()
    await asyncio.wait_for(waiting, 5)
    assert len(asyncio.all_tasks()) == before
    assert await set_within(asyncio.Event(), 0.01) is False
    assert len(asyncio.all_tasks()) == before


async def test_any_set_is_a_future_that_leaves_nothing_behind_on_the_flags():
    a, b = Flag(), Flag()
    before = len(asyncio.all_tasks())
    either = any_set([a, b])
    assert len(asyncio.all_tasks()) == before and not either.done()
    b.set()
    await asyncio.wait_for(either, 5)
    later = [any_set([a]) for _ in range(100)]
    for one in later:
        one.cancel()
    await asyncio.sleep(0)   # each cancellation's callback takes its own off a's future
    # (a Future's callbacks are only seen through this private attribute)
    assert not a.future()._callbacks   # type: ignore[attr-defined]
    a.set()
    await asyncio.sleep(0)
    assert all(one.cancelled() for one in later)


async def test_any_set_of_a_plain_event_still_works():
    plain, flag = asyncio.Event(), Flag()
    either = any_set([plain, flag])
    plain.set()
    await asyncio.wait_for(either, 5)
