"""Host aggregates: admin CRUD, hosts in and out, availability zones they create, and the
metadata filters (tenant isolation, flavor extra specs) the scheduler applies."""

from __future__ import annotations

import pytest

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud   # sim-1, sim-2; alice is in proj-a
A = V + "/os-aggregates"
V241 = {"OpenStack-API-Version": "compute 2.41"}


async def aggregate(h, name: str, zone: str | None = None, hosts=(), **metadata) -> int:
    created = await ok(await h.http.post(A, headers={**h.admin, **V241}, json={
        "aggregate": {"name": name, **({"availability_zone": zone} if zone else {})}}), 200)
    agg = created["aggregate"]["id"]
    for host in hosts:
        await ok(await h.http.post(f"{A}/{agg}/action", headers=h.admin, json={"add_host": {"host": host}}), 200)
    if metadata:
        await ok(await h.http.post(f"{A}/{agg}/action", headers=h.admin,
                                   json={"set_metadata": {"metadata": metadata}}), 200)
    return agg


async def boot(h, status="ACTIVE", **extra) -> dict:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, **extra)), 202)
    server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    assert server["status"] == status, server.get("fault")
    return server


async def host_of(h, server_id: str) -> str:
    return (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **MV}),
                     200))["server"]["OS-EXT-SRV-ATTR:host"]


async def test_an_aggregate_zone_is_a_zone_servers_can_be_booted_into(cloud):
    h = cloud
    agg = await aggregate(h, "rack-1", zone="east", hosts=["sim-2"])
    shown = (await ok(await h.http.get(f"{A}/{agg}", headers={**h.admin, **V241}), 200))["aggregate"]
    assert (shown["hosts"], shown["availability_zone"], shown["metadata"]) == (
        ["sim-2"], "east", {"availability_zone": "east"})
    assert shown["uuid"] and shown["deleted"] is False
    zones = (await ok(await h.http.get(V + "/os-availability-zone", headers=h.alice), 200))
    assert sorted(z["zoneName"] for z in zones["availabilityZoneInfo"]) == ["east", "nova"]
    for _ in range(2):
        assert await host_of(h, (await boot(h, availability_zone="east"))["id"]) == "sim-2"
    assert await host_of(h, (await boot(h, availability_zone="nova"))["id"]) == "sim-1"

    # Out of the aggregate, back in the default zone.
    await ok(await h.http.post(f"{A}/{agg}/action", headers=h.admin, json={"remove_host": {"host": "sim-2"}}), 200)
    resp = await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, availability_zone="east"))
    assert resp.status == 400
    assert (await h.http.delete(f"{A}/{agg}", headers=h.admin)).status == 200
    assert (await h.http.get(f"{A}/{agg}", headers=h.admin)).status == 404


async def test_a_host_cannot_be_in_two_zones(cloud):
    h = cloud
    await aggregate(h, "a", zone="east", hosts=["sim-1"])
    other = await aggregate(h, "b", zone="west")
    resp = await h.http.post(f"{A}/{other}/action", headers=h.admin, json={"add_host": {"host": "sim-1"}})
    assert resp.status == 400 and "already in availability zone(s) east" in await resp.text()
    plain = await aggregate(h, "c", hosts=["sim-1"])            # no zone: fine
    resp = await h.http.post(f"{A}/{plain}/action", headers=h.admin,
                             json={"set_metadata": {"metadata": {"availability_zone": "west"}}})
    assert resp.status == 400


async def test_tenant_isolation_and_flavor_extra_specs(cloud):
    h = cloud
    await aggregate(h, "private", hosts=["sim-1"], filter_tenant_id="proj-z")
    for _ in range(2):
        assert await host_of(h, (await boot(h))["id"]) == "sim-2"

    await aggregate(h, "ssd", hosts=["sim-2"], disk="ssd,nvme")
    fast = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "fast", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
    fid = fast["flavor"]["id"]
    await ok(await h.http.post(f"{V}/flavors/{fid}/os-extra_specs", headers=h.admin, json={
        "extra_specs": {"aggregate_instance_extra_specs:disk": "nvme"}}), 200)
    assert await host_of(h, (await boot(h, flavorRef=fid))["id"]) == "sim-2"
    await ok(await h.http.post(f"{V}/flavors/{fid}/os-extra_specs", headers=h.admin, json={
        "extra_specs": {"aggregate_instance_extra_specs:disk": "tape"}}), 200)
    refused = await boot(h, "ERROR", flavorRef=fid)
    assert "AggregateInstanceExtraSpecsFilter removed" in refused["fault"]["message"]


@pytest.mark.parametrize("method, path, body, status", [
    ("POST", "", {"aggregate": {"name": ""}}, 400),
    ("POST", "", {"aggregate": {"name": "x", "zone": "y"}}, 400),
    ("POST", "", {"aggregate": {"name": "dup"}}, 409),
    ("PUT", "/{id}", {"aggregate": {}}, 400),
    ("POST", "/{id}/action", {"add_host": {"host": "nowhere"}}, 404),
    ("POST", "/{id}/action", {"remove_host": {"host": "sim-1"}}, 404),
    ("POST", "/{id}/action", {"explode": {}}, 400),
    ("POST", "/{id}/action", {"set_metadata": {"metadata": {"k": 3}}}, 400),
    ("GET", "/999999", None, 404),
    ("GET", "/abc", None, 404),
])
async def test_bad_aggregate_requests(cloud, method, path, body, status):
    h = cloud
    agg = await aggregate(h, "dup")
    resp = await h.http.request(method, A + path.format(id=agg), headers=h.admin, json=body)
    assert resp.status == status, await resp.text()


async def test_members_may_not_touch_aggregates(cloud):
    h = cloud
    assert (await h.http.get(A, headers=h.alice)).status == 403
    assert (await h.http.post(A, headers=h.alice, json={"aggregate": {"name": "x"}})).status == 403
