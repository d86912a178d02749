"""select_destinations end to end: the scheduler and placement roles on a real bus and
database, compute hosts written straight into Nova's tables and registered with placement."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import pytest

from nova_async.common import errors
from nova_async.placement import messages as pm
from nova_async.placement.client import PlacementClient
from nova_async.scheduler.client import SchedulerClient
from nova_async.scheduler.messages import RequestSpec
from tests.harness import running


def new() -> str:
    return str(uuid.uuid4())


def spec(**kw) -> RequestSpec:
    return RequestSpec(**{"project_id": "proj", "user_id": "user", "flavor_id": "small", "vcpus": 1,
                          "memory_mb": 1024, "root_gb": 10, **kw})


class Cloud:
    def __init__(self, h) -> None:
        self.h = h
        self.pool = h.pool
        self.placement = PlacementClient(h.bus)
        self.scheduler = SchedulerClient(h.bus)
        self.nodes: dict[str, str] = {}

    async def add_host(self, name: str, *, vcpus: int = 8, memory_mb: int = 8192, disk_gb: int = 100,
                       zone: str = "nova", disabled: bool = False, forced_down: bool = False,
                       seen_ago: float | None = 0.0) -> str:
        service, node = new(), new()
        await self.pool.execute(
            "INSERT INTO services (id, host, binary_name, topic, zone, disabled, forced_down, last_seen_up) "
            "VALUES ($1, $2, 'nova-compute', 'compute', $3, $4, $5, "
            "        now() - make_interval(secs => $6::float8))",
            service, name, zone, disabled, forced_down, seen_ago)
        await self.pool.execute(
            "INSERT INTO compute_nodes (uuid, host, hypervisor_hostname, hypervisor_type, vcpus, "
            "memory_mb, local_gb, service_id) VALUES ($1, $2, $2, 'QEMU', $3, $4, $5, $6)",
            node, name, vcpus, memory_mb, disk_gb, service)
        await self.placement.ensure_provider(node, name, {
            "VCPU": pm.InventoryRecord(total=vcpus),
            "MEMORY_MB": pm.InventoryRecord(total=memory_mb),
            "DISK_GB": pm.InventoryRecord(total=disk_gb)})
        self.nodes[name] = node
        return node

    async def select(self, count: int = 1, **kw):
        uuids = [new() for _ in range(count)]
        return uuids, await self.scheduler.select_destinations(uuids, spec(**kw))

    async def used(self, name: str) -> dict[str, int]:
        rows = await self.pool.fetch(
            "SELECT i.resource_class, i.used FROM inventories i JOIN resource_providers rp "
            "ON rp.id = i.resource_provider_id WHERE rp.uuid = $1", self.nodes[name])
        return {r["resource_class"]: r["used"] for r in rows}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with running(pool, ["placement", "scheduler"], tmp_path) as h:
        yield Cloud(h)


async def test_spreads_across_hosts_and_claims(cloud):
    for name in ("a", "b", "c"):
        await cloud.add_host(name)
    uuids, selections = await cloud.select(3)
    assert sorted(s.chosen.host for s in selections) == ["a", "b", "c"]
    for instance, s in zip(uuids, selections):
        assert s.instance_uuid == instance
        assert s.chosen.node == s.chosen.host and s.chosen.provider_uuid == cloud.nodes[s.chosen.host]
        assert await cloud.placement.allocations(instance) == {
            s.chosen.provider_uuid: {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}}
        # alternates: other hosts that still have room, never the chosen one, not claimed
        assert len(s.alternates) == 2 and s.chosen.host not in {a.host for a in s.alternates}
    for name in ("a", "b", "c"):
        assert await cloud.used(name) == {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


async def test_fills_hosts_then_moves_on(cloud):
    await cloud.add_host("a", memory_mb=2048)
    await cloud.add_host("b", memory_mb=3072)
    _, selections = await cloud.select(5)
    assert Counter(s.chosen.host for s in selections) == {"a": 2, "b": 3}
    # the last instance leaves no room anywhere, so it has no alternates
    assert selections[-1].alternates == []


async def test_unusable_hosts_are_skipped(cloud):
    await cloud.add_host("good", vcpus=16, memory_mb=4096)
    await cloud.add_host("disabled", disabled=True)
    await cloud.add_host("forced-down", forced_down=True)
    await cloud.add_host("silent", seen_ago=120)
    await cloud.add_host("never-seen", seen_ago=None)
    _, selections = await cloud.select(4)
    assert {s.chosen.host for s in selections} == {"good"}


async def test_availability_zone(cloud):
    await cloud.add_host("a", zone="nova")
    await cloud.add_host("b", zone="edge")
    _, selections = await cloud.select(2, availability_zone="edge")
    assert {s.chosen.host for s in selections} == {"b"}
    with pytest.raises(errors.NoValidHost, match=r"AvailabilityZoneFilter removed 2 \(not in zone moon\)"):
        await cloud.select(1, availability_zone="moon")


async def test_no_valid_host_says_what_is_short(cloud):
    for name in ("a", "b", "c"):
        await cloud.add_host(name, memory_mb=4096)
    with pytest.raises(errors.NoValidHost) as caught:
        await cloud.select(1, memory_mb=8192)
    assert caught.value.message == "No valid host: placement: 0 of 3 hosts have 8192 MB MEMORY_MB free"


async def test_no_valid_host_names_the_filter(cloud):
    await cloud.add_host("a", memory_mb=4096)
    await cloud.add_host("b", memory_mb=4096)
    await cloud.add_host("big-but-down", memory_mb=16384, seen_ago=300)
    with pytest.raises(errors.NoValidHost) as caught:
        await cloud.select(1, memory_mb=8192)
    assert caught.value.message == (
        "No valid host: placement: 1 of 3 hosts have 1 VCPU, 8192 MB MEMORY_MB, 10 GB DISK_GB free; "
        "ComputeFilter removed 1 (service down)")


async def test_all_or_nothing(cloud, pool):
    await cloud.add_host("a", memory_mb=1024)
    await cloud.add_host("b", memory_mb=1024)
    uuids = [new() for _ in range(3)]
    with pytest.raises(errors.NoValidHost, match="2 of 3 instances could be placed, so none were"):
        await cloud.scheduler.select_destinations(uuids, spec())
    for instance in uuids:
        assert await cloud.placement.allocations(instance) == {}
    assert await cloud.used("a") == await cloud.used("b") == {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
    assert await pool.fetchval("SELECT count(*) FROM allocations") == 0


async def test_concurrent_requests_never_overcommit(cloud):
    await cloud.add_host("a", vcpus=5)
    await cloud.add_host("b", vcpus=5)
    results = await asyncio.gather(*(cloud.select(1, memory_mb=64, root_gb=1) for _ in range(14)),
                                   return_exceptions=True)
    placed = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(placed) == 10 and all(isinstance(r, errors.NoValidHost) for r in refused)
    assert (await cloud.used("a"))["VCPU"] == (await cloud.used("b"))["VCPU"] == 5


async def test_providers_that_are_not_hosts(cloud):
    await cloud.placement.ensure_provider(new(), "a-shared-disk-pool", {
        "VCPU": pm.InventoryRecord(total=64), "MEMORY_MB": pm.InventoryRecord(total=65536),
        "DISK_GB": pm.InventoryRecord(total=10000)})
    await cloud.add_host("a", memory_mb=512)
    with pytest.raises(errors.NoValidHost, match="1 resource provider\\(s\\) are not compute nodes"):
        await cloud.select(1)


async def test_no_hosts_at_all(cloud):
    with pytest.raises(errors.NoValidHost, match="there are no compute hosts"):
        await cloud.select(1)


async def test_packing_and_alternate_count(pool, tmp_path):
    settings = {"ram_weight_multiplier": -1.0, "cpu_weight_multiplier": 0.0,
                "disk_weight_multiplier": 0.0, "max_attempts": 2}
    async with running(pool, ["placement", "scheduler"], tmp_path, scheduler=settings) as h:
        cloud = Cloud(h)
        for name in ("a", "b", "c"):
            await cloud.add_host(name)
        _, selections = await cloud.select(3)
        assert len({s.chosen.host for s in selections}) == 1
        assert all(len(s.alternates) == 1 for s in selections)
