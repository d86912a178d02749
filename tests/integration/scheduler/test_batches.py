"""Requests that queue while the scheduler is busy are decided together (scheduler/batch.py):
one look at the hosts and one claim for the lot, with the one-request path behind it for
whatever a batch cannot settle."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from nova_async.common import errors
from nova_async.placement.client import PlacementClient
from tests.harness import running
from tests.waiting import until
from tests.integration.scheduler.test_select import Cloud, new, spec


class Counting(PlacementClient):
    """The scheduler's own placement client, counting what it asks; `before_claim_many`
    runs just before a batch's claim reaches placement (a rival writer, a held answer)."""

    def __init__(self, bus) -> None:
        super().__init__(bus)
        self.asked: Counter[str] = Counter()
        self.before_claim_many = None

    async def find_candidates(self, resources, limit=None):
        self.asked["candidates"] += 1
        return await super().find_candidates(resources, limit)

    async def claim(self, *args, **kw):
        self.asked["claim"] += 1
        return await super().claim(*args, **kw)

    async def claim_many(self, claims, **kw):
        self.asked["claim_many"] += 1
        if self.before_claim_many is not None:
            hook, self.before_claim_many = self.before_claim_many, None
            await hook(claims)
        return await super().claim_many(claims, **kw)


@pytest.fixture
async def cloud(pool, tmp_path):
    async with running(pool, ["placement", "scheduler"], tmp_path) as h:
        scheduler = h.roles["scheduler"].scheduler
        counting = Counting(h.bus)
        scheduler.placement = scheduler.batches.placement = counting
        c = Cloud(h)
        c.counting = counting
        c.direct = scheduler
        yield c


async def test_queued_requests_share_one_look_and_one_claim_and_still_spread(cloud):
    for name in ("a", "b", "c"):
        await cloud.add_host(name, memory_mb=4096)
    uuids = [new() for _ in range(12)]
    results = await asyncio.gather(*(cloud.direct.select_destinations([u], spec()) for u in uuids))
    hosts = Counter(s.chosen.host for r in results for s in r)
    assert hosts == {"a": 4, "b": 4, "c": 4}
    for instance, [selection] in zip(uuids, results):
        assert selection.instance_uuid == instance
        assert await cloud.placement.allocations(instance) == {
            selection.chosen.provider_uuid: {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}}
    for name in ("a", "b", "c"):
        assert await cloud.used(name) == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 40}
    # twelve requests, far fewer questions: the first batch has one request, the rest queued
    assert cloud.counting.asked["candidates"] < 12 and cloud.counting.asked["claim_many"] < 12
    assert cloud.counting.asked["claim"] == 0


async def test_what_a_batch_cannot_take_is_decided_alone_and_explained(cloud):
    await cloud.add_host("a", memory_mb=2048)
    uuids = [new() for _ in range(3)]
    results = await asyncio.gather(*(cloud.direct.select_destinations([u], spec()) for u in uuids),
                                   return_exceptions=True)
    placed = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(placed) == 2 and len(refused) == 1
    assert isinstance(refused[0], errors.NoValidHost)
    assert "placement: 0 of 1 hosts have 1024 MB MEMORY_MB free" in refused[0].message
    assert await cloud.used("a") == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


async def test_a_batch_whose_claim_is_refused_is_decided_again_one_by_one(cloud, pool):
    await cloud.add_host("a", memory_mb=2048)
    await cloud.add_host("b", memory_mb=2048)
    rival = new()

    async def rival_fills_the_first_chosen_host(claims):
        # another writer (a user's PUT, another scheduler) takes all of it meanwhile
        provider = next(iter(claims[0].allocations))
        taken = await cloud.placement.claim(rival, provider, {"MEMORY_MB": 2048}, "proj", "user")
        assert taken.ok

    cloud.counting.before_claim_many = rival_fills_the_first_chosen_host
    uuids = [new() for _ in range(3)]
    results = await asyncio.gather(*(cloud.direct.select_destinations([u], spec()) for u in uuids),
                                   return_exceptions=True)
    placed = [r[0] for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(placed) == 2 and [type(r) for r in refused] == [errors.NoValidHost]
    [taken] = await cloud.placement.allocations(rival)
    full = next(h for h, node in cloud.nodes.items() if node == taken)
    other = ({"a", "b"} - {full}).pop()
    assert {s.chosen.host for s in placed} == {other}
    assert await cloud.used(other) == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
    assert await cloud.used(full) == {"VCPU": 0, "MEMORY_MB": 2048, "DISK_GB": 0}
    # the one-request path claimed each on its own
    assert cloud.counting.asked["claim"] >= 2
    assert await pool.fetchval("SELECT count(DISTINCT consumer_id) FROM allocations") == 3


async def test_an_asker_gone_before_the_claim_answered_leaves_no_claim(cloud, pool):
    await cloud.add_host("a")
    held, go_on = asyncio.Event(), asyncio.Event()

    async def hold(claims):
        held.set()
        await go_on.wait()

    cloud.counting.before_claim_many = hold
    instance = new()
    asking = asyncio.create_task(cloud.direct.select_destinations([instance], spec()))
    await held.wait()
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    go_on.set()
    async def claims_left() -> tuple[int, int]:
        return await pool.fetchval("SELECT count(*) FROM allocations"), len(cloud.direct.batches.lines)

    # The batch finishes on its own, then gives the claim back.
    await until(claims_left, lambda left: left == (0, 0), what="no allocations and no batch deciding")
    assert await cloud.placement.allocations(instance) == {}
    assert await cloud.used("a") == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}


async def test_a_batch_that_looks_while_another_claims_leaves_that_claim_its_room(cloud):
    # a takes three instances, b one (a has more of everything: it weighs best while it has
    # more left). The first batch chooses a twice; while its claim is on its way, the next
    # batch must not see a's room as if nothing were being taken there.
    await cloud.add_host("a", vcpus=3, memory_mb=3072, disk_gb=30)
    await cloud.add_host("b", vcpus=1, memory_mb=1024, disk_gb=10)
    held, go_on = asyncio.Event(), asyncio.Event()

    async def hold(claims):
        held.set()
        await go_on.wait()

    cloud.counting.before_claim_many = hold
    first = [asyncio.create_task(cloud.direct.select_destinations([new()], spec())) for _ in range(2)]
    await held.wait()
    second = await asyncio.gather(*(cloud.direct.select_destinations([new()], spec()) for _ in range(2)))
    go_on.set()
    first = await asyncio.gather(*first)
    assert Counter(s.chosen.host for r in first for s in r) == {"a": 2}
    assert Counter(s.chosen.host for r in second for s in r) == {"a": 1, "b": 1}
    # both batches claimed whole: nothing was refused and decided again one by one
    assert cloud.counting.asked["claim_many"] == 2 and cloud.counting.asked["claim"] == 0
    assert await cloud.used("a") == {"VCPU": 3, "MEMORY_MB": 3072, "DISK_GB": 30}


async def test_the_same_instance_asked_twice_at_once_is_claimed_once(cloud, pool):
    # (a boot request redelivered over RabbitMQ while the first copy is still being decided)
    await cloud.add_host("a")
    instance = new()
    first, second = await asyncio.gather(cloud.direct.select_destinations([instance], spec()),
                                         cloud.direct.select_destinations([instance], spec()))
    assert first[0].chosen.host == second[0].chosen.host == "a"
    assert await pool.fetchval("SELECT count(*) FROM consumers") == 1
    assert await cloud.used("a") == {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
