"""Schedulers in several copies (several `nova-async serve` processes) read the same hosts and
race for the same room: placement's claim decides, and the copy it refuses places its
request elsewhere. And a claim whose answer is lost is settled, not failed."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from nova_async.common import errors
from nova_async.placement.client import PlacementClient
from nova_async.scheduler.manager import Scheduler
from tests.harness import running
from tests.integration.scheduler.test_select import Cloud, new, spec


class Racing(PlacementClient):
    """A scheduler copy's placement client whose first claim waits at `barrier` until every
    copy has chosen its host: all of them decide on the same view of the hosts."""

    def __init__(self, bus, barrier: asyncio.Barrier) -> None:
        super().__init__(bus)
        self.barrier: asyncio.Barrier | None = barrier
        self.asked: Counter[str] = Counter()

    async def _race(self) -> None:
        if self.barrier is not None:
            barrier, self.barrier = self.barrier, None
            await barrier.wait()

    async def claim(self, *args, **kw):
        self.asked["claim"] += 1
        await self._race()
        return await super().claim(*args, **kw)

    async def claim_many(self, claims, **kw):
        self.asked["claim_many"] += 1
        await self._race()
        return await super().claim_many(claims, **kw)


class Losing(PlacementClient):
    """Loses the answers of the first `lose` ClaimMany calls: after placement made the claim
    (`made`), or before the call reached it."""

    def __init__(self, bus, *, lose: int, made: bool) -> None:
        super().__init__(bus)
        self.lose, self.made = lose, made
        self.asked: Counter[str] = Counter()

    async def claim(self, *args, **kw):
        self.asked["claim"] += 1
        return await super().claim(*args, **kw)

    async def claim_many(self, claims, **kw):
        self.asked["claim_many"] += 1
        if self.lose:
            self.lose -= 1
            if self.made:
                assert (await super().claim_many(claims, **kw)).ok
            raise errors.BusTimeout("no answer from placement to ClaimMany within 60 s")
        return await super().claim_many(claims, **kw)


@pytest.mark.parametrize("max_placement_results", [50, 0], ids=["batches", "one-by-one"])
async def test_copies_racing_for_the_last_room_place_both_requests(pool, tmp_path, max_placement_results):
    async with running(pool, ["placement", "scheduler"], tmp_path,
                       scheduler={"max_placement_results": max_placement_results}) as h:
        cloud = Cloud(h)
        # both copies weigh "roomy" best (more free RAM), and it has room for one more
        await cloud.add_host("roomy", memory_mb=2048)
        await cloud.add_host("small", memory_mb=1024)
        assert (await cloud.placement.claim(new(), cloud.nodes["roomy"], {"MEMORY_MB": 512}, "p", "u")).ok
        barrier = asyncio.Barrier(2)
        first = h.roles["scheduler"].scheduler
        first.placement = first.batches.placement = Racing(h.bus, barrier)
        second = Scheduler(h.cells, Racing(h.bus, barrier), h.deps.settings.scheduler)
        async with second.batches.lines:
            uuids = [new(), new()]
            results = await asyncio.gather(first.select_destinations([uuids[0]], spec()),
                                           second.select_destinations([uuids[1]], spec()))
        assert sorted(s.chosen.host for [s] in results) == ["roomy", "small"]
        for instance, [s] in zip(uuids, results):
            assert await cloud.placement.allocations(instance) == {
                s.chosen.provider_uuid: {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}}
        assert await cloud.used("roomy") == {"VCPU": 1, "MEMORY_MB": 1536, "DISK_GB": 10}
        assert await cloud.used("small") == {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


@pytest.mark.parametrize("made", [True, False], ids=["claim-made", "claim-never-made"])
async def test_a_lost_claim_many_answer_is_settled_and_the_batch_placed(pool, tmp_path, made):
    async with running(pool, ["placement", "scheduler"], tmp_path) as h:
        cloud = Cloud(h)
        for name in ("a", "b"):
            await cloud.add_host(name, memory_mb=4096)
        scheduler = h.roles["scheduler"].scheduler
        scheduler.placement = scheduler.batches.placement = losing = Losing(h.bus, lose=1, made=made)
        uuids = [new() for _ in range(6)]
        results = await asyncio.gather(*(scheduler.select_destinations([u], spec()) for u in uuids))
        for instance, [s] in zip(uuids, results):
            assert await cloud.placement.allocations(instance) == {
                s.chosen.provider_uuid: {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}}
        used = [await cloud.used(name) for name in ("a", "b")]
    assert sum(u["MEMORY_MB"] for u in used) == 6 * 1024
    assert await pool.fetchval("SELECT count(DISTINCT consumer_id) FROM allocations") == 6
    # the lost batch's claim was sent again, not undone into claims one by one
    assert losing.asked["claim"] == 0 and losing.asked["claim_many"] >= 2


async def test_a_claim_many_never_answered_falls_back_to_claims_one_by_one(pool, tmp_path):
    async with running(pool, ["placement", "scheduler"], tmp_path) as h:
        cloud = Cloud(h)
        await cloud.add_host("a", memory_mb=4096)
        scheduler = h.roles["scheduler"].scheduler
        # every send of the batch's claim lost (each made): placement looks out of reach
        scheduler.placement = scheduler.batches.placement = losing = Losing(h.bus, lose=3, made=True)
        uuids = [new() for _ in range(3)]
        results = await asyncio.gather(*(scheduler.select_destinations([u], spec()) for u in uuids))
        assert {s.chosen.host for [s] in results} == {"a"}
        used = await cloud.used("a")
    assert used == {"VCPU": 3, "MEMORY_MB": 3072, "DISK_GB": 30}
    assert await pool.fetchval("SELECT count(DISTINCT consumer_id) FROM allocations") == 3
    assert losing.asked["claim"] >= 1


class Meanwhile(PlacementClient):
    """Runs `before` once, just before the first claim reaches placement: what other writers
    (another copy, a delete) did between this copy's look at the hosts and its claim."""

    def __init__(self, bus, before) -> None:
        super().__init__(bus)
        self.before = before

    async def claim(self, *args, **kw):
        if self.before is not None:
            before, self.before = self.before, None
            await before()
        return await super().claim(*args, **kw)


async def test_a_request_refused_everywhere_it_looked_looks_again(pool, tmp_path):
    async with running(pool, ["placement", "scheduler"], tmp_path, scheduler={"max_placement_results": 0}) as h:
        cloud = Cloud(h)
        await cloud.add_host("a", memory_mb=1024)
        await cloud.add_host("b", memory_mb=1024)
        leaving, rival = new(), new()
        assert (await cloud.placement.claim(leaving, cloud.nodes["b"], {"MEMORY_MB": 1024}, "p", "u")).ok

        async def meanwhile():
            # another copy takes a's room; b's server is deleted and frees b
            assert (await cloud.placement.claim(rival, cloud.nodes["a"], {"MEMORY_MB": 1024}, "p", "u")).ok
            await cloud.placement.delete_allocations(leaving)

        scheduler = h.roles["scheduler"].scheduler
        scheduler.placement = Meanwhile(h.bus, meanwhile)
        uuid = new()
        [selection] = await scheduler.select_destinations([uuid], spec())
        assert selection.chosen.host == "b"
        assert await cloud.placement.allocations(uuid) == {
            cloud.nodes["b"]: {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}}
