"""Many writers racing for one provider over HTTP: the claim must never over-commit it, and
every 204 a writer saw must be in the final usage (no lost or phantom claims). The same for
`POST /allocations` batches, which must also land whole or not at all; and for writers that
update one shared consumer with its generation (compare-and-swap: no lost updates)."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest

from nova_async.placement import messages as m
from nova_async.placement.client import PlacementClient
from tests.harness import running

VERSION = {"OpenStack-API-Version": "placement 1.39"}
CAPACITY = 32
WRITERS = 24
INCREMENTS = 2  # per writer, on the shared consumer


@pytest.fixture
async def placement(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        rp, big = str(uuid.uuid4()), str(uuid.uuid4())
        client = PlacementClient(h.bus)
        await client.ensure_provider(rp, "contended", {"VCPU": m.InventoryRecord(total=CAPACITY)})
        await client.ensure_provider(big, "roomy", {"VCPU": m.InventoryRecord(total=10_000)})
        yield h, rp, big


def _entry(rp: str, vcpu: int, generation: int | None = None) -> dict:
    return {"allocations": {rp: {"resources": {"VCPU": vcpu}}}, "project_id": "proj",
            "user_id": "user", "consumer_generation": generation, "consumer_type": "INSTANCE"}


class Watch:
    """Reads the provider's usage over and over while the writers run; remembers the peak."""

    def __init__(self, h, rp: str) -> None:
        self.h, self.rp, self.peak, self.samples = h, rp, 0, 0
        self.done = asyncio.Event()

    async def run(self) -> None:
        while not self.done.is_set():
            resp = await self.h.http.get(f"/placement/resource_providers/{self.rp}/usages",
                                         headers=self.h.admin | VERSION)
            assert resp.status == 200
            self.peak = max(self.peak, (await resp.json())["usages"]["VCPU"])
            self.samples += 1
            await asyncio.sleep(0)


async def _final_state(h, pool, rp: str) -> tuple[int, dict[str, int]]:
    """Usage as the API reports it, checked against the database's two bookkeepings (the
    allocation rows and the trigger-kept inventory total), and the consumers on the provider."""
    resp = await h.http.get(f"/placement/resource_providers/{rp}/usages", headers=h.admin | VERSION)
    used = (await resp.json())["usages"]["VCPU"]
    row = await pool.fetchrow(
        "SELECT i.used, (SELECT coalesce(sum(a.used), 0) FROM allocations a"
        "                WHERE a.resource_provider_id = i.resource_provider_id) AS summed"
        "  FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id"
        " WHERE rp.uuid = $1 AND i.resource_class = 'VCPU'", uuid.UUID(rp))
    assert row["used"] == row["summed"] == used
    resp = await h.http.get(f"/placement/resource_providers/{rp}/allocations", headers=h.admin | VERSION)
    held = {c: a["resources"]["VCPU"] for c, a in (await resp.json())["allocations"].items()}
    return used, held


async def _run(h, rp: str, writers) -> Watch:
    watch = Watch(h, rp)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(watch.run(), name="usage-watch")
        jobs = [tg.create_task(w, name=f"writer-{i}") for i, w in enumerate(writers)]
        await asyncio.gather(*jobs)
        watch.done.set()
    return watch


async def test_racing_puts_never_overcommit(placement, pool):
    h, rp, _ = placement
    granted: dict[str, int] = {}
    refused = 0

    async def writer(seed: int) -> None:
        nonlocal refused
        rnd = random.Random(seed)
        for _ in range(6):
            consumer = str(uuid.uuid4())
            for attempt in range(3):  # on 409, try again with less
                vcpu = rnd.randint(1, 4) if attempt == 0 else 1
                resp = await h.http.put(f"/placement/allocations/{consumer}",
                                        json=_entry(rp, vcpu), headers=h.admin | VERSION)
                if resp.status == 204:
                    granted[consumer] = vcpu
                    break
                assert resp.status == 409, await resp.text()
                refused += 1

    watch = await _run(h, rp, [writer(i) for i in range(WRITERS)])
    used, held = await _final_state(h, pool, rp)
    assert watch.samples > 0 and watch.peak <= CAPACITY
    assert used == sum(granted.values()) <= CAPACITY
    assert held == granted
    assert refused > 0  # 24 writers asked for far more than 32: some must have been told no
    assert used > CAPACITY - 4  # and the retries with 1 VCPU filled it (almost) up


async def test_racing_batches_are_all_or_nothing(placement, pool):
    h, rp, _ = placement
    granted: dict[str, int] = {}
    refused: list[str] = []

    async def writer(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(4):
            for _attempt in range(2):
                batch = {str(uuid.uuid4()): rnd.randint(1, 4) for _ in range(3)}
                resp = await h.http.post("/placement/allocations", headers=h.admin | VERSION,
                                         json={c: _entry(rp, n) for c, n in batch.items()})
                if resp.status == 204:
                    granted.update(batch)
                    break
                assert resp.status == 409, await resp.text()
                refused.extend(batch)

    watch = await _run(h, rp, [writer(1000 + i) for i in range(WRITERS)])
    used, held = await _final_state(h, pool, rp)
    assert watch.peak <= CAPACITY
    assert used == sum(granted.values()) <= CAPACITY
    assert held == granted  # every consumer of a granted batch holds its share
    assert refused and not set(refused) & set(held)  # no refused batch left anything behind


async def test_generation_writers_lose_no_update(placement):
    """Each writer adds 1 VCPU to one shared consumer by read-modify-write with the consumer
    generation; a 409 placement.concurrent_update sends it back to read again. Every increment
    that got a 204 must be in the final amount."""
    h, _, big = placement
    consumer = str(uuid.uuid4())
    url = f"/placement/allocations/{consumer}"
    resp = await h.http.put(url, json=_entry(big, 1), headers=h.admin | VERSION)
    assert resp.status == 204
    increments, conflicts = 0, 0

    async def writer() -> None:
        nonlocal increments, conflicts
        for _ in range(INCREMENTS):
            while True:
                current = await (await h.http.get(url, headers=h.admin | VERSION)).json()
                vcpu = current["allocations"][big]["resources"]["VCPU"]
                resp = await h.http.put(url, headers=h.admin | VERSION,
                                        json=_entry(big, vcpu + 1, current["consumer_generation"]))
                if resp.status == 204:
                    increments += 1
                    break
                body = await resp.json()
                assert resp.status == 409 and body["errors"][0]["code"] == "placement.concurrent_update"
                conflicts += 1

    async with asyncio.TaskGroup() as tg:
        for i in range(WRITERS):
            tg.create_task(writer(), name=f"incrementer-{i}")
    final = await (await h.http.get(url, headers=h.admin | VERSION)).json()
    assert increments == WRITERS * INCREMENTS
    assert final["allocations"][big]["resources"]["VCPU"] == 1 + increments
    assert final["consumer_generation"] == 1 + increments
    assert conflicts > 0


async def test_crossing_moves_make_no_loop(placement):
    """A under B and B under A at the same moment: at most one wins, the other gets a 400
    (loop) or a 409 (concurrent move), and the tree stays a tree."""
    h, _, _ = placement
    headers = h.admin | VERSION
    for round_ in range(3):
        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        for rp in (a, b):
            resp = await h.http.post("/placement/resource_providers", headers=headers,
                                     json={"uuid": rp, "name": f"{rp}-{round_}"})
            assert resp.status == 200

        async def move(child: str, parent: str) -> int:
            resp = await h.http.put(f"/placement/resource_providers/{child}", headers=headers,
                                    json={"name": f"{child}-{round_}", "parent_provider_uuid": parent})
            return resp.status

        statuses = sorted(await asyncio.gather(move(a, b), move(b, a)))
        assert statuses[0] == 200 and statuses[1] in (400, 409), statuses
        parents = {}
        for rp in (a, b):
            body = await (await h.http.get(f"/placement/resource_providers/{rp}", headers=headers)).json()
            parents[rp] = body["parent_provider_uuid"]
        assert None in parents.values()  # one of them is still a root
