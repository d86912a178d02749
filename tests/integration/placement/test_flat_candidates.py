"""The flat fast path of `GET /allocation_candidates` (flat_candidates: the body built by
PostgreSQL) must answer exactly what the general tree search answers, at every microversion
whose shape differs. The world is flat — no children, no sharing providers — so the fast path
takes every request below that it speaks; each is asked twice, once with the fast path
switched off, and the two bodies must be equal. Then one child appears, and the fast path
must step aside.

    p1  VCPU 8, MEMORY_MB 4096, DISK_GB 100       HW_CPU_X86_AVX2, CUSTOM_GOLD   aggregate A
    p2  VCPU 4 (2 used), MEMORY_MB 2048            HW_CPU_X86_SSE                 aggregate B
    p3  VCPU 16 step 2, MEMORY_MB 8192 reserved 1024 ratio 1.5   HW_CPU_X86_AVX2  aggregates A, B
    p4  DISK_GB 500                                (no traits)
    p5  VCPU 2 max_unit 1, MEMORY_MB 1024          CUSTOM_GOLD
"""

from __future__ import annotations

import json
import uuid

import pytest

from nova_async.db.queries import queries
from nova_async.placement import flat_candidates
from tests.harness import running

WORLD = {  # name: (inventories {class: (total, reserved, max_unit, step, ratio)}, traits, aggregates)
    "p1": ({"VCPU": (8, 0, 8, 1, 1.0), "MEMORY_MB": (4096, 0, 4096, 1, 1.0),
            "DISK_GB": (100, 0, 100, 1, 1.0)}, ["HW_CPU_X86_AVX2", "CUSTOM_GOLD"], ["A"]),
    "p2": ({"VCPU": (4, 0, 4, 1, 1.0), "MEMORY_MB": (2048, 0, 2048, 1, 1.0)}, ["HW_CPU_X86_SSE"], ["B"]),
    "p3": ({"VCPU": (16, 0, 16, 2, 1.0), "MEMORY_MB": (8192, 1024, 8192, 1, 1.5)},
           ["HW_CPU_X86_AVX2"], ["A", "B"]),
    "p4": ({"DISK_GB": (500, 0, 500, 1, 1.0)}, [], []),
    "p5": ({"VCPU": (2, 0, 1, 1, 1.0), "MEMORY_MB": (1024, 0, 1024, 1, 1.0)}, ["CUSTOM_GOLD"], []),
}

QUERIES = [
    "resources=VCPU:1",
    "resources=VCPU:2,MEMORY_MB:1024",
    "resources=VCPU:1,MEMORY_MB:1024&limit=2",
    "resources=VCPU:3",                                   # step_size 2 rules p3 out
    "resources=MEMORY_MB:10000",                          # only p3, by its ratio
    "resources=DISK_GB:1",
    "resources=VCPU:1&required=HW_CPU_X86_AVX2",
    "resources=VCPU:1&required=HW_CPU_X86_AVX2,CUSTOM_GOLD",
    "resources=VCPU:1&required=!CUSTOM_GOLD",
    "resources=VCPU:1&member_of={A}",
    "resources=VCPU:1&member_of=in:{A},{B}",
    "resources=VCPU:1&member_of=!{B}",
    "resources=VCPU:1&root_required=CUSTOM_GOLD",
    "resources=VCPU:1&root_required=!HW_CPU_X86_SSE&required=HW_CPU_X86_AVX2&limit=1",
    "resources=VCPU:100",
    "resources=VCPU:1,SRIOV_NET_VF:1",                    # a class no inventory has (sql/0038)
    # member_of: the fast path walks the aggregates' members (sql/0028)
    "resources=VCPU:1&required=HW_CPU_X86_AVX2&member_of={A}",
    "resources=VCPU:1,MEMORY_MB:1024&required=HW_CPU_X86_AVX2&member_of=in:{A},{B}&limit=1",
    "resources=VCPU:1&required=HW_CPU_X86_AVX2,CUSTOM_GOLD&member_of=in:{A},{B}",
    "resources=VCPU:1&required=!CUSTOM_GOLD&member_of=in:{A},{B}",
    "resources=VCPU:2&member_of=in:{A},{B}&member_of=!{B}",
    "resources=VCPU:3&member_of={A}",                     # p3 is a member, but steps by 2
    "resources=MEMORY_MB:10000&member_of={B}",            # only p3, by its ratio
    "resources=DISK_GB:1&member_of={B}",                  # members, none with disk
    "resources=VCPU:1&member_of={A}&root_required=CUSTOM_GOLD",
    "resources=VCPU:1&member_of=in:{A},{B}&limit=2",
    "resources=VCPU:1&member_of=in:{A},{B}&required=HW_CPU_X86_SSE&root_required=!CUSTOM_GOLD",
]
# the versions at which the body's shape changes, and the first that has each filter
VERSIONS = ["1.10", "1.12", "1.16", "1.17", "1.21", "1.22", "1.26", "1.27", "1.29", "1.34", "1.35", "1.39"]
SINCE = {"limit": 16, "required": 17, "member_of": 21, "!": 22, "in:": 24, "root_required": 35}


def speaks(query: str, version: str) -> bool:
    minor = int(version.split(".")[1])
    if "member_of=!" in query and minor < 32:
        return False
    return all(minor >= since for word, since in SINCE.items() if word in query)


async def make_world(pool) -> dict[str, str]:
    q = queries("placement")
    names = {name: str(uuid.uuid4()) for name in WORLD} | {"A": str(uuid.uuid4()), "B": str(uuid.uuid4())}
    async with pool.acquire() as conn, conn.transaction():
        for name, (inventory, traits, aggregates) in WORLD.items():
            rp = await conn.fetchval(q.create_provider, names[name], name, None)
            for rc, (total, reserved, max_unit, step, ratio) in inventory.items():
                await conn.execute("INSERT INTO inventories (resource_provider_id, resource_class, total, "
                                   "reserved, max_unit, step_size, allocation_ratio) "
                                   "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                                   rp, rc, total, reserved, max_unit, step, ratio)
            for trait in traits:
                await conn.execute("INSERT INTO traits (name) VALUES ($1) ON CONFLICT DO NOTHING", trait)
                await conn.execute("INSERT INTO provider_traits SELECT $1, id FROM traits WHERE name = $2",
                                   rp, trait)
            for agg in aggregates:
                await conn.execute("INSERT INTO provider_aggregates VALUES ($1, $2)", rp, names[agg])
            if name == "p2":
                consumer = await conn.fetchval("INSERT INTO consumers (uuid, project_id, user_id) "
                                               "VALUES ($1, 'p', 'u') RETURNING id", uuid.uuid4())
                await conn.execute("INSERT INTO allocations VALUES ($1, $2, 'VCPU', 2)", consumer, rp)
    return names


@pytest.fixture
async def world(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        yield h, await make_world(pool)


class Spy:
    """Counts how often the fast path answered, and can switch it off."""

    def __init__(self, monkeypatch) -> None:
        self.answered, self.enabled = 0, True
        real = flat_candidates.answer

        async def answer(*args, **kwargs):
            if not self.enabled:
                return None
            body = await real(*args, **kwargs)
            self.answered += body is not None
            return body

        monkeypatch.setattr(flat_candidates, "answer", answer)


async def ask(h, query: str, version: str, names: dict[str, str]) -> tuple[int, dict]:
    """The answer, its allocation requests sorted: candidates come in no particular order."""
    headers = dict(h.admin) | {"OpenStack-API-Version": f"placement {version}"}
    resp = await h.http.get("/placement/allocation_candidates?" + query.format(**names), headers=headers)
    body = await resp.json()
    if "allocation_requests" in body:
        body["allocation_requests"].sort(key=json.dumps)
    return resp.status, body


async def test_fast_path_answers_as_the_tree_search_does(world, monkeypatch):
    h, names = world
    spy = Spy(monkeypatch)
    asked = 0
    for query in QUERIES:
        for version in VERSIONS:
            if not speaks(query, version):
                continue
            spy.enabled = True
            status, fast = await ask(h, query, version, names)
            spy.enabled = False
            general_status, general = await ask(h, query, version, names)
            assert (status, fast) == (general_status, general), f"{query} at {version}"
            assert status == 200, f"{query} at {version}: {fast}"
            asked += 1
    assert spy.answered == asked  # every one of them took the fast path
    # and the answers were not all empty
    status, body = await ask(h, "resources=VCPU:1", "1.39", names)
    assert len(body["allocation_requests"]) == 3  # p4 has no VCPU, p3 takes it in steps of 2


async def test_unknown_trait_is_refused(world, monkeypatch):
    h, names = world
    for query in ("resources=VCPU:1&required=CUSTOM_NOPE",
                  "resources=VCPU:1&required=CUSTOM_NOPE&member_of={A}",
                  "resources=VCPU:1&required=!CUSTOM_NOPE&member_of=in:{A},{B}&limit=1"):
        status, body = await ask(h, query, "1.39", names)
        assert status == 400 and body["errors"][0]["code"] == "placement.query.bad_value", query
        assert "CUSTOM_NOPE" in body["errors"][0]["detail"], query


async def test_a_child_sends_requests_to_the_tree_search(world, monkeypatch, pool):
    h, names = world
    spy = Spy(monkeypatch)
    await h.http.post("/placement/resource_providers", headers=h.admin | {
        "OpenStack-API-Version": "placement 1.39"},
        json={"name": "numa0", "uuid": str(uuid.uuid4()), "parent_provider_uuid": names["p1"]})
    status, body = await ask(h, "resources=VCPU:1", "1.39", names)
    assert status == 200 and len(body["allocation_requests"]) == 3
    assert spy.answered == 0


async def _generation(h, headers: dict, rp: str) -> int:
    resp = await h.http.get(f"/placement/resource_providers/{rp}", headers=headers)
    return (await resp.json())["generation"]


async def test_summaries_follow_every_write(world, monkeypatch):
    """The fast path reads each provider's summary as kept by triggers (sql/0025); after claims,
    a released claim, trait, inventory and provider changes it still answers as the tree search
    does."""
    h, names = world
    spy = Spy(monkeypatch)
    headers = dict(h.admin) | {"OpenStack-API-Version": "placement 1.39"}
    claim = str(uuid.uuid4())
    resp = await h.http.put(f"/placement/allocations/{claim}", headers=headers, json={
        "allocations": {names["p1"]: {"resources": {"VCPU": 3, "MEMORY_MB": 1024}},
                        names["p3"]: {"resources": {"VCPU": 2}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert resp.status == 204, await resp.text()
    released = str(uuid.uuid4())
    resp = await h.http.put(f"/placement/allocations/{released}", headers=headers, json={
        "allocations": {names["p5"]: {"resources": {"VCPU": 1}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert resp.status == 204, await resp.text()
    assert (await h.http.delete(f"/placement/allocations/{released}", headers=headers)).status == 204
    resp = await h.http.put(f"/placement/resource_providers/{names['p3']}/traits", headers=headers, json={
        "resource_provider_generation": await _generation(h, headers, names["p3"]),
        "traits": ["CUSTOM_GOLD", "HW_CPU_X86_SSE"]})
    assert resp.status == 200, await resp.text()
    resp = await h.http.put(f"/placement/resource_providers/{names['p2']}/inventories", headers=headers, json={
        "resource_provider_generation": await _generation(h, headers, names["p2"]),
        "inventories": {"VCPU": {"total": 6}, "DISK_GB": {"total": 50}}})
    assert resp.status == 200, await resp.text()
    assert (await h.http.delete(f"/placement/resource_providers/{names['p4']}", headers=headers)).status == 204
    new = str(uuid.uuid4())
    resp = await h.http.post("/placement/resource_providers", headers=headers, json={"name": "p6", "uuid": new})
    assert resp.status == 200, await resp.text()
    resp = await h.http.put(f"/placement/resource_providers/{new}/inventories", headers=headers, json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1}, "DISK_GB": {"total": 10}}})
    assert resp.status == 200, await resp.text()
    resp = await h.http.put(f"/placement/resource_providers/{new}/aggregates", headers=headers, json={
        "resource_provider_generation": 1, "aggregates": [names["A"]]})
    assert resp.status == 200, await resp.text()
    resp = await h.http.put(f"/placement/resource_providers/{names['p1']}/aggregates", headers=headers, json={
        "resource_provider_generation": await _generation(h, headers, names["p1"]), "aggregates": [names["B"]]})
    assert resp.status == 200, await resp.text()
    asked = 0
    for query in ("resources=VCPU:1", "resources=VCPU:1,DISK_GB:5", "resources=VCPU:2&required=CUSTOM_GOLD",
                  "resources=DISK_GB:1&limit=5", "resources=VCPU:1&member_of={A}",
                  "resources=VCPU:1&member_of=in:{A},{B}&required=CUSTOM_GOLD",
                  "resources=VCPU:2&member_of={B}&limit=1", "resources=VCPU:1,DISK_GB:5&member_of={A}",
                  # p3 lost HW_CPU_X86_AVX2 and gained CUSTOM_GOLD (its trait ids, sql/0039)
                  "resources=VCPU:2&member_of=in:{A},{B}&required=HW_CPU_X86_AVX2",
                  "resources=VCPU:2&member_of=in:{A},{B}&required=!CUSTOM_GOLD",
                  "resources=VCPU:2&required=!CUSTOM_GOLD&limit=5"):
        for version in ("1.26", "1.39"):
            spy.enabled = True
            fast = await ask(h, query, version, names)
            spy.enabled = False
            assert fast == await ask(h, query, version, names), f"{query} at {version}"
            asked += 1
    assert spy.answered == asked
    status, body = await ask(h, "resources=VCPU:1", "1.39", names)
    assert status == 200
    summaries = body["provider_summaries"]
    assert summaries[names["p1"]]["resources"]["VCPU"] == {"capacity": 8, "used": 3}
    assert summaries[names["p5"]]["resources"]["VCPU"] == {"capacity": 2, "used": 0}
    assert summaries[names["p2"]]["resources"]["DISK_GB"] == {"capacity": 50, "used": 0}
    assert names["p4"] not in summaries and new in summaries
    status, body = await ask(h, "resources=VCPU:2", "1.39", names)  # p3 counts VCPU in steps of 2
    assert status == 200
    assert body["provider_summaries"][names["p3"]]["traits"] == ["CUSTOM_GOLD", "HW_CPU_X86_SSE"]
    assert body["provider_summaries"][names["p3"]]["resources"]["VCPU"] == {"capacity": 16, "used": 2}


async def test_a_big_answer_comes_whole(world, monkeypatch, pool):
    """The fast path's body comes from PostgreSQL in pieces of at most 128 kB (sql/0028), put
    back together by flat_candidates: an answer several pieces long must read as the tree
    search's, at every shape of the body."""
    h, names = world
    spy = Spy(monkeypatch)
    q = queries("placement")
    many = 600  # ~280 bytes of summary each at 1.39: the summaries alone take two pieces
    async with pool.acquire() as conn, conn.transaction():
        for n in range(many):
            rp = await conn.fetchval(q.create_provider, str(uuid.uuid4()), f"big-{n:04d}", None)
            await conn.executemany(
                "INSERT INTO inventories (resource_provider_id, resource_class, total, max_unit) "
                "VALUES ($1, $2, $3, $3)",
                [(rp, "VCPU", 64 + n), (rp, "MEMORY_MB", 65536 + n), (rp, "DISK_GB", 1024 + n)])
            await conn.execute("INSERT INTO provider_traits SELECT $1, id FROM traits WHERE name = $2",
                               rp, "HW_CPU_X86_AVX2")
            await conn.execute("INSERT INTO provider_aggregates VALUES ($1, $2)", rp, names["A"])
    for query in ("resources=VCPU:1,MEMORY_MB:1024,DISK_GB:20",
                  "resources=VCPU:1&required=HW_CPU_X86_AVX2&member_of={A}"):
        for version in ("1.12", "1.26", "1.39"):
            if not speaks(query, version):
                continue
            spy.enabled = True
            fast = await ask(h, query, version, names)
            spy.enabled = False
            assert fast == await ask(h, query, version, names), f"{query} at {version}"
            assert fast[0] == 200 and len(fast[1]["allocation_requests"]) >= many
    assert spy.answered == 5
    _, body = await ask(h, "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:20", "1.39", names)
    assert len(json.dumps(body["provider_summaries"], separators=(",", ":"))) > 128 * 1024
