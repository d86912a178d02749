"""Nova's deprecated floating IP proxy (os-floating-ips, os-floating-ip-pools until 2.35;
addFloatingIp / removeFloatingIp until 2.43), answered by the network service: what Nova
shows, the status codes Nova gives, and one project never seeing another's floating IPs."""

from __future__ import annotations

import pytest

from nova_async.network import external
from tests.integration.test_server_lifecycle import V, boot_body, ok, sim_cloud, wait_status

EXT_CIDR = "203.0.113.0/24"   # TEST-NET-3: never routed anywhere
FIPS = V + "/os-floating-ips"
OLD = {"OpenStack-API-Version": "compute 2.35"}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, network={"external_cidr": EXT_CIDR}) as h:
        await external.ensure(h.pool, h.deps.settings.network)
        yield h


async def _routed_server(h) -> dict:
    """An ACTIVE server of alice's on net1, whose subnet a router of hers joins to `public`."""
    public = (await ok(await h.http.get("/network/v2.0/networks", params={"name": "public"}, headers=h.alice),
                       200))["networks"][0]
    router = (await ok(await h.http.post("/network/v2.0/routers", headers=h.alice, json={"router": {
        "name": "r1", "external_gateway_info": {"network_id": public["id"]}}}), 201))["router"]
    subnet = (await ok(await h.http.get("/network/v2.0/subnets", params={"network_id": h.net}, headers=h.alice),
                       200))["subnets"][0]
    await ok(await h.http.put(f"/network/v2.0/routers/{router['id']}/add_router_interface", headers=h.alice,
                              json={"subnet_id": subnet["id"]}), 200)
    server = (await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202))["server"]
    return await wait_status(h, server["id"], "ACTIVE")


async def _action(h, server_id, body, headers, status):
    return await ok(await h.http.post(f"{V}/servers/{server_id}/action", headers={**headers, **OLD}, json=body),
                    status)


async def test_allocate_show_list_release_as_nova_shows_them(cloud):
    h = cloud
    pools = await ok(await h.http.get(V + "/os-floating-ip-pools", headers=h.alice), 200)
    assert pools == {"floating_ip_pools": [{"name": "public"}]}
    made = (await ok(await h.http.post(FIPS, headers=h.alice, json={"pool": "public"}), 200))["floating_ip"]
    assert set(made) == {"id", "ip", "fixed_ip", "instance_id", "pool"}
    assert made["ip"].startswith("203.0.113.") and made["pool"] == "public"
    assert made["fixed_ip"] is None and made["instance_id"] is None
    # no pool named: the external network this service made, as Nova's default_floating_pool
    other = (await ok(await h.http.post(FIPS, headers=h.alice, json={"pool": None}), 200))["floating_ip"]
    assert (await ok(await h.http.get(f"{FIPS}/{made['id']}", headers=h.alice), 200))["floating_ip"] == made
    listed = (await ok(await h.http.get(FIPS, headers=h.alice), 200))["floating_ips"]
    assert sorted(f["id"] for f in listed) == sorted([made["id"], other["id"]])
    # Neutron's API sees the same floating IP
    neutron = await ok(await h.http.get(f"/network/v2.0/floatingips/{made['id']}", headers=h.alice), 200)
    assert neutron["floatingip"]["floating_ip_address"] == made["ip"]

    await ok(await h.http.delete(f"{FIPS}/{made['id']}", headers=h.alice), 202)
    await ok(await h.http.get(f"{FIPS}/{made['id']}", headers=h.alice), 404)
    await ok(await h.http.delete(f"{FIPS}/{made['id']}", headers=h.alice), 404)


async def test_unknown_pools_and_ids_are_404_and_bad_bodies_400(cloud):
    h = cloud
    fault = await ok(await h.http.post(FIPS, headers=h.alice, json={"pool": "no-such-pool"}), 404)
    assert "itemNotFound" in fault
    net1 = await ok(await h.http.post(FIPS, headers=h.alice, json={"pool": h.net}), 404)  # not external
    assert "pool" in net1["itemNotFound"]["message"]
    for missing in ("6d1e7ad8-8c3c-4d2a-9c1a-5d3f4c2b1a00", "not-a-uuid"):
        await ok(await h.http.get(f"{FIPS}/{missing}", headers=h.alice), 404)
        await ok(await h.http.delete(f"{FIPS}/{missing}", headers=h.alice), 404)
    await ok(await h.http.post(FIPS, headers=h.alice, json={"pool": 7}), 400)
    await ok(await h.http.post(FIPS, headers=h.alice, data=b"{nope", ), 400)


async def test_a_project_never_sees_another_projects_floating_ips(cloud):
    h = cloud
    mine = (await ok(await h.http.post(FIPS, headers=h.alice, json={"pool": "public"}), 200))["floating_ip"]
    assert (await ok(await h.http.get(FIPS, headers=h.bob), 200))["floating_ips"] == []
    await ok(await h.http.get(f"{FIPS}/{mine['id']}", headers=h.bob), 404)
    await ok(await h.http.delete(f"{FIPS}/{mine['id']}", headers=h.bob), 404)
    # an admin's list is the admin's own project's, as Nova asks Neutron; a show finds any
    assert (await ok(await h.http.get(FIPS, headers=h.admin), 200))["floating_ips"] == []
    assert (await ok(await h.http.get(f"{FIPS}/{mine['id']}", headers=h.admin), 200))["floating_ip"] == mine
    await ok(await h.http.get(f"{FIPS}/{mine['id']}", headers=h.alice), 200)   # still there


async def test_the_proxies_are_gone_from_2_36(cloud):
    h = cloud
    new = {"OpenStack-API-Version": "compute 2.36"}
    mine = (await ok(await h.http.post(FIPS, headers={**h.alice, **OLD}, json={}), 200))["floating_ip"]
    await ok(await h.http.get(FIPS, headers={**h.alice, **new}), 404)
    await ok(await h.http.get(f"{FIPS}/{mine['id']}", headers={**h.alice, **new}), 404)
    await ok(await h.http.post(FIPS, headers={**h.alice, **new}, json={}), 404)
    await ok(await h.http.delete(f"{FIPS}/{mine['id']}", headers={**h.alice, **new}), 404)
    await ok(await h.http.get(V + "/os-floating-ip-pools", headers={**h.alice, **new}), 404)


async def test_add_and_remove_a_floating_ip_on_a_server(cloud):
    h = cloud
    server = await _routed_server(h)
    fixed = server["addresses"]["net1"][0]["addr"]
    first = (await ok(await h.http.post(FIPS, headers=h.alice, json={}), 200))["floating_ip"]
    second = (await ok(await h.http.post(FIPS, headers=h.alice, json={}), 200))["floating_ip"]

    await _action(h, server["id"], {"addFloatingIp": {"address": first["ip"], "fixed_address": fixed}}, h.alice, 202)
    shown = (await ok(await h.http.get(f"{FIPS}/{first['id']}", headers=h.alice), 200))["floating_ip"]
    assert shown["instance_id"] == server["id"] and shown["fixed_ip"] == fixed
    # the fixed IP has its floating IP already: Nova's 400
    await _action(h, server["id"], {"addFloatingIp": {"address": second["ip"]}}, h.alice, 400)
    await _action(h, server["id"], {"addFloatingIp": {"address": "0.0.0.0"}}, h.alice, 404)
    await _action(h, server["id"], {"addFloatingIp": {"address": first["ip"], "fixed_address": "10.9.9.9"}},
                  h.alice, 400)
    await _action(h, server["id"], {"addFloatingIp": {"address": ""}}, h.alice, 400)
    # bob neither sees the server nor alice's floating IP
    await _action(h, server["id"], {"addFloatingIp": {"address": second["ip"]}}, h.bob, 404)
    await _action(h, server["id"], {"removeFloatingIp": {"address": first["ip"]}}, h.bob, 404)
    # gone from 2.44
    new = {**h.alice, "OpenStack-API-Version": "compute 2.44"}
    resp = await h.http.post(f"{V}/servers/{server['id']}/action", headers=new,
                             json={"removeFloatingIp": {"address": first["ip"]}})
    assert resp.status == 404

    await _action(h, server["id"], {"removeFloatingIp": {"address": first["ip"]}}, h.alice, 202)
    shown = (await ok(await h.http.get(f"{FIPS}/{first['id']}", headers=h.alice), 200))["floating_ip"]
    assert shown["instance_id"] is None and shown["fixed_ip"] is None
    # not associated (any more): 409; unknown address: 404
    await _action(h, server["id"], {"removeFloatingIp": {"address": first["ip"]}}, h.alice, 409)
    await _action(h, server["id"], {"removeFloatingIp": {"address": "0.0.0.0"}}, h.alice, 404)
    # without a fixed address: the server's first IPv4 one; then a release takes it off too
    await _action(h, server["id"], {"addFloatingIp": {"address": second["ip"]}}, h.alice, 202)
    shown = (await ok(await h.http.get(f"{FIPS}/{second['id']}", headers=h.alice), 200))["floating_ip"]
    assert shown["fixed_ip"] == fixed
    await ok(await h.http.delete(f"{FIPS}/{second['id']}", headers=h.alice), 202)


async def test_adding_an_associated_floating_ip_to_another_server_moves_it(cloud):
    h = cloud
    first = await _routed_server(h)
    second = await wait_status(h, (await ok(await h.http.post(V + "/servers", headers=h.alice,
                                                              json=boot_body(h, name="vm2")), 202))["server"]["id"],
                               "ACTIVE")
    fip = (await ok(await h.http.post(FIPS, headers=h.alice, json={}), 200))["floating_ip"]
    await _action(h, first["id"], {"addFloatingIp": {"address": fip["ip"]}}, h.alice, 202)
    await _action(h, second["id"], {"addFloatingIp": {"address": fip["ip"]}}, h.alice, 202)
    shown = (await ok(await h.http.get(f"{FIPS}/{fip['id']}", headers=h.alice), 200))["floating_ip"]
    assert shown["instance_id"] == second["id"]
    assert shown["fixed_ip"] == second["addresses"]["net1"][0]["addr"]
    await _action(h, first["id"], {"removeFloatingIp": {"address": fip["ip"]}}, h.alice, 409)
    await _action(h, second["id"], {"removeFloatingIp": {"address": fip["ip"]}}, h.alice, 202)
