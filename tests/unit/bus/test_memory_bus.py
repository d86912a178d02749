"""The in-memory bus: calls, casts, errors across roles, timeouts, versions, draining."""

import asyncio
import pytest

from nova_async.bus import messages
from nova_async.bus.base import dispatch, unwrap
from nova_async.bus.memory import MemoryBus, _Inbox
from nova_async.bus.messages import Message
from nova_async.common import errors, metrics
from nova_async.common.context import RequestContext
from tests.waiting import until


class Ping(Message, frozen=True, kw_only=True):
    n: int


class Pong(Message, frozen=True, kw_only=True):
    n: int


async def serve(bus, topic, handler):
    task = asyncio.create_task(bus.consume(topic, handler), name=f"test:{topic}")
    return task


async def stop(bus, *tasks):
    bus.stop_intake()
    await asyncio.gather(*tasks)


async def test_call_returns_the_typed_answer_and_carries_context():
    bus = MemoryBus()
    seen = []

    async def handler(msg, ctx):
        seen.append(ctx)
        return Pong(n=msg.n + 1)

    task = await serve(bus, "t", handler)
    ctx = RequestContext(user_id="u", project_id="p", request_id="req-1")
    assert await bus.call("t", Ping(n=1), context=ctx) == Pong(n=2)
    assert seen == [ctx]
    await stop(bus, task)


async def test_errors_cross_the_bus_as_their_own_class():
    bus = MemoryBus()

    async def handler(msg, ctx):
        raise errors.NotFound("no such thing", code="thing.missing")

    task = await serve(bus, "t", handler)
    with pytest.raises(errors.NotFound) as info:
        await bus.call("t", Ping(n=1))
    assert info.value.message == "no such thing" and info.value.code == "thing.missing"
    await stop(bus, task)


async def test_unexpected_exceptions_become_internal_errors():
    bus = MemoryBus()

    async def handler(msg, ctx):
        raise RuntimeError("boom")

    task = await serve(bus, "t", handler)
    with pytest.raises(errors.NovaAsyncError) as info:
        await bus.call("t", Ping(n=1))
    assert "boom" in info.value.message and info.value.status == 500
    await stop(bus, task)


async def test_call_without_consumer_times_out_clearly():
    with pytest.raises(errors.BusTimeout, match="no answer from nobody"):
        await MemoryBus().call("nobody", Ping(n=1), timeout=0.05)


async def test_another_major_or_a_newer_minor_is_refused_never_misread():
    """msgspec drops fields it does not know: a receiver handed a newer minor would act on
    part of it. It answers version_mismatch instead; an older minor it reads."""
    async def handler(msg, ctx):
        return Pong(n=0)

    def at(version: bytes) -> bytes:
        return messages.encode(Ping(n=1), None).replace(b'"version":"1.0"', b'"version":"' + version + b'"')

    for newer in (b"2.0", b"1.7", b"0.9"):
        with pytest.raises(errors.Conflict, match=f"Ping version {newer.decode()} cannot be handled") as refused:
            unwrap(await dispatch(at(newer), handler, "t"))
        assert refused.value.code == "version_mismatch"
    assert unwrap(await dispatch(at(b"1.0"), handler, "t")) == Pong(n=0)


async def test_casts_queued_before_a_consumer_starts_are_delivered_and_drained():
    bus = MemoryBus()
    got = []

    async def handler(msg, ctx):
        await asyncio.sleep(0.01)
        got.append(msg.n)

    for i in range(5):
        await bus.cast("t", Ping(n=i))
    task = await serve(bus, "t", handler)
    await until(lambda: got, lambda handled: len(handled) == 5, what="the five casts handled")
    await stop(bus, task)
    assert sorted(got) == [0, 1, 2, 3, 4]


async def test_stop_intake_waits_for_messages_in_flight():
    bus = MemoryBus()
    started, release, finished = asyncio.Event(), asyncio.Event(), []

    async def handler(msg, ctx):
        started.set()
        await release.wait()
        finished.append(msg.n)

    task = await serve(bus, "t", handler)
    await bus.cast("t", Ping(n=7))
    await started.wait()
    bus.stop_intake()
    await asyncio.sleep(0.01)
    assert not task.done()
    release.set()
    await task
    assert finished == [7]


async def test_an_inbox_hands_out_items_and_ends_only_when_empty():
    inbox, stopped = _Inbox(), asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(inbox.next_unless(stopped))
    await asyncio.sleep(0)
    inbox.put((b"one", None))
    assert await asyncio.wait_for(waiting, 5) == (b"one", None)
    inbox.put((b"two", None))
    stopped.set_result(None)
    assert await inbox.next_unless(stopped) == (b"two", None)   # what came first goes out first
    assert await inbox.next_unless(stopped) is None
    assert not inbox._waiting


async def test_the_queue_depth_gauge_reads_what_waits_when_scraped():
    def depth(topic):
        line = f'nova_async_bus_queue_depth{{topic="{topic}"}} '
        return [float(row[len(line):]) for row in metrics.render().decode().splitlines() if row.startswith(line)]

    bus = MemoryBus()
    await bus.cast("depth-topic", Ping(n=1))
    await bus.cast("depth-topic", Ping(n=2))
    assert depth("depth-topic") == [2.0]
    inbox = bus._inbox("depth-topic")
    inbox.items.popleft()
    assert depth("depth-topic") == [1.0]   # nothing wrote it: the scrape asked the inbox
