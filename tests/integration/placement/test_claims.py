"""Claims and providers over the bus, as the scheduler and compute hosts use them.

The headline property: however many claims race for one provider, usage never goes past
capacity, and exactly as many succeed as fit."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest

from nova_async.common import errors
from nova_async.placement import candidates, catalog, providers
from nova_async.placement import messages as m
from nova_async.placement.client import PlacementClient
from tests.harness import running


def new() -> str:
    return str(uuid.uuid4())


HOST = {"VCPU": m.InventoryRecord(total=32), "MEMORY_MB": m.InventoryRecord(total=65536)}


@pytest.fixture
async def placement(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        yield h, PlacementClient(h.bus)


async def usage(pool, provider: str) -> dict[str, int]:
    rows = await pool.fetch("SELECT i.resource_class, i.used FROM inventories i "
                            "JOIN resource_providers rp ON rp.id = i.resource_provider_id "
                            "WHERE rp.uuid = $1", provider)
    return {r["resource_class"]: r["used"] for r in rows}


async def assert_usage_is_sum_of_allocations(pool) -> None:
    drift = await pool.fetch(
        "SELECT i.resource_provider_id, i.resource_class, i.used, coalesce(sum(a.used), 0) AS real "
        "FROM inventories i LEFT JOIN allocations a USING (resource_provider_id, resource_class) "
        "GROUP BY 1, 2, 3 HAVING i.used <> coalesce(sum(a.used), 0)")
    assert not drift, f"inventories.used drifted from the allocations: {drift}"


async def test_racing_claims_never_overcommit(placement, pool):
    h, client = placement
    rp = new()
    await client.ensure_provider(rp, "busy", HOST)
    # 30 claims of 2 VCPU race for 32 VCPU: exactly 16 fit
    results = await asyncio.gather(*(client.claim(new(), rp, {"VCPU": 2, "MEMORY_MB": 512}, "p", "u")
                                     for _ in range(30)))
    assert sum(r.ok for r in results) == 16
    assert all("VCPU 2 requested" in r.reason for r in results if not r.ok)
    assert await usage(pool, rp) == {"VCPU": 32, "MEMORY_MB": 16 * 512}
    await assert_usage_is_sum_of_allocations(pool)


async def test_racing_claims_of_mixed_sizes(placement, pool):
    h, client = placement
    rp = new()
    await client.ensure_provider(rp, "busy", HOST)
    rng = random.Random(7)
    sizes = [rng.randint(1, 5) for _ in range(40)]
    results = await asyncio.gather(*(client.claim(new(), rp, {"VCPU": n}, "p", "u") for n in sizes))
    granted = sum(n for n, r in zip(sizes, results) if r.ok)
    refused = [n for n, r in zip(sizes, results) if not r.ok]
    used = (await usage(pool, rp))["VCPU"]
    assert used == granted <= 32
    # usage only grew, so whatever was refused still does not fit now
    assert refused and 32 - used < min(refused)
    await assert_usage_is_sum_of_allocations(pool)


async def test_claims_racing_with_releases(placement, pool):
    h, client = placement
    rp = new()
    await client.ensure_provider(rp, "busy", {"VCPU": m.InventoryRecord(total=8)})
    holders = [new() for _ in range(8)]
    for c in holders:
        assert (await client.claim(c, rp, {"VCPU": 1}, "p", "u")).ok
    # 8 releases and 12 new claims at once: at most 8 of the new ones can get in
    jobs = [client.delete_allocations(c) for c in holders]
    jobs += [client.claim(new(), rp, {"VCPU": 1}, "p", "u") for _ in range(12)]
    results = await asyncio.gather(*jobs)
    ok = sum(1 for r in results[8:] if r.ok)
    assert 0 <= ok <= 8 and (await usage(pool, rp))["VCPU"] == ok
    await assert_usage_is_sum_of_allocations(pool)


async def test_reclaim_is_idempotent_and_replaces(placement, pool):
    h, client = placement
    a, b, consumer = new(), new(), new()
    await client.ensure_provider(a, "a", {"VCPU": m.InventoryRecord(total=2)})
    await client.ensure_provider(b, "b", {"VCPU": m.InventoryRecord(total=2)})
    assert (await client.claim(consumer, a, {"VCPU": 2}, "p", "u")).ok
    # the provider is full, but the consumer's own claim does not count against itself
    assert (await client.claim(consumer, a, {"VCPU": 2}, "p", "u")).ok
    assert await usage(pool, a) == {"VCPU": 2}
    assert await client.allocations(consumer) == {a: {"VCPU": 2}}
    # claiming elsewhere moves the consumer
    assert (await client.claim(consumer, b, {"VCPU": 1}, "p", "u")).ok
    assert await client.allocations(consumer) == {b: {"VCPU": 1}}
    assert await usage(pool, a) == {"VCPU": 0}


async def test_refusals_are_answers_not_errors(placement, pool):
    h, client = placement
    rp = new()
    await client.ensure_provider(rp, "small", {"VCPU": m.InventoryRecord(total=4, max_unit=2, step_size=2)})
    refused = await client.claim(new(), rp, {"VCPU": 3}, "p", "u")
    assert not refused.ok and "step_size" in refused.reason
    no_class = await client.claim(new(), rp, {"MEMORY_MB": 1}, "p", "u")
    assert not no_class.ok and "no inventory of MEMORY_MB" in no_class.reason
    nowhere = await client.claim(new(), new(), {"VCPU": 2}, "p", "u")
    assert not nowhere.ok and "that does not exist" in nowhere.reason
    assert await usage(pool, rp) == {"VCPU": 0}
    assert await pool.fetchval("SELECT count(*) FROM consumers") == 0


async def test_delete_allocations_is_idempotent(placement, pool):
    h, client = placement
    rp, consumer = new(), new()
    await client.ensure_provider(rp, "h", HOST)
    assert (await client.claim(consumer, rp, {"VCPU": 4}, "p", "u")).ok
    await client.delete_allocations(consumer)
    await client.delete_allocations(consumer)
    await client.delete_allocations(new())
    assert await client.allocations(consumer) == {}
    assert await usage(pool, rp) == {"VCPU": 0, "MEMORY_MB": 0}


async def test_ensure_provider_is_idempotent(placement, pool):
    h, client = placement
    rp = new()
    generation = "SELECT generation FROM resource_providers WHERE uuid = $1"
    await asyncio.gather(*(client.ensure_provider(rp, "h", HOST) for _ in range(10)))
    assert await pool.fetchval("SELECT count(*) FROM resource_providers") == 1
    first = await pool.fetchval(generation, rp)
    await client.ensure_provider(rp, "h", HOST)  # a host refreshing: nothing changes
    assert await pool.fetchval(generation, rp) == first
    await client.ensure_provider(rp, "h", {**HOST, "DISK_GB": m.InventoryRecord(total=100)})
    assert await pool.fetchval(generation, rp) == first + 1
    found = await client.candidates({"DISK_GB": 100})
    assert [(p.uuid, p.capacity) for p in found] == [(rp, {"VCPU": 32, "MEMORY_MB": 65536, "DISK_GB": 100})]


async def test_ensure_provider_refuses_real_conflicts(placement, pool):
    h, client = placement
    rp = new()
    await client.ensure_provider(rp, "h", HOST)
    with pytest.raises(errors.Conflict, match="taken by provider"):
        await client.ensure_provider(new(), "h", HOST)
    assert (await client.claim(new(), rp, {"VCPU": 1}, "p", "u")).ok
    with pytest.raises(errors.Conflict, match="in use"):
        await client.ensure_provider(rp, "h", {"MEMORY_MB": m.InventoryRecord(total=1024)})
    with pytest.raises(errors.InvalidInput, match="reserved"):
        await client.ensure_provider(rp, "h", {"VCPU": m.InventoryRecord(total=1, reserved=2)})


async def test_candidates_respect_capacity_and_units(placement, pool):
    h, client = placement
    roomy, tight, stepped = new(), new(), new()
    await client.ensure_provider(roomy, "roomy", {"VCPU": m.InventoryRecord(total=16, reserved=2,
                                                                           allocation_ratio=1.5)})
    await client.ensure_provider(tight, "tight", {"VCPU": m.InventoryRecord(total=4)})
    await client.ensure_provider(stepped, "stepped", {"VCPU": m.InventoryRecord(total=64, step_size=4)})
    assert (await client.claim(new(), tight, {"VCPU": 3}, "p", "u")).ok
    found = {p.name: p for p in await client.candidates({"VCPU": 2})}
    assert sorted(found) == ["roomy"]              # tight has 1 free, stepped needs multiples of 4
    assert found["roomy"].capacity == {"VCPU": 21} and found["roomy"].used == {"VCPU": 0}
    assert [p.name for p in await client.candidates({"VCPU": 4})] == ["roomy", "stepped"]
    # A limited answer is a random sample of the hosts with room (the scheduler spreads load).
    sampled = {p.name for _ in range(20) for p in await client.candidates({"VCPU": 4}, limit=1)}
    assert sampled <= {"roomy", "stepped"} and len(await client.candidates({"VCPU": 4}, limit=1)) == 1
    nothing = await client.find_candidates({"VCPU": 20, "MEMORY_MB": 1})
    # roomy has 21 VCPU free but max_unit 16; stepped takes 20 (a multiple of 4)
    assert nothing.providers == [] and nothing.providers_with_room == {"VCPU": 1, "MEMORY_MB": 0}


async def test_one_consumer_claimed_and_released_at_once(placement, pool):
    h, client = placement
    a, b, consumer = new(), new(), new()
    await client.ensure_provider(a, "a", HOST)
    await client.ensure_provider(b, "b", HOST)
    jobs = []
    for i in range(12):
        jobs.append(client.claim(consumer, (a, b)[i % 2], {"VCPU": 1 + i % 3}, "p", "u"))
        jobs.append(client.delete_allocations(consumer))
    results = await asyncio.gather(*jobs)
    assert all(r.ok for r in results[::2])
    held = await client.allocations(consumer)
    assert len(held) <= 1  # a consumer's claims replace each other: it is never on both
    assert sum((await usage(pool, a)).values()) + sum((await usage(pool, b)).values()) == \
        sum(n for res in held.values() for n in res.values())
    await assert_usage_is_sum_of_allocations(pool)


async def test_scheduler_candidates_describe_and_filter_the_chosen(placement, pool):
    """candidates.find, the scheduler's question: every class's capacity and usage and the
    sorted traits of each provider chosen, and its trait and aggregate filters."""
    h, client = placement
    fast, plain, child = new(), new(), new()
    aggregate = str(uuid.uuid4())
    await client.ensure_provider(fast, "fast", HOST)
    await client.ensure_provider(plain, "plain", HOST)
    await providers.create_provider(pool, uuid=child, name="child", parent_uuid=fast)
    await providers.set_inventories(pool, child, {"VCPU": providers.Inventory(total=64)}, generation=0)
    await catalog.set_provider_traits(pool, fast, ["HW_CPU_X86_SSE42", "HW_CPU_X86_AVX2"], None)
    await catalog.set_provider_aggregates(pool, plain, [aggregate], None)
    assert (await client.claim(new(), fast, {"VCPU": 2, "MEMORY_MB": 1024}, "p", "u")).ok

    found = {c.name: c for c in await candidates.find(pool, {"VCPU": 1})}
    assert sorted(found) == ["fast", "plain"]   # roots only: the child is no host of its own
    assert found["fast"].capacity == {"VCPU": 32, "MEMORY_MB": 65536}
    assert found["fast"].used == {"VCPU": 2, "MEMORY_MB": 1024}
    assert found["fast"].traits == ("HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42")
    assert found["plain"].traits == () and found["plain"].used == {"VCPU": 0, "MEMORY_MB": 0}

    async def names(**filters) -> list[str]:
        return [c.name for c in await candidates.find(pool, {"VCPU": 1}, **filters)]
    assert await names(required=["HW_CPU_X86_AVX2"]) == ["fast"]
    assert await names(required=["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE3"]) == []
    assert await names(forbidden=["HW_CPU_X86_SSE42"]) == ["plain"]
    assert await names(member_of=[aggregate]) == ["plain"]
    assert await names(limit=1) == ["fast"]      # without randomize: the first by id
    assert len(await candidates.find(pool, {"VCPU": 31, "MEMORY_MB": 1})) == 1
