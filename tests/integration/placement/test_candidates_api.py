"""`GET /allocation_candidates` over nested trees, with every parameter up to 1.39.

The world (built with SQL, since the trait and aggregate APIs are someone else's):

    cn1  MEMORY_MB 4096, HW_CPU_X86_AVX2, aggregate A
    ├── numa0  VCPU 4, HW_NUMA_ROOT
    │   └── pf1  SRIOV_NET_VF 4, CUSTOM_PHYSNET_A
    └── numa1  VCPU 4, HW_NUMA_ROOT
        └── pf2  SRIOV_NET_VF 4, CUSTOM_PHYSNET_B
    cn2  VCPU 4 (2 used), MEMORY_MB 2048, DISK_GB 100, HW_CPU_X86_SSE, aggregate B
    cn3  VCPU 16, MEMORY_MB 8192, HW_CPU_X86_AVX2 + CUSTOM_GOLD, aggregates A and B

Each case names the allocation requests it expects as sets of "provider:CLASS=n" strings
(one set per request, order ignored), or the error code of a 400."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from nova_async.db.queries import queries
from nova_async.placement import candidates
from tests.harness import running

TREE = {  # name: (parent, inventories, traits, aggregates)
    "cn1": (None, {"MEMORY_MB": 4096}, ["HW_CPU_X86_AVX2"], ["A"]),
    "numa0": ("cn1", {"VCPU": 4}, ["HW_NUMA_ROOT"], []),
    "pf1": ("numa0", {"SRIOV_NET_VF": 4}, ["CUSTOM_PHYSNET_A"], []),
    "numa1": ("cn1", {"VCPU": 4}, ["HW_NUMA_ROOT"], []),
    "pf2": ("numa1", {"SRIOV_NET_VF": 4}, ["CUSTOM_PHYSNET_B"], []),
    "cn2": (None, {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 100}, ["HW_CPU_X86_SSE"], ["B"]),
    "cn3": (None, {"VCPU": 16, "MEMORY_MB": 8192}, ["HW_CPU_X86_AVX2", "CUSTOM_GOLD"], ["A", "B"]),
}


def req(*parts: str) -> frozenset[str]:
    return frozenset(parts)


BASIC = "resources=VCPU:1,MEMORY_MB:512"
ALL_FOUR = {req("cn1:MEMORY_MB=512", "numa0:VCPU=1"), req("cn1:MEMORY_MB=512", "numa1:VCPU=1"),
            req("cn2:VCPU=1", "cn2:MEMORY_MB=512"), req("cn3:VCPU=1", "cn3:MEMORY_MB=512")}
VCPU_ONLY = {req("numa0:VCPU=1"), req("numa1:VCPU=1"), req("cn2:VCPU=1"), req("cn3:VCPU=1")}
TWO_VCPU_GROUPS = "resources1=VCPU:1&resources2=VCPU:1"
NIC_IN_NUMA = ("resources=VCPU:1&resources_NIC=SRIOV_NET_VF:1&required_NIC=CUSTOM_PHYSNET_A"
               "&required_NUMA=HW_NUMA_ROOT&same_subtree=_NIC,_NUMA")

CASES: list[tuple[str, str, str, Any]] = [
    # (name, query, microversion, expected requests | error code)
    ("resources spread over a tree", BASIC, "1.39", ALL_FOUR),
    ("usage counts", "resources=VCPU:3", "1.39",
     {req("numa0:VCPU=3"), req("numa1:VCPU=3"), req("cn3:VCPU=3")}),
    ("one class comes from one provider", "resources=VCPU:5", "1.39", {req("cn3:VCPU=5")}),
    ("nothing fits", "resources=VCPU:17", "1.39", set()),
    ("required trait, on any provider used", f"{BASIC}&required=HW_CPU_X86_AVX2", "1.39",
     ALL_FOUR - {req("cn2:VCPU=1", "cn2:MEMORY_MB=512")}),
    ("required needs 1.17", f"{BASIC}&required=HW_CPU_X86_AVX2", "1.16", "placement.undefined_code"),
    ("forbidden trait", f"{BASIC}&required=!HW_CPU_X86_AVX2", "1.22",
     {req("cn2:VCPU=1", "cn2:MEMORY_MB=512")}),
    ("forbidden needs 1.22", f"{BASIC}&required=!HW_CPU_X86_AVX2", "1.21", "placement.query.bad_value"),
    ("any-of traits", "resources=VCPU:1&required=in:HW_CPU_X86_SSE,CUSTOM_GOLD", "1.39",
     {req("cn2:VCPU=1"), req("cn3:VCPU=1")}),
    ("repeated required are ANDed", "resources=VCPU:1&required=in:HW_CPU_X86_SSE,CUSTOM_GOLD"
     "&required=HW_CPU_X86_AVX2", "1.39", {req("cn3:VCPU=1")}),
    ("any-of needs 1.39", "resources=VCPU:1&required=in:HW_CPU_X86_SSE,CUSTOM_GOLD", "1.38",
     "placement.query.bad_value"),
    ("unknown trait", "resources=VCPU:1&required=CUSTOM_NOPE", "1.39", "placement.query.bad_value"),
    ("bad trait name", "resources=VCPU:1&required=lower", "1.39", "placement.query.bad_value"),
    ("member_of, the root's aggregates count for its children", "resources=VCPU:1&member_of={A}",
     "1.29", {req("numa0:VCPU=1"), req("numa1:VCPU=1"), req("cn3:VCPU=1")}),
    ("member_of needs 1.21", "resources=VCPU:1&member_of={A}", "1.20", "placement.undefined_code"),
    ("member_of in:", "resources=VCPU:1&member_of=in:{A},{B}", "1.29", VCPU_ONLY),
    ("before 1.29 only roots are candidates", "resources=VCPU:1&member_of=in:{A},{B}", "1.28",
     {req("cn2:VCPU=1"), req("cn3:VCPU=1")}),
    ("repeated member_of are ANDed", "resources=VCPU:1&member_of={A}&member_of={B}", "1.24",
     {req("cn3:VCPU=1")}),
    ("not a member", "resources=VCPU:1&member_of=!{A}", "1.32", {req("cn2:VCPU=1")}),
    ("not a member of any", "resources=VCPU:1&member_of=!in:{A},{B}", "1.32", set()),
    ("! needs 1.32", "resources=VCPU:1&member_of=!{A}", "1.31", "placement.query.bad_value"),
    ("member_of a non-uuid", "resources=VCPU:1&member_of=nope", "1.39", "placement.query.bad_value"),
    ("in_tree of a root", "resources=VCPU:1&in_tree={cn2}", "1.31", {req("cn2:VCPU=1")}),
    ("in_tree of a child means its whole tree", "resources=VCPU:1&in_tree={pf2}", "1.31",
     {req("numa0:VCPU=1"), req("numa1:VCPU=1")}),
    ("in_tree with all resources in a numbered group", "in_tree={numa1}&resources1=VCPU:1", "1.31",
     {req("numa0:VCPU=1"), req("numa1:VCPU=1")}),
    ("in_tree of a group", "resources1=VCPU:1&in_tree1={cn2}", "1.31", {req("cn2:VCPU=1")}),
    ("in_tree needs 1.31", "resources=VCPU:1&in_tree={cn2}", "1.30", "placement.undefined_code"),
    ("in_tree a non-uuid", "resources=VCPU:1&in_tree=nope", "1.31", "placement.query.bad_value"),
    ("a numbered group is one provider with its traits",
     "resources=VCPU:1&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_B", "1.29",
     {req("numa0:VCPU=1", "pf2:SRIOV_NET_VF=1"), req("numa1:VCPU=1", "pf2:SRIOV_NET_VF=1")}),
    ("numbered groups need 1.25", "resources=VCPU:1&resources1=SRIOV_NET_VF:1", "1.24",
     "placement.undefined_code"),
    ("group_policy is required with two groups", TWO_VCPU_GROUPS, "1.25", "placement.query.missing_value"),
    ("group_policy=isolate", f"{TWO_VCPU_GROUPS}&group_policy=isolate", "1.29",
     {req("numa0:VCPU=1", "numa1:VCPU=1")}),
    ("group_policy=none may share a provider, usage summed", f"{TWO_VCPU_GROUPS}&group_policy=none",
     "1.29", {req("numa0:VCPU=1", "numa1:VCPU=1"), req("numa0:VCPU=2"), req("numa1:VCPU=2"),
              req("cn2:VCPU=2"), req("cn3:VCPU=2")}),
    ("a bad group_policy", f"{TWO_VCPU_GROUPS}&group_policy=spread", "1.25", "placement.query.bad_value"),
    ("string suffixes at 1.33", "resources_COMPUTE=VCPU:5", "1.33", {req("cn3:VCPU=5")}),
    ("string suffixes need 1.33", "resources_COMPUTE=VCPU:5", "1.32", "placement.undefined_code"),
    ("member_of in a group", "resources1=VCPU:1&member_of1={B}", "1.25",
     {req("cn2:VCPU=1"), req("cn3:VCPU=1")}),
    ("limit", f"{BASIC}&limit=2", "1.16", 2),
    ("limit with filters", f"{BASIC}&required=HW_CPU_X86_AVX2&limit=1", "1.17", 1),
    ("limit must be positive", f"{BASIC}&limit=0", "1.16", "placement.query.bad_value"),
    ("limit needs 1.16", f"{BASIC}&limit=1", "1.15", "placement.undefined_code"),
    ("root_required", f"{BASIC}&root_required=CUSTOM_GOLD", "1.35",
     {req("cn3:VCPU=1", "cn3:MEMORY_MB=512")}),
    ("root_required forbidding", "resources=VCPU:1&root_required=!HW_CPU_X86_AVX2", "1.35",
     {req("cn2:VCPU=1")}),
    ("root_required is about the root only", "resources=VCPU:1&root_required=HW_NUMA_ROOT", "1.35", set()),
    ("root_required needs 1.35", "resources=VCPU:1&root_required=CUSTOM_GOLD", "1.34",
     "placement.undefined_code"),
    ("same_subtree with a resourceless group", NIC_IN_NUMA, "1.36",
     {req("numa0:VCPU=1", "pf1:SRIOV_NET_VF=1"), req("numa1:VCPU=1", "pf1:SRIOV_NET_VF=1")}),
    ("same_subtree needs 1.36", NIC_IN_NUMA, "1.35", "placement.undefined_code"),
    ("resourceless groups must be in same_subtree",
     "resources=VCPU:1&required_NUMA=HW_NUMA_ROOT", "1.36", "placement.query.bad_value"),
    ("same_subtree names known groups", "resources_A=VCPU:1&same_subtree=_A,_B", "1.36",
     "placement.query.bad_value"),
    ("some resources are needed", "required=HW_CPU_X86_AVX2", "1.39", "placement.query.missing_value"),
    ("unknown parameter", f"{BASIC}&colour=red", "1.39", "placement.undefined_code"),
]


async def make_world(pool) -> dict[str, str]:
    q = queries("placement")
    names = {name: str(uuid.uuid4()) for name in TREE} | {"A": str(uuid.uuid4()), "B": str(uuid.uuid4())}
    ids: dict[str, int] = {}
    async with pool.acquire() as conn, conn.transaction():
        for name, (parent, inventory, traits, aggregates) in TREE.items():
            ids[name] = await conn.fetchval(q.create_provider, names[name], name,
                                            ids[parent] if parent else None)
            for rc, total in inventory.items():
                await conn.execute("INSERT INTO inventories (resource_provider_id, resource_class, total, "
                                   "max_unit) VALUES ($1, $2, $3, $3)", ids[name], rc, total)
            for trait in traits:
                await conn.execute("INSERT INTO traits (name) VALUES ($1) ON CONFLICT DO NOTHING", trait)
                await conn.execute("INSERT INTO provider_traits SELECT $1, id FROM traits WHERE name = $2",
                                   ids[name], trait)
            for agg in aggregates:
                await conn.execute("INSERT INTO provider_aggregates VALUES ($1, $2)", ids[name], names[agg])
        consumer = await conn.fetchval("INSERT INTO consumers (uuid, project_id, user_id) "
                                       "VALUES ($1, 'p', 'u') RETURNING id", uuid.uuid4())
        await conn.execute("INSERT INTO allocations VALUES ($1, $2, 'VCPU', 2)", consumer, ids["cn2"])
    return names


@pytest.fixture
async def world(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        yield h, await make_world(pool)


async def get(h, query: str, version: str, names: dict[str, str]) -> tuple[int, dict]:
    headers = dict(h.admin) | {"OpenStack-API-Version": f"placement {version}"}
    resp = await h.http.get("/placement/allocation_candidates?" + query.format(**names), headers=headers)
    return resp.status, await resp.json()


def shapes(body: dict, names: dict[str, str]) -> list[frozenset[str]]:
    """Each allocation request as a set of "provider:CLASS=n", whatever the microversion's shape."""
    by_uuid = {v: k for k, v in names.items()}
    found = []
    for areq in body["allocation_requests"]:
        allocs = areq["allocations"]
        pairs = ([(a["resource_provider"]["uuid"], a["resources"]) for a in allocs]
                 if isinstance(allocs, list) else [(u, a["resources"]) for u, a in allocs.items()])
        found.append(frozenset(f"{by_uuid[u]}:{rc}={n}" for u, res in pairs for rc, n in res.items()))
    return found


@pytest.mark.parametrize("name,query,version,expected", CASES, ids=[c[0] for c in CASES])
async def test_candidates(world, name, query, version, expected):
    h, names = world
    status, body = await get(h, query, version, names)
    if isinstance(expected, str):
        assert status == 400, body
        assert body["errors"][0]["code"] == expected, body
        return
    assert status == 200, body
    found = shapes(body, names)
    assert len(found) == len(set(found)), f"duplicate requests: {found}"
    if isinstance(expected, int):
        assert len(found) == expected
    else:
        assert set(found) == expected
    used = {u for areq in body["allocation_requests"] for u in
            (areq["allocations"] if isinstance(areq["allocations"], dict) else [])}
    assert used <= set(body["provider_summaries"])


async def test_shapes_by_microversion(world):
    h, names = world
    q = "resources=VCPU:1,MEMORY_MB:4096"  # only cn1's tree (twice) and cn3 have that much memory

    # before 1.29 trees are invisible: only cn3, alone, answers
    _, old = await get(h, q, "1.11", names)
    assert old == {"allocation_requests": [{"allocations": [
                       {"resource_provider": {"uuid": names["cn3"]}, "resources": {"VCPU": 1, "MEMORY_MB": 4096}}]}],
                   "provider_summaries": {names["cn3"]: {"resources": {
                       "VCPU": {"capacity": 16, "used": 0}, "MEMORY_MB": {"capacity": 8192, "used": 0}}}}}
    _, v12 = await get(h, "resources=DISK_GB:1", "1.12", names)
    assert v12["allocation_requests"] == [{"allocations": {names["cn2"]: {"resources": {"DISK_GB": 1}}}}]
    # the requested classes only, before 1.27; traits from 1.17
    assert v12["provider_summaries"] == {names["cn2"]: {"resources": {"DISK_GB": {"capacity": 100, "used": 0}}}}
    _, v28 = await get(h, "resources=DISK_GB:1", "1.28", names)
    assert v28["provider_summaries"][names["cn2"]] == {"traits": ["HW_CPU_X86_SSE"], "resources": {
        "VCPU": {"capacity": 4, "used": 2}, "MEMORY_MB": {"capacity": 2048, "used": 0},
        "DISK_GB": {"capacity": 100, "used": 0}}}

    _, v29 = await get(h, q, "1.29", names)
    summaries = v29["provider_summaries"]
    assert set(summaries) == {names[n] for n in ("cn1", "numa0", "numa1", "pf1", "pf2", "cn3")}
    assert summaries[names["pf1"]] == {
        "resources": {"SRIOV_NET_VF": {"capacity": 4, "used": 0}}, "traits": ["CUSTOM_PHYSNET_A"],
        "parent_provider_uuid": names["numa0"], "root_provider_uuid": names["cn1"]}
    assert v29["allocation_requests"][0] == {"allocations": {
        names["cn1"]: {"resources": {"MEMORY_MB": 4096}}, names["numa0"]: {"resources": {"VCPU": 1}}}}

    _, v34 = await get(h, "resources=VCPU:1&resources_NIC=SRIOV_NET_VF:1&required_NIC=CUSTOM_PHYSNET_B"
                          "&in_tree={cn1}", "1.34", names)
    assert {tuple(a["mappings"][""]) for a in v34["allocation_requests"]} == {(names["numa0"],), (names["numa1"],)}
    assert all(a["mappings"]["_NIC"] == [names["pf2"]] for a in v34["allocation_requests"])
    _, bare = await get(h, "in_tree={cn1}&resources_NIC=SRIOV_NET_VF:1", "1.34", names)
    assert [a["mappings"] for a in bare["allocation_requests"]] == [{"_NIC": [names["pf1"]]}, {"_NIC": [names["pf2"]]}]

    _, v36 = await get(h, NIC_IN_NUMA, "1.36", names)
    assert all(a["mappings"]["_NUMA"] == [names["numa0"]] for a in v36["allocation_requests"])


async def test_limit_still_finds_candidates_behind_many_rejected_trees(world):
    """With a filter SQL cannot decide (a forbidden trait), the limit is over-fetched; when
    every fetched tree is rejected, the search goes on over all of them."""
    h, names = world
    async with h.pool.acquire() as conn, conn.transaction():
        gold = await conn.fetchval("SELECT id FROM traits WHERE name = 'CUSTOM_GOLD'")
        for i in range(120):
            rp = await conn.fetchval(queries("placement").create_provider, uuid.uuid4(), f"gold-{i}", None)
            await conn.execute("INSERT INTO inventories (resource_provider_id, resource_class, total, max_unit) "
                               "VALUES ($1, 'DISK_GB', 10, 10)", rp)
            await conn.execute("INSERT INTO provider_traits VALUES ($1, $2)", rp, gold)
        late = await conn.fetchval(queries("placement").create_provider, uuid.uuid4(), "plain", None)
        await conn.execute("INSERT INTO inventories (resource_provider_id, resource_class, total, max_unit) "
                           "VALUES ($1, 'DISK_GB', 10, 10)", late)
    status, body = await get(h, "resources=DISK_GB:1&required=!CUSTOM_GOLD&limit=2", "1.22", names)
    assert status == 200
    found = [next(iter(a["allocations"])) for a in body["allocation_requests"]]
    assert found == [names["cn2"], await h.pool.fetchval("SELECT uuid::text FROM resource_providers "
                                                         "WHERE name = 'plain'")]


async def test_scheduler_question_is_roots_alone_with_optional_filters(world):
    h, names = world
    found = await candidates.find(h.pool, {"VCPU": 1})
    assert [c.name for c in found] == ["cn2", "cn3"]  # cn1 holds no VCPU itself
    assert found[1].traits == ("CUSTOM_GOLD", "HW_CPU_X86_AVX2")
    assert [c.name for c in await candidates.find(h.pool, {"VCPU": 1}, required=["CUSTOM_GOLD"])] == ["cn3"]
    assert [c.name for c in await candidates.find(h.pool, {"VCPU": 1}, forbidden=["CUSTOM_GOLD"])] == ["cn2"]
    assert [c.name for c in await candidates.find(h.pool, {"VCPU": 1}, member_of=[names["B"]])] == ["cn2", "cn3"]
    assert [c.name for c in await candidates.find(h.pool, {"VCPU": 1}, limit=1)] == ["cn2"]


SHARING_CASES = [
    ("a sharing provider lends to the trees of its aggregate", "resources=VCPU:1,DISK_GB:10", "1.39",
     {req("cn2:VCPU=1", "cn2:DISK_GB=10"), req("cn2:VCPU=1", "nfs:DISK_GB=10"),
      req("cn3:VCPU=1", "nfs:DISK_GB=10")}),
    ("and before 1.29, being a root", "resources=VCPU:1,DISK_GB:10", "1.28",
     {req("cn2:VCPU=1", "cn2:DISK_GB=10"), req("cn2:VCPU=1", "nfs:DISK_GB=10"),
      req("cn3:VCPU=1", "nfs:DISK_GB=10")}),
    ("alone it is one candidate, not one per tree", "resources=DISK_GB:200", "1.39",
     {req("nfs:DISK_GB=200")}),
    ("its traits count for the unnumbered group", "resources=VCPU:1,DISK_GB:10&required=CUSTOM_NFS",
     "1.39", {req("cn2:VCPU=1", "nfs:DISK_GB=10"), req("cn3:VCPU=1", "nfs:DISK_GB=10")}),
    ("a numbered group may take it", "resources=VCPU:1&resources1=DISK_GB:10&required1=CUSTOM_NFS",
     "1.39", {req("cn2:VCPU=1", "nfs:DISK_GB=10"), req("cn3:VCPU=1", "nfs:DISK_GB=10")}),
]


@pytest.mark.parametrize("name,query,version,expected", SHARING_CASES, ids=[c[0] for c in SHARING_CASES])
async def test_sharing_providers(world, name, query, version, expected):
    h, names = world
    async with h.pool.acquire() as conn, conn.transaction():
        names["nfs"] = str(uuid.uuid4())
        nfs = await conn.fetchval(queries("placement").create_provider, names["nfs"], "nfs", None)
        await conn.execute("INSERT INTO inventories (resource_provider_id, resource_class, total, max_unit) "
                           "VALUES ($1, 'DISK_GB', 500, 500)", nfs)
        await conn.execute("INSERT INTO traits (name) VALUES ('MISC_SHARES_VIA_AGGREGATE'), ('CUSTOM_NFS') "
                           "ON CONFLICT DO NOTHING")
        await conn.execute("INSERT INTO provider_traits SELECT $1, id FROM traits "
                           "WHERE name IN ('MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_NFS')", nfs)
        await conn.execute("INSERT INTO provider_aggregates VALUES ($1, $2)", nfs, names["B"])
    status, body = await get(h, query, version, names)
    assert status == 200, body
    assert set(shapes(body, names)) == expected
    assert len(body["allocation_requests"]) == len(expected)
    if any("nfs" in part for r in expected for part in r):
        assert names["nfs"] in body["provider_summaries"]
