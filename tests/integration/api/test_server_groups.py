"""Server groups as users drive them: policies honoured by the scheduler on two simulated
hosts (three m1.small servers fit on each), the NoValidHost that says which policy
removed which hosts, and the API's shapes and refusals."""

from __future__ import annotations

import asyncio

import pytest

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud
MV = {"OpenStack-API-Version": "compute 2.64"}
OLD = {"OpenStack-API-Version": "compute 2.1"}


async def group(h, policy: str, **rules) -> str:
    body = {"server_group": {"name": f"g-{policy}", "policy": policy, **({"rules": rules} if rules else {})}}
    return (await ok(await h.http.post(V + "/os-server-groups", headers={**h.alice, **MV}, json=body),
                     200))["server_group"]["id"]


async def boot(h, group_id: str, status: str = "ACTIVE", **extra) -> dict:
    body = {**boot_body(h, **extra), "os:scheduler_hints": {"group": group_id}}
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=body), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    assert server["status"] == status, server.get("fault")
    return server


async def host_of(h, server_id: str) -> str:
    body = await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **MV}), 200)
    return body["server"]["OS-EXT-SRV-ATTR:host"]


async def test_anti_affinity_spreads_and_then_says_why_no_host_is_left(cloud):
    h = cloud
    g = await group(h, "anti-affinity")
    hosts = {await host_of(h, (await boot(h, g))["id"]) for _ in range(2)}
    assert hosts == {"sim-1", "sim-2"}
    refused = await boot(h, g, "ERROR")
    assert "ServerGroupAntiAffinityFilter removed 2" in refused["fault"]["message"]
    shown = (await ok(await h.http.get(f"{V}/os-server-groups/{g}", headers={**h.alice, **MV}), 200))
    assert len(shown["server_group"]["members"]) == 3   # the ERROR one is a member until deleted


async def test_affinity_packs_onto_one_host(cloud):
    h = cloud
    g = await group(h, "affinity")
    hosts = {await host_of(h, (await boot(h, g))["id"]) for _ in range(3)}
    assert len(hosts) == 1


async def test_soft_anti_affinity_prefers_but_does_not_require(cloud):
    h = cloud
    g = await group(h, "soft-anti-affinity")
    hosts = [await host_of(h, (await boot(h, g))["id"]) for _ in range(3)]
    assert set(hosts[:2]) == {"sim-1", "sim-2"} and len(hosts) == 3


async def test_max_server_per_host_and_multi_create(cloud):
    h = cloud
    g = await group(h, "anti-affinity", max_server_per_host=2)
    body = {**boot_body(h, name="multi", min_count=4, max_count=4), "os:scheduler_hints": {"group": g}}
    await ok(await h.http.post(V + "/servers", headers=h.alice, json=body), 202)
    members = (await ok(await h.http.get(f"{V}/os-server-groups/{g}", headers={**h.alice, **MV}),
                        200))["server_group"]["members"]
    for member in members:
        assert (await wait_status(h, member, "ACTIVE", "ERROR"))["status"] == "ACTIVE"
    hosts = sorted([await host_of(h, m) for m in members])
    assert hosts == ["sim-1", "sim-1", "sim-2", "sim-2"]


async def test_concurrent_boots_into_one_anti_affinity_group_land_apart(cloud):
    h = cloud
    g = await group(h, "anti-affinity")
    servers = await asyncio.gather(boot(h, g), boot(h, g))
    assert {await host_of(h, s["id"]) for s in servers} == {"sim-1", "sim-2"}


async def test_more_boots_into_one_group_than_the_pool_has_connections_all_end(cloud):
    """A group's decision holds an API connection (the group's lock) while it waits for
    placement, which needs API connections of its own: with more boots into one group at
    once than the pool has connections, none may wait for good (at most half the pool
    decides for groups). The hosts take six; the rest hear there is no host left."""
    h = cloud
    await ok(await h.http.put(V + "/os-quota-sets/proj-a", headers=h.admin, json={"quota_set": {
        "instances": -1, "cores": -1, "ram": -1, "server_group_members": -1}}), 200)
    g = await group(h, "soft-anti-affinity")
    bodies = [{**boot_body(h, name=f"crowd-{i}"), "os:scheduler_hints": {"group": g}}
              for i in range(h.pool.max_size + 4)]
    created = await asyncio.gather(*(h.http.post(V + "/servers", headers=h.alice, json=b) for b in bodies))
    ids = [(await ok(r, 202))["server"]["id"] for r in created]
    ended = await asyncio.gather(*(wait_status(h, sid, "ACTIVE", "ERROR") for sid in ids))
    assert sorted(s["status"] for s in ended) == ["ACTIVE"] * 6 + ["ERROR"] * (len(bodies) - 6)


async def test_shapes_by_microversion_list_and_delete(cloud):
    h = cloud
    old = await ok(await h.http.post(V + "/os-server-groups", headers={**h.alice, **OLD}, json={
        "server_group": {"name": "legacy", "policies": ["anti-affinity"]}}), 200)
    assert old["server_group"] | {"id": None} == {"id": None, "name": "legacy", "policies": ["anti-affinity"],
                                                  "members": [], "metadata": {}}
    new = (await ok(await h.http.get(f"{V}/os-server-groups/{old['server_group']['id']}",
                                     headers={**h.alice, **MV}), 200))["server_group"]
    assert (new["policy"], new["rules"], new["project_id"]) == ("anti-affinity", {}, "proj-a")
    assert (await h.http.get(f"{V}/os-server-groups/{new['id']}", headers=h.bob)).status == 404
    listed = (await ok(await h.http.get(V + "/os-server-groups", headers=h.alice), 200))["server_groups"]
    assert [g["id"] for g in listed] == [new["id"]]
    assert (await ok(await h.http.get(V + "/os-server-groups", headers=h.bob), 200))["server_groups"] == []
    everyone = await ok(await h.http.get(V + "/os-server-groups?all_projects=True", headers=h.admin), 200)
    assert [g["id"] for g in everyone["server_groups"]] == [new["id"]]
    assert (await h.http.delete(f"{V}/os-server-groups/{new['id']}", headers=h.alice)).status == 204
    assert (await h.http.get(f"{V}/os-server-groups/{new['id']}", headers=h.alice)).status == 404


@pytest.mark.parametrize("headers, body", [
    (OLD, {"server_group": {"name": "x", "policies": ["soft-affinity"]}}),       # soft only from 2.15
    (OLD, {"server_group": {"name": "x", "policies": ["affinity", "anti-affinity"]}}),
    (MV, {"server_group": {"name": "x", "policy": "affinity", "rules": {"max_server_per_host": 2}}}),
    (MV, {"server_group": {"name": "x", "policy": "anti-affinity", "rules": {"max_server_per_host": 0}}}),
    (MV, {"server_group": {"name": "x", "policy": "sideways"}}),
    (MV, {"server_group": {"name": "", "policy": "affinity"}}),
    (MV, {"server_group": {"name": "x", "policies": ["affinity"]}}),             # gone at 2.64
])
async def test_bad_groups_are_400(cloud, headers, body):
    h = cloud
    resp = await h.http.post(V + "/os-server-groups", headers={**h.alice, **headers}, json=body)
    assert resp.status == 400, await resp.text()


async def test_a_hint_naming_no_group_of_ours_is_400_and_makes_nothing(cloud):
    h = cloud
    theirs = (await ok(await h.http.post(V + "/os-server-groups", headers={**h.bob, **MV}, json={
        "server_group": {"name": "b", "policy": "affinity"}}), 200))["server_group"]["id"]
    for hint in (theirs, "00000000-0000-0000-0000-000000000000", "nope", ["x"]):
        body = {**boot_body(h), "os:scheduler_hints": {"group": hint}}
        resp = await h.http.post(V + "/servers", headers=h.alice, json=body)
        assert resp.status == 400, await resp.text()
    assert (await ok(await h.http.get(V + "/servers", headers=h.alice), 200))["servers"] == []


async def test_group_quotas(cloud):
    h = cloud
    await ok(await h.http.put(V + "/os-quota-sets/proj-a", headers=h.admin, json={
        "quota_set": {"server_groups": 1, "server_group_members": 1}}), 200)
    g = await group(h, "soft-affinity")
    resp = await h.http.post(V + "/os-server-groups", headers={**h.alice, **MV}, json={
        "server_group": {"name": "two", "policy": "affinity"}})
    assert resp.status == 403
    await boot(h, g)
    resp = await h.http.post(V + "/servers", headers=h.alice,
                             json={**boot_body(h), "os:scheduler_hints": {"group": g}})
    assert resp.status == 403 and "too many servers in group" in await resp.text()


async def test_a_member_shows_its_group_from_2_71(cloud):
    h = cloud
    g = await group(h, "affinity")
    server_id = (await boot(h, g))["id"]
    lone_id = (await boot_alone(h))["id"]

    async def show(server: str, version: str) -> dict:
        headers = {**h.alice, "OpenStack-API-Version": f"compute {version}"}
        return (await ok(await h.http.get(f"{V}/servers/{server}", headers=headers), 200))["server"]

    assert (await show(server_id, "2.71"))["server_groups"] == [g]
    assert (await show(lone_id, "2.71"))["server_groups"] == []
    assert "server_groups" not in await show(server_id, "2.70")
    listed = await ok(await h.http.get(f"{V}/servers/detail", headers={**h.alice, "OpenStack-API-Version":
                                                                        "compute 2.71"}), 200)
    assert all("server_groups" not in s for s in listed["servers"])     # show, not list, carries it


async def boot_alone(h) -> dict:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    return await wait_status(h, created["server"]["id"], "ACTIVE")
