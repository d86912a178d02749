"""Shared calls: identical questions asked at once go over the bus once, each call is
answered by a request sent after it was made, errors reach every caller, and a caller that
goes away never leaves the others waiting."""

import asyncio

import pytest

from nova_async.bus.memory import MemoryBus
from nova_async.bus.messages import Message
from nova_async.bus.shared import SharedCalls
from nova_async.common import errors
from nova_async.common.context import RequestContext
from tests.waiting import until

ALICE = RequestContext(user_id="alice", project_id="p1", request_id="req-a")


class SharedAsk(Message, frozen=True, kw_only=True):
    what: str
    names: list[str] = []


class SharedTold(Message, frozen=True, kw_only=True):
    what: str
    request: int
    asker: str


class Service:
    """A handler that counts the requests it gets and answers each once `gate` is open."""

    def __init__(self, bus: MemoryBus) -> None:
        self.bus = bus
        self.requests: list[SharedAsk] = []
        self.gate = asyncio.Event()
        self.task: asyncio.Task | None = None

    async def handle(self, msg: SharedAsk, ctx: RequestContext) -> SharedTold:
        self.requests.append(msg)
        number = len(self.requests)
        await self.gate.wait()
        if msg.what == "missing":
            raise errors.NotFound(f"no {msg.what} (request {number})")
        return SharedTold(what=msg.what, request=number, asker=ctx.user_id)

    async def __aenter__(self) -> "Service":
        self.task = asyncio.create_task(self.bus.consume("shared", self.handle), name="test:shared")
        return self

    async def __aexit__(self, *exc) -> None:
        self.gate.set()
        self.bus.stop_intake()
        await self.task


def asking(shared: SharedCalls, what: str, context: RequestContext = ALICE, names=()) -> asyncio.Task:
    return asyncio.create_task(shared.call("shared", SharedAsk(what=what, names=list(names)), context=context))


async def one_on_its_way(shared: SharedCalls, service: Service, what: str, queue: int, names=()):
    """A call on its way (its request taken by the service, not answered), and `queue` identical
    calls made meanwhile, waiting."""
    first = asking(shared, what, names=names)
    await until(lambda: len(service.requests) == 1)
    queued = [asking(shared, what, names=names) for _ in range(queue)]
    await asyncio.sleep(0.01)
    return first, queued


async def test_calls_made_while_one_is_on_its_way_share_the_next_request():
    bus = MemoryBus()
    shared = SharedCalls(bus)
    async with Service(bus) as service:
        first, queued = await one_on_its_way(shared, service, "image", 9, names=["a", "b"])
        assert len(service.requests) == 1   # nobody else asked yet: they wait for the next request
        service.gate.set()
        answers = await asyncio.gather(first, *queued)
    assert len(service.requests) == 2
    assert answers[0].request == 1
    # Asked after the first request was sent: answered by the one sent after them.
    assert {a.request for a in answers[1:]} == {2}


async def test_different_questions_and_different_askers_are_not_shared():
    bus = MemoryBus()
    shared = SharedCalls(bus)
    bob = RequestContext(user_id="bob", project_id="p1")
    admin = RequestContext(user_id="alice", project_id="p1", roles=("admin",))
    async with Service(bus) as service:
        first = asking(shared, "image")
        await until(lambda: len(service.requests) == 1)
        others = [asking(shared, "network"), asking(shared, "image", names=["x"]),
                  asking(shared, "image", bob), asking(shared, "image", admin)]
        await until(lambda: len(service.requests) == 5)
        service.gate.set()
        answers = await asyncio.gather(first, *others)
    assert [a.asker for a in answers] == ["alice", "alice", "alice", "bob", "alice"]
    assert len({a.request for a in answers}) == 5


async def test_a_line_left_idle_sends_the_next_call_at_once():
    bus = MemoryBus()
    shared = SharedCalls(bus)
    async with Service(bus) as service:
        service.gate.set()
        assert (await shared.call("shared", SharedAsk(what="image"), context=ALICE)).request == 1
        assert (await shared.call("shared", SharedAsk(what="image"), context=ALICE)).request == 2
    assert shared._queued == {}


async def test_an_error_reaches_every_call_of_its_request():
    bus = MemoryBus()
    shared = SharedCalls(bus)
    async with Service(bus) as service:
        first, queued = await one_on_its_way(shared, service, "missing", 3)
        service.gate.set()
        outcomes = await asyncio.gather(first, *queued, return_exceptions=True)
    assert all(isinstance(o, errors.NotFound) for o in outcomes)
    assert [str(o.message) for o in outcomes] == ["no missing (request 1)"] + ["no missing (request 2)"] * 3
    assert shared._queued == {}


async def test_a_sender_that_goes_away_hands_its_turn_on():
    bus = MemoryBus()
    shared = SharedCalls(bus)
    async with Service(bus) as service:
        first, queued = await one_on_its_way(shared, service, "image", 3)
        first.cancel()   # the client went away while its request was on its way
        with pytest.raises(asyncio.CancelledError):
            await first
        # The calls queued behind it send now, once, without waiting for its answer.
        await until(lambda: len(service.requests) == 2)
        queued[0].cancel()   # and the first of them, sending for the others, goes away too
        await until(lambda: len(service.requests) == 3)
        service.gate.set()
        async with asyncio.timeout(10):   # (a turn not handed on would leave them waiting)
            answers = await asyncio.gather(*queued[1:])
    assert [a.request for a in answers] == [3, 3]
    assert shared._queued == {}


async def test_a_caller_cancelled_just_as_its_turn_came_passes_it_on():
    bus = MemoryBus()
    victims: list[asyncio.Task] = []

    class CancelOnHandOver(SharedCalls):
        def _next(self, key):
            super()._next(key)   # the first queued call is told it is its turn...
            for task in victims:
                task.cancel()    # ...and is cancelled before it runs

    shared = CancelOnHandOver(bus)
    async with Service(bus) as service:
        first, queued = await one_on_its_way(shared, service, "image", 3)
        victims.append(queued[0])
        service.gate.set()
        assert (await first).request == 1
        victims.clear()
        with pytest.raises(asyncio.CancelledError):
            await queued[0]
        async with asyncio.timeout(10):
            answers = await asyncio.gather(*queued[1:])
    assert [a.request for a in answers] == [2, 2]
    assert shared._queued == {}
