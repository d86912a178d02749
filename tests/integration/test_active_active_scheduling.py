"""Copies of the conductor side by side, as in several `nova-async serve` processes on one
database and one bus: each copy has locks of its own (a process's session locks), and a
request that reaches two of them, or that a dying one held, is scheduled exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid as uuidlib

import msgspec
import pytest

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.compute.build import build_and_run
from nova_async.compute.client import ComputeClient
from nova_async.compute.role import ComputeRole
from nova_async.conductor.messages import (RescheduleInstance, ResizeInstance, ScheduleAndBuildInstances,
                                          UnshelveRequest)
from nova_async.conductor.claims import SchedulingClaims
from nova_async.conductor.role import ConductorRole
from nova_async.db.session_locks import key
from nova_async.placement.messages import Holder
from nova_async.scheduler.answers import Answers
from nova_async.scheduler.client import SchedulerClient
from nova_async.scheduler.messages import SELECT_EVENT, Destination, RequestSpec, SelectDestinations
from nova_async.scheduler.role import SchedulerRole
from tests.harness import locks_for
from tests.integration.test_reschedule import events_of, usage
from tests.integration.test_server_lifecycle import MV, ROLES, V, boot_body, ok, sim_cloud, wait_status

WITHOUT_CONDUCTOR = [r for r in ROLES if r != "conductor"]


@pytest.fixture
async def cloud(pool, tmp_path):
    # every role but the conductor: the copies each test makes are the conductors
    async with sim_cloud(pool, tmp_path, roles=WITHOUT_CONDUCTOR) as h:
        yield h


@contextlib.asynccontextmanager
async def conductor(h, name: str):
    """A copy of the conductor in a process of its own (its own locks), on the cloud's bus and
    database; its handlers are called as the bus would call them."""
    locks = locks_for(h.pool, name)
    try:
        yield ConductorRole(dataclasses.replace(h.deps, locks=locks))
    finally:
        await locks.close()


class Paused(SchedulerClient):
    """A conductor's scheduler client that stops once the scheduler has answered (its claims
    made, no host written yet) until `go` is set."""

    def __init__(self, bus) -> None:
        super().__init__(bus)
        self.answered, self.go = asyncio.Event(), asyncio.Event()

    async def select_destinations(self, *args, **kw):
        selections = await super().select_destinations(*args, **kw)
        self.answered.set()
        await self.go.wait()
        return selections


async def accepted(h) -> tuple[str, ScheduleAndBuildInstances, RequestContext]:
    """A boot the API accepted (its cast to the conductor waits on the bus, unread): the
    instance, and the request and context a conductor gets for it."""
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    uuid = created["server"]["id"]
    request_id = await h.cell1.fetchval("SELECT request_id FROM instance_actions WHERE instance_uuid = $1", uuid)
    ctx = RequestContext(user_id="alice", project_id="proj-a", request_id=request_id)
    return uuid, ScheduleAndBuildInstances(instance_uuids=[uuid], cell_uuid=h.cells.default.uuid), ctx


async def allocations_of(h, uuid: str) -> set[tuple[str, str, int]]:
    rows = await h.pool.fetch(
        "SELECT rp.name, a.resource_class, a.used FROM allocations a"
        "  JOIN consumers c ON c.id = a.consumer_id"
        "  JOIN resource_providers rp ON rp.id = a.resource_provider_id WHERE c.uuid = $1", uuid)
    return {(r["name"], r["resource_class"], r["used"]) for r in rows}


async def host_of(h, uuid: str) -> str | None:
    return await h.cell1.fetchval("SELECT host FROM instances WHERE uuid = $1", uuid)


def once_each(events: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    names = ("conductor_schedule_and_build_instances", SELECT_EVENT, "compute_build_and_run_instance")
    return {n: [r for e, r, _ in events if e == n] for n in names}


async def test_a_request_at_two_conductors_is_scheduled_by_one(cloud):
    h = cloud
    uuid, msg, ctx = await accepted(h)
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        a.scheduler = held = Paused(h.bus)
        first = asyncio.create_task(a.schedule_and_build_instances(msg, ctx), name="test:conductor-a")
        await held.answered.wait()
        # the same request at the other copy while the first is on it: left to the first
        await b.schedule_and_build_instances(msg, ctx)
        assert await host_of(h, uuid) is None
        held.go.set()
        await first
        server = await wait_status(h, uuid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        # and again once it is built (a redelivery, another copy's pick-up): the row says placed
        await b.schedule_and_build_instances(msg, ctx)
        await a.schedule_and_build_instances(msg, ctx)
    host = await host_of(h, uuid)
    assert await allocations_of(h, uuid) == {(host, "VCPU", 1), (host, "MEMORY_MB", 1024), (host, "DISK_GB", 1)}
    assert once_each(await events_of(h, uuid)) == {
        "conductor_schedule_and_build_instances": ["Success"], SELECT_EVENT: ["Success"],
        "compute_build_and_run_instance": ["Success"]}


async def test_requests_at_two_conductors_at_once_place_each_instance_once(cloud):
    h = cloud
    boots = [await accepted(h) for _ in range(4)]
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        await asyncio.gather(*(copy.schedule_and_build_instances(msg, ctx)
                               for _, msg, ctx in boots for copy in (a, b)))
        for uuid, _, _ in boots:
            server = await wait_status(h, uuid, "ACTIVE", "ERROR")
            assert server["status"] == "ACTIVE", server.get("fault")
            assert len(await allocations_of(h, uuid)) == 3
            assert [len(results) for results in once_each(await events_of(h, uuid)).values()] == [1, 1, 1]
    assert await usage(h, "sim-1") + await usage(h, "sim-2") == 4 * 1024


async def test_a_conductor_that_dies_mid_scheduling_leaves_the_instance_to_another(cloud):
    h = cloud
    uuid, msg, ctx = await accepted(h)
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        a.scheduler = held = Paused(h.bus)
        dying = asyncio.create_task(a.schedule_and_build_instances(msg, ctx), name="test:conductor-a")
        await held.answered.wait()
        [claimed] = {name for name, _, _ in await allocations_of(h, uuid)}
        assert await host_of(h, uuid) is None
        await b.schedule_and_build_instances(msg, ctx)   # a lives: left to it
        assert await host_of(h, uuid) is None
        # a's process dies: its connections close, and its locks go with them at once
        await a.deps.locks.close()
        await b.schedule_and_build_instances(msg, ctx)   # the request, redelivered
        server = await wait_status(h, uuid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        assert [r for n, r, _ in await events_of(h, uuid)
                if n == "conductor_schedule_and_build_instances"] == ["Success"]
        dying.cancel()
        await asyncio.gather(dying, return_exceptions=True)
    # the dead copy's claim was replaced by the second scheduling, not added to
    host = await host_of(h, uuid)
    assert await allocations_of(h, uuid) == {(host, "VCPU", 1), (host, "MEMORY_MB", 1024), (host, "DISK_GB", 1)}
    assert await usage(h, "sim-1") + await usage(h, "sim-2") == 1024
    assert claimed in ("sim-1", "sim-2")
    events = once_each(await events_of(h, uuid))
    assert events["compute_build_and_run_instance"] == ["Success"]
    # the dead copy's begun steps were done again by the survivor, and each shows once
    assert events["conductor_schedule_and_build_instances"] == ["Success"]
    assert events["scheduler_select_destinations_and_claim"] == ["Success"]


async def test_a_reschedule_waits_for_the_copy_holding_the_instance(cloud):
    """The holder may be a stale copy of the boot request that read the row before the
    failed host handed the instance back: the reschedule is not dropped, it waits."""
    h = cloud
    uuid, _, ctx = await accepted(h)
    sim2 = await h.pool.fetchval("SELECT uuid::text FROM resource_providers WHERE name = 'sim-2'")
    reschedule = RescheduleInstance(instance_uuid=uuid, failed_host="sim-1", reason="it broke",
                                    alternates=[Destination(host="sim-2", node="sim-2", provider_uuid=sim2)])
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        stale = await b.claims.take([uuid])
        assert uuid in stale
        waiting = asyncio.create_task(a.reschedule_instance(reschedule, ctx), name="test:reschedule")
        for _ in range(20):
            await asyncio.sleep(0)
        assert not waiting.done()
        await b.claims.give_back(stale)   # the stale copy read the row too early and leaves
        await waiting
        server = await wait_status(h, uuid, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert (await ok(await h.http.get(f"{V}/servers/{uuid}", headers={**h.admin, **MV}), 200)
            )["server"]["OS-EXT-SRV-ATTR:host"] == "sim-2"
    assert await allocations_of(h, uuid) == {("sim-2", "VCPU", 1), ("sim-2", "MEMORY_MB", 1024),
                                             ("sim-2", "DISK_GB", 1)}


async def booted(h, copy) -> str:
    uuid, msg, ctx = await accepted(h)
    await copy.schedule_and_build_instances(msg, ctx)
    server = await wait_status(h, uuid, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    return uuid


async def latest_request(h, uuid: str, action: str) -> RequestContext:
    request_id = await h.cell1.fetchval(
        "SELECT request_id FROM instance_actions WHERE instance_uuid = $1 AND action = $2", uuid, action)
    return RequestContext(user_id="alice", project_id="proj-a", request_id=request_id)


async def steps(h, uuid: str, ctx: RequestContext, event: str) -> list[str]:
    return [r["result"] for r in await h.cell1.fetch(
        "SELECT e.result FROM instance_action_events e JOIN instance_actions a ON a.id = e.action_id"
        " WHERE a.instance_uuid = $1 AND a.request_id = $2 AND e.event = $3", uuid, ctx.request_id, event)]


async def test_a_resize_at_two_conductors_is_scheduled_by_one(cloud):
    h = cloud
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        uuid = await booted(h, a)
        bigger = (await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1.medium", "ram": 2048, "vcpus": 2, "disk": 2}}), 200))["flavor"]["id"]
        await ok(await h.http.post(f"{V}/servers/{uuid}/action", headers=h.alice,
                                   json={"resize": {"flavorRef": bigger}}), 202)
        migration = await h.cell1.fetchval("SELECT uuid::text FROM migrations WHERE instance_uuid = $1", uuid)
        msg, ctx = ResizeInstance(instance_uuid=uuid, migration_uuid=migration), await latest_request(h, uuid, "resize")
        a.resizer.scheduler = held = Paused(h.bus)
        first = asyncio.create_task(a.resizer.resize(msg, ctx), name="test:conductor-a")
        await held.answered.wait()
        second = asyncio.create_task(b.resizer.resize(msg, ctx), name="test:conductor-b")
        held.go.set()
        await asyncio.gather(first, second)
        server = await wait_status(h, uuid, "VERIFY_RESIZE", "ACTIVE", "ERROR")
        assert server["status"] == "VERIFY_RESIZE", server.get("fault")
        await b.resizer.resize(msg, ctx)   # once more, later: the migration has its destination
    assert await steps(h, uuid, ctx, "conductor_migrate_server") == ["Success"]
    assert await steps(h, uuid, ctx, "compute_resize_instance") == ["Success"]
    assert {(r, n) for _, r, n in await allocations_of(h, uuid)} == {("VCPU", 2), ("MEMORY_MB", 2048), ("DISK_GB", 2)}
    assert {(r, n) for _, r, n in await allocations_of(h, migration)} == {("VCPU", 1), ("MEMORY_MB", 1024),
                                                                          ("DISK_GB", 1)}


async def test_an_unshelve_at_two_conductors_is_scheduled_by_one(cloud):
    h = cloud
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        uuid = await booted(h, a)
        await ok(await h.http.post(f"{V}/servers/{uuid}/action", headers=h.alice, json={"shelve": None}), 202)
        await wait_status(h, uuid, "SHELVED_OFFLOADED", "ERROR")
        await ok(await h.http.post(f"{V}/servers/{uuid}/action", headers=h.alice, json={"unshelve": None}), 202)
        msg, ctx = UnshelveRequest(instance_uuid=uuid), await latest_request(h, uuid, "unshelve")
        a.unshelver.scheduler = held = Paused(h.bus)
        first = asyncio.create_task(a.unshelver.unshelve(msg, ctx), name="test:conductor-a")
        await held.answered.wait()
        second = asyncio.create_task(b.unshelver.unshelve(msg, ctx), name="test:conductor-b")
        held.go.set()
        await asyncio.gather(first, second)
        server = await wait_status(h, uuid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
    host = await host_of(h, uuid)
    assert await allocations_of(h, uuid) == {(host, "VCPU", 1), (host, "MEMORY_MB", 1024), (host, "DISK_GB", 1)}
    assert await steps(h, uuid, ctx, "conductor_unshelve_instance") == ["Success"]


class AnswerLost:
    """The bus, losing the answer to the first call (made, answered, never heard: as when the
    scheduler copy that took the question dies before it answers)."""

    def __init__(self, bus) -> None:
        self.bus, self.lost = bus, 0
        self.call_timeout = bus.call_timeout

    async def call(self, topic, msg, **kw):
        answer = await self.bus.call(topic, msg, **kw)
        if not self.lost:
            self.lost += 1
            raise errors.BusTimeout(f"no answer from {topic} to {type(msg).__name__} within 120 s")
        return answer


async def test_a_lost_scheduler_answer_is_asked_again_and_places_once(cloud):
    h = cloud
    uuid, msg, ctx = await accepted(h)
    async with conductor(h, "a") as a:
        a.scheduler = SchedulerClient(AnswerLost(h.bus))
        await a.schedule_and_build_instances(msg, ctx)
        server = await wait_status(h, uuid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
    host = await host_of(h, uuid)
    assert await allocations_of(h, uuid) == {(host, "VCPU", 1), (host, "MEMORY_MB", 1024), (host, "DISK_GB", 1)}
    assert await usage(h, "sim-1") + await usage(h, "sim-2") == 1024
    events = once_each(await events_of(h, uuid))
    assert events["compute_build_and_run_instance"] == ["Success"]
    # the lost decision is forgotten when the conductor asks again: the one that counted shows
    assert events["scheduler_select_destinations_and_claim"] == ["Success"]


class NeverCasts(ComputeClient):
    """A conductor's compute client whose process dies as it is about to cast a build."""

    def __init__(self, bus) -> None:
        super().__init__(bus)
        self.about_to = asyncio.Event()

    async def build_and_run(self, *args, **kw) -> None:
        self.about_to.set()
        await asyncio.Event().wait()


ONCE_EACH = {"conductor_schedule_and_build_instances": ["Success"], SELECT_EVENT: ["Success"],
             "compute_build_and_run_instance": ["Success"]}


async def dies_and_is_taken_over(h, uuid, msg, ctx, a, b, dies_at: asyncio.Event) -> str | None:
    """Copy `a` handles the request until `dies_at`, then its process dies (its locks go with
    it); `b` gets the request again and builds the server. The host `a` had written, if any."""
    dying = asyncio.create_task(a.schedule_and_build_instances(msg, ctx), name="test:conductor-a")
    await dies_at.wait()
    written = await host_of(h, uuid)
    await a.deps.locks.close()
    await b.schedule_and_build_instances(msg, ctx)   # the request, redelivered
    server = await wait_status(h, uuid, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    dying.cancel()
    await asyncio.gather(dying, return_exceptions=True)
    host = await host_of(h, uuid)
    assert await allocations_of(h, uuid) == {(host, "VCPU", 1), (host, "MEMORY_MB", 1024), (host, "DISK_GB", 1)}
    return written


async def test_a_conductor_that_dies_before_casting_the_build_has_it_cast_by_another(cloud):
    h = cloud
    uuid, msg, ctx = await accepted(h)
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        a.compute = never = NeverCasts(h.bus)
        placed = await dies_and_is_taken_over(h, uuid, msg, ctx, a, b, never.about_to)
    assert placed is not None and await host_of(h, uuid) == placed
    assert once_each(await events_of(h, uuid)) == ONCE_EACH


class DiesBeforeTheHost:
    """A conductor's cells, in a process that dies once the scheduling step has ended and
    before the instance's host is written."""

    def __init__(self, cells) -> None:
        self._cells, self.reached = cells, asyncio.Event()

    def __getattr__(self, name):
        return getattr(self._cells, name)

    async def of_host(self, host):
        self.reached.set()
        await asyncio.Event().wait()


async def test_a_conductor_that_dies_between_deciding_and_writing_the_host_is_taken_over_once(cloud):
    h = cloud
    uuid, msg, ctx = await accepted(h)
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        a.cells = dying_cells = DiesBeforeTheHost(a.cells)
        assert await dies_and_is_taken_over(h, uuid, msg, ctx, a, b, dying_cells.reached) is None
    # the dead copy's step had ended (Success) but counted for nothing: shown once, the survivor's
    assert once_each(await events_of(h, uuid)) == ONCE_EACH


@contextlib.asynccontextmanager
async def scheduler_copy(h, name: str):
    """A copy of the scheduler in a process of its own (its locks), sharing the running one's
    deciders, with answers kept as they are over a broker (which may hand one call to two)."""
    locks = locks_for(h.pool, name)
    await locks.open()   # its process's own lock, which others look at to tell it is alive
    try:
        copy = SchedulerRole(dataclasses.replace(h.deps, locks=locks))
        copy.scheduler = h.roles["scheduler"].scheduler
        copy.answers = Answers(h.pool, locks, h.bus)
        yield copy, locks
    finally:
        await locks.close()


class Slow:
    """A scheduler whose decisions wait for `go` once they are under way."""

    def __init__(self, scheduler) -> None:
        self.scheduler, self.deciding, self.go = scheduler, asyncio.Event(), asyncio.Event()

    async def select_destinations(self, *args):
        self.deciding.set()
        await self.go.wait()
        return await self.scheduler.select_destinations(*args)


async def question(h, uuid: str, ctx: RequestContext) -> SelectDestinations:
    row = await h.cell1.fetchrow("SELECT request_spec, flavor FROM instances WHERE uuid = $1", uuid)
    return SelectDestinations(instance_uuids=[uuid], spec=RequestSpec.from_stored(row["request_spec"], row["flavor"]),
                              cell_uuid=h.cells.default.uuid, question_id=str(uuidlib.uuid4()))


async def deciding(copy, ask: SelectDestinations, ctx: RequestContext) -> tuple[asyncio.Task, Slow]:
    """`copy` on its way to answering `ask`, held until the returned Slow's `go`."""
    copy.scheduler = slow = Slow(copy.scheduler)
    task = asyncio.create_task(copy._select_destinations(ask, ctx), name="test:scheduler-a")
    await slow.deciding.wait()
    return task, slow


async def placed_once(h, uuid: str, answer) -> None:
    [selection] = answer.selections
    host = selection.chosen.host
    assert await allocations_of(h, uuid) == {(host, "VCPU", 1), (host, "MEMORY_MB", 1024), (host, "DISK_GB", 1)}


async def test_one_question_at_two_schedulers_is_decided_once(cloud):
    """A publish retried after a lost confirm reaches two copies: one decides and claims, the
    other gives its answer (not a second claim, perhaps on another host)."""
    h = cloud
    uuid, _, ctx = await accepted(h)
    ask = await question(h, uuid, ctx)
    async with scheduler_copy(h, "a") as (a, _), scheduler_copy(h, "b") as (b, _):
        first, slow = await deciding(a, ask, ctx)
        second = asyncio.create_task(b._select_destinations(ask, ctx), name="test:scheduler-b")
        await asyncio.sleep(0.5)
        assert not second.done()   # waiting for a's answer
        slow.go.set()
        answers = await asyncio.gather(first, second)
    assert answers[0] == answers[1]
    await placed_once(h, uuid, answers[0])
    assert await steps(h, uuid, ctx, SELECT_EVENT) == ["Success"]


async def test_a_question_whose_scheduler_died_is_decided_by_another(cloud):
    h = cloud
    uuid, _, ctx = await accepted(h)
    ask = await question(h, uuid, ctx)
    async with scheduler_copy(h, "a") as (a, a_locks), scheduler_copy(h, "b") as (b, _):
        dying, _ = await deciding(a, ask, ctx)
        dying.cancel()   # its process dies mid-decision: its answer never comes, its locks go
        await asyncio.gather(dying, return_exceptions=True)
        await a_locks.close()
        answer = await asyncio.wait_for(b._select_destinations(ask, ctx), 30)
    await placed_once(h, uuid, answer)


async def test_a_build_cast_to_a_host_the_instance_is_not_placed_on_is_skipped(cloud):
    """A late copy of a build cast (sent again by a conductor that saw no build begun) reaching
    the host a reschedule took the instance back from: nothing is built there."""
    h = cloud
    uuid, _, ctx = await accepted(h)   # building, no host yet: as after release_for_reschedule
    host = h.roles["compute"].hosts["sim-1"]
    await build_and_run(host, uuid, ctx.request_id)
    assert await host_of(h, uuid) is None
    assert not (host.instances_root / uuid).exists()
    assert once_each(await events_of(h, uuid))["compute_build_and_run_instance"] == []


async def test_a_compute_host_another_process_runs_is_not_started_twice(cloud):
    h = cloud
    locks = locks_for(h.pool, "second process")
    try:
        second = ComputeRole(dataclasses.replace(h.deps, locks=locks))
        with pytest.raises(errors.Unavailable, match="compute host sim-1 is run by another nova-async process"):
            await asyncio.wait_for(second.run(), 30)
        assert second.hosts == {}
    finally:
        await locks.close()


async def test_a_decision_that_outlives_its_conductor_neither_claims_nor_releases(cloud):
    """A scheduler still deciding for a conductor that died (its claim's answer lost, the claim
    sent again a minute later) must not replace what the copy that took the instance over
    claimed since, nor give it back when its own decision fails."""
    h = cloud
    uuid, msg, ctx = await accepted(h)
    async with conductor(h, "a") as a, conductor(h, "b") as b:
        for copy in (a, b):   # fenced, as over RabbitMQ (copies in several processes)
            copy.claims = SchedulingClaims(copy.deps.locks, fenced=True)
        held = await a.claims.take([uuid])
        holders = held.holders([uuid])
        assert holders[uuid].pid is not None
        stale = msgspec.structs.replace(await question(h, uuid, ctx), holders=holders)
        await a.deps.locks.close()   # a dies, its question still on its way
        await b.schedule_and_build_instances(msg, ctx)   # the request, redelivered, taken over
        server = await wait_status(h, uuid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        host = await host_of(h, uuid)
        placed = {(host, "VCPU", 1), (host, "MEMORY_MB", 1024), (host, "DISK_GB", 1)}
        assert await allocations_of(h, uuid) == placed

        # a's question decided now, alone and in a batch: refused at its claim
        scheduler = h.roles["scheduler"]
        with pytest.raises(errors.SchedulingAbandoned):
            await scheduler._select_destinations(stale, ctx)
        assert await allocations_of(h, uuid) == placed
        manager = scheduler.scheduler
        with pytest.raises(errors.SchedulingAbandoned):
            await manager.select_destinations([uuid], stale.spec, holders)
        assert await allocations_of(h, uuid) == placed
        # nor does its release (a failed decision gives back what it claimed) take b's claim
        await manager._release([uuid], holders)
        assert await allocations_of(h, uuid) == placed
        assert await usage(h, "sim-1") + await usage(h, "sim-2") == 1024
        assert once_each(await events_of(h, uuid))["compute_build_and_run_instance"] == ["Success"]


async def test_a_claim_for_a_live_holder_is_made_and_refused_once_it_is_gone(cloud):
    """Placement's side: a holder's lock, held, lets its claim and its release through; once
    its process is gone, neither changes anything."""
    h = cloud
    uuid = str(uuidlib.uuid4())
    provider = await h.pool.fetchval("SELECT uuid::text FROM resource_providers WHERE name = 'sim-1'")
    placement = h.roles["scheduler"].scheduler.placement
    locks = locks_for(h.pool, "holder")
    try:
        lock_key = key("schedule", uuid)
        assert await locks.take_one(lock_key)
        holder = Holder(pid=locks.server_pid, key=lock_key)
        result = await placement.claim(uuid, provider, {"VCPU": 1}, "proj-a", "alice", holder=holder)
        assert result.ok and not result.holder_gone
        other = Holder(pid=locks.server_pid, key=key("schedule", str(uuidlib.uuid4())))   # not held
        refused = await placement.claim(uuid, provider, {"VCPU": 2}, "proj-a", "alice", holder=other)
        assert not refused.ok and refused.holder_gone
        await placement.delete_allocations(uuid, holder=other)
        assert await allocations_of(h, uuid) == {("sim-1", "VCPU", 1)}
    finally:
        await locks.close()
    refused = await placement.claim(uuid, provider, {"VCPU": 2}, "proj-a", "alice", holder=holder)
    assert not refused.ok and refused.holder_gone
    await placement.delete_allocations(uuid, holder=holder)
    assert await allocations_of(h, uuid) == {("sim-1", "VCPU", 1)}
    await placement.delete_allocations(uuid)   # unfenced, as the API's delete
    assert await allocations_of(h, uuid) == set()
