"""The Neutron v2.0 subset as the OpenStack clients drive it: networks, subnets, ports and
quotas, with the projects kept apart and every bad request answered with a NeutronError."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import running

NET = "/network/v2.0/networks"
SUBNET = "/network/v2.0/subnets"
PORT = "/network/v2.0/ports"


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["network"], tmp_path) as harness:
        yield harness


async def post(h, url, headers, body, status=201):
    resp = await h.http.post(url, json=body, headers=headers)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def make_net(h, headers, name="net1", **extra):
    return (await post(h, NET, headers, {"network": {"name": name, "admin_state_up": True, **extra}}))["network"]


async def make_subnet(h, headers, network_id, cidr="10.0.0.0/24", **extra):
    body = {"subnet": {"name": "sub1", "network_id": network_id, "cidr": cidr, "ip_version": 4, **extra}}
    return (await post(h, SUBNET, headers, body))["subnet"]


async def neutron_error(resp, status):
    assert resp.status == status, await resp.text()
    assert resp.content_type == "application/json"
    error = (await resp.json())["NeutronError"]
    assert set(error) == {"type", "message", "detail"}
    return error


async def test_version_documents_are_public(h):
    for path in ("/network", "/network/"):
        resp = await h.http.get(path)
        assert resp.status == 200
        version = (await resp.json())["versions"][0]
        assert version["id"] == "v2.0"
        assert version["links"][0]["href"] == f"{h.deps.settings.base_url}/network/v2.0/"
    resp = await h.http.get("/network/v2.0")
    assert resp.status == 200
    assert {r["collection"] for r in (await resp.json())["resources"]} >= {"networks", "subnets", "ports"}


async def test_network_and_subnet_lifecycle_like_openstack_cli(h):
    net = await make_net(h, h.alice)
    assert net["status"] == "ACTIVE" and net["admin_state_up"] is True and net["shared"] is False
    assert net["project_id"] == net["tenant_id"] == "proj-a"
    assert net["subnets"] == [] and net["mtu"] == 1500 and net["router:external"] is False

    # `openstack subnet create --network net1`: name lookup, then a filtered list.
    error = await neutron_error(await h.http.get(f"{NET}/net1", headers=h.alice), 404)
    assert error["type"] == "NetworkNotFound" and "net1" in error["message"]
    found = await (await h.http.get(NET, params={"name": "net1"}, headers=h.alice)).json()
    assert [n["id"] for n in found["networks"]] == [net["id"]]

    sub = await make_subnet(h, h.alice, net["id"])
    assert sub["gateway_ip"] == "10.0.0.1"
    assert sub["allocation_pools"] == [{"start": "10.0.0.2", "end": "10.0.0.254"}]
    assert sub["enable_dhcp"] is True and sub["dns_nameservers"] == [] and sub["host_routes"] == []
    assert sub["project_id"] == "proj-a" and sub["ip_version"] == 4 and sub["cidr"] == "10.0.0.0/24"

    shown = await (await h.http.get(f"{NET}/{net['id']}", headers=h.alice)).json()
    assert shown["network"]["subnets"] == [sub["id"]]
    trimmed = await (await h.http.get(f"{NET}/{net['id']}", params=[("fields", "id"), ("fields", "name")],
                                      headers=h.alice)).json()
    assert trimmed["network"] == {"id": net["id"], "name": "net1"}
    listed = await (await h.http.get(SUBNET, params={"network_id": net["id"]}, headers=h.alice)).json()
    assert [s["id"] for s in listed["subnets"]] == [sub["id"]]
    assert (await h.http.get(f"{SUBNET}/{sub['id']}", headers=h.alice)).status == 200

    assert (await h.http.delete(f"{SUBNET}/{sub['id']}", headers=h.alice)).status == 204
    await neutron_error(await h.http.get(f"{SUBNET}/{sub['id']}", headers=h.alice), 404)
    await make_subnet(h, h.alice, net["id"])
    # Deleting the network takes its (unused) subnets with it.
    assert (await h.http.delete(f"{NET}/{net['id']}", headers=h.alice)).status == 204
    await neutron_error(await h.http.get(f"{NET}/{net['id']}", headers=h.alice), 404)
    assert (await (await h.http.get(SUBNET, headers=h.alice)).json())["subnets"] == []


async def test_subnet_choices(h):
    net = await make_net(h, h.alice)
    sub = await make_subnet(h, h.alice, net["id"], cidr="192.168.5.0/24", gateway_ip="192.168.5.254",
                            dns_nameservers=["8.8.8.8"], enable_dhcp=False,
                            host_routes=[{"destination": "10.9.0.0/16", "nexthop": "192.168.5.9"}])
    assert sub["gateway_ip"] == "192.168.5.254"
    assert sub["allocation_pools"] == [{"start": "192.168.5.1", "end": "192.168.5.253"}]
    assert sub["dns_nameservers"] == ["8.8.8.8"] and sub["enable_dhcp"] is False
    mid = await make_subnet(h, h.alice, net["id"], cidr="192.168.6.0/29", gateway_ip="192.168.6.3")
    assert mid["allocation_pools"] == [{"start": "192.168.6.1", "end": "192.168.6.2"},
                                       {"start": "192.168.6.4", "end": "192.168.6.6"}]
    none = await make_subnet(h, h.alice, net["id"], cidr="192.168.7.0/24", gateway_ip=None,
                             allocation_pools=[{"start": "192.168.7.100", "end": "192.168.7.110"}])
    assert none["gateway_ip"] is None
    assert none["allocation_pools"] == [{"start": "192.168.7.100", "end": "192.168.7.110"}]
    v6 = (await post(h, SUBNET, h.alice, {"subnet": {"network_id": net["id"], "cidr": "fd00:1::/64",
                                                     "ip_version": 6}}))["subnet"]
    assert v6["gateway_ip"] == "fd00:1::1"
    assert v6["allocation_pools"] == [{"start": "fd00:1::2", "end": "fd00:1::ffff:ffff:ffff:ffff"}]
    for expected in ("fd00:1::2", "fd00:1::3"):
        port = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"],
                                                       "fixed_ips": [{"subnet_id": v6["id"]}]}}))["port"]
        assert port["fixed_ips"] == [{"subnet_id": v6["id"], "ip_address": expected}]
    # Without a choice, a port's address comes from the network's first IPv4 subnet.
    port = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"]}}))["port"]
    assert port["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "192.168.5.1"}]
    # The lowest free address, across pools; one given back is the next one handed out.
    on_mid = [(await post(h, PORT, h.alice, {"port": {"network_id": net["id"], "fixed_ips": [{"subnet_id": mid["id"]}]}}))
              ["port"] for _ in range(3)]
    assert [p["fixed_ips"][0]["ip_address"] for p in on_mid] == ["192.168.6.1", "192.168.6.2", "192.168.6.4"]
    resp = await h.http.delete(f"{PORT}/{on_mid[1]['id']}", headers=h.alice)
    assert resp.status == 204
    again = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"], "fixed_ips": [{"subnet_id": mid["id"]}]}}))
    assert again["port"]["fixed_ips"][0]["ip_address"] == "192.168.6.2"


async def test_bad_requests_are_neutron_errors_never_500(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"], cidr="10.1.0.0/16")
    nid = net["id"]

    def subnet(**fields):
        return {"subnet": {"network_id": nid, "ip_version": 4, "cidr": "10.2.0.0/24", **fields}}

    cases = [
        (NET, b"{not json", 400, "JSON"),
        (NET, {"network": {"name": 5}}, 400, "name"),
        (NET, {"network": {"admin_state_up": "yes"}}, 400, "admin_state_up"),
        (NET, {"network": {"bogus": 1}}, 400, "bogus"),
        (NET, {"netwerk": {}}, 400, "network"),
        (NET, {"network": {"mtu": 10}}, 400, "mtu"),
        (NET, {"network": {"shared": True}}, 403, "shared"),
        (NET, {"network": {"project_id": "proj-b"}}, 400, "project"),
        (SUBNET, subnet(cidr="10.0.0.0/33"), 400, "10.0.0.0/33"),
        (SUBNET, subnet(cidr="banana"), 400, "banana"),
        (SUBNET, subnet(cidr="10.0.0.5/24"), 400, "10.0.0.0/24"),
        (SUBNET, subnet(cidr="10.0.0.0/31"), 400, "small"),
        (SUBNET, subnet(ip_version=6), 400, "ip_version"),
        (SUBNET, subnet(ip_version=5), 400, "ip_version"),
        (SUBNET, subnet(cidr="10.1.128.0/24"), 400, "overlaps"),
        (SUBNET, subnet(gateway_ip="10.9.9.9"), 400, "gateway_ip"),
        (SUBNET, subnet(gateway_ip="nope"), 400, "gateway_ip"),
        (SUBNET, subnet(allocation_pools=[{"start": "10.2.0.9", "end": "10.2.0.3"}]), 400, "start"),
        (SUBNET, subnet(allocation_pools=[{"start": "10.2.0.2", "end": "10.2.0.9"},
                                          {"start": "10.2.0.5", "end": "10.2.0.20"}]), 400, "overlap"),
        (SUBNET, subnet(allocation_pools=[{"start": "10.2.0.1", "end": "10.2.0.9"}]), 400, "Gateway"),
        (SUBNET, subnet(allocation_pools=[{"start": "10.2.0.0", "end": "10.2.0.9"}]), 400, "10.2.0.0"),
        (SUBNET, subnet(dns_nameservers=["dns.example"]), 400, "dns"),
        (SUBNET, subnet(network_id=str(uuid.uuid4())), 404, "could not be found"),
        (SUBNET, subnet(network_id="net1"), 404, "net1"),
        (SUBNET, {"subnet": {"network_id": nid, "ip_version": 4}}, 400, "cidr"),
        (SUBNET, {"subnet": {"cidr": "10.3.0.0/24", "ip_version": 4}}, 400, "network_id"),
        (PORT, {"port": {"network_id": nid, "mac_address": "zz"}}, 400, "mac_address"),
        (PORT, {"port": {"network_id": nid, "fixed_ips": [{"ip_address": "172.16.0.1"}]}}, 400, "172.16.0.1"),
    ]
    for url, body, status, words in cases:
        if isinstance(body, bytes):
            resp = await h.http.post(url, data=body, headers={**h.alice, "Content-Type": "application/json"})
        else:
            resp = await h.http.post(url, json=body, headers=h.alice)
        error = await neutron_error(resp, status)
        assert words in error["message"], (body, error)
        if status == 400:
            assert error["type"] == "HTTPBadRequest"

    for method, url, status in [("GET", f"{NET}?shared=perhaps", 400), ("GET", f"{SUBNET}?ip_version=x", 400),
                                ("GET", "/network/v2.0/trunks", 404), ("PUT", NET, 405),
                                ("GET", f"{PORT}/not-a-port", 404), ("DELETE", f"{SUBNET}/nope", 404)]:
        await neutron_error(await h.http.request(method, url, headers=h.alice), status)
    error = await neutron_error(await h.http.get(NET), 401)
    assert error["type"] == "HTTPUnauthorized"
    listed = await (await h.http.get(NET, headers=h.alice)).json()
    assert len(listed["networks"]) == 1


async def test_projects_do_not_see_each_others_networks(h):
    alices = await make_net(h, h.alice, name="alices")
    await make_subnet(h, h.alice, alices["id"])
    shared = await make_net(h, h.admin, name="public", shared=True)
    shared_sub = await make_subnet(h, h.admin, shared["id"], cidr="172.24.4.0/24")

    await neutron_error(await h.http.get(f"{NET}/{alices['id']}", headers=h.bob), 404)
    await neutron_error(await h.http.delete(f"{NET}/{alices['id']}", headers=h.bob), 404)
    bobs = await (await h.http.get(NET, headers=h.bob)).json()
    assert [n["name"] for n in bobs["networks"]] == ["public"]
    bobs_subnets = await (await h.http.get(SUBNET, headers=h.bob)).json()
    assert [s["id"] for s in bobs_subnets["subnets"]] == [shared_sub["id"]]
    error = await neutron_error(await h.http.post(SUBNET, headers=h.bob, json={"subnet": {
        "network_id": alices["id"], "cidr": "10.5.0.0/24", "ip_version": 4}}), 404)
    assert error["type"] == "NetworkNotFound"
    await neutron_error(await h.http.delete(f"{NET}/{shared['id']}", headers=h.bob), 403)

    # Bob may put a port on the shared network; Alice never sees it.
    port = (await post(h, PORT, h.bob, {"port": {"network_id": shared["id"]}}))["port"]
    await neutron_error(await h.http.get(f"{PORT}/{port['id']}", headers=h.alice), 404)
    assert (await (await h.http.get(PORT, headers=h.alice)).json())["ports"] == []
    everything = await (await h.http.get(NET, headers=h.admin)).json()
    assert {n["name"] for n in everything["networks"]} == {"alices", "public"}


async def test_ports_and_what_they_keep_in_use(h):
    net = await make_net(h, h.alice)
    sub = await make_subnet(h, h.alice, net["id"], cidr="10.0.0.0/29")
    first = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"], "name": "p1",
                                                    "device_id": "dev-1", "device_owner": "compute:nova"}}))["port"]
    assert first["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "10.0.0.2"}]
    assert first["mac_address"].startswith("fa:16:3e:") and first["status"] == "DOWN"
    assert first["binding:host_id"] == "" and first["device_id"] == "dev-1"
    chosen = (await post(h, PORT, h.alice, {"port": {
        "network_id": net["id"], "fixed_ips": [{"ip_address": "10.0.0.5"}],
        "mac_address": "fa:16:3e:00:00:01"}}))["port"]
    assert chosen["fixed_ips"][0]["ip_address"] == "10.0.0.5"
    third = (await post(h, PORT, h.alice, {"port": {"network_id": net["id"]}}))["port"]
    assert third["fixed_ips"][0]["ip_address"] == "10.0.0.3"

    error = await neutron_error(await h.http.post(PORT, headers=h.alice, json={"port": {
        "network_id": net["id"], "fixed_ips": [{"ip_address": "10.0.0.5"}]}}), 409)
    assert error["type"] == "IpAddressAlreadyAllocated"
    error = await neutron_error(await h.http.post(PORT, headers=h.alice, json={"port": {
        "network_id": net["id"], "mac_address": "fa:16:3e:00:00:01"}}), 409)
    assert error["type"] == "MacAddressInUse"

    by_device = await (await h.http.get(PORT, params={"device_id": "dev-1"}, headers=h.alice)).json()
    assert [p["id"] for p in by_device["ports"]] == [first["id"]]
    by_net = await (await h.http.get(PORT, params={"network_id": net["id"]}, headers=h.alice)).json()
    assert len(by_net["ports"]) == 3
    shown = await (await h.http.get(f"{PORT}/{first['id']}", headers=h.alice)).json()
    assert shown["port"]["fixed_ips"] == first["fixed_ips"]

    error = await neutron_error(await h.http.delete(f"{NET}/{net['id']}", headers=h.alice), 409)
    assert error["type"] == "NetworkInUse"
    error = await neutron_error(await h.http.delete(f"{SUBNET}/{sub['id']}", headers=h.alice), 409)
    assert error["type"] == "SubnetInUse"
    for p in (first, chosen, third):
        assert (await h.http.delete(f"{PORT}/{p['id']}", headers=h.alice)).status == 204
    await neutron_error(await h.http.get(f"{PORT}/{first['id']}", headers=h.alice), 404)
    assert (await h.http.delete(f"{NET}/{net['id']}", headers=h.alice)).status == 204


async def test_quotas(h):
    resp = await h.http.get("/network/v2.0/quotas/proj-a", headers=h.alice)
    assert resp.status == 200
    quota = (await resp.json())["quota"]
    assert {k: quota[k] for k in ("network", "subnet", "port", "router", "floatingip", "security_group",
                                  "security_group_rule")} == {
        "network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
        "security_group": 10, "security_group_rule": 100}
    await make_net(h, h.alice)
    details = (await (await h.http.get("/network/v2.0/quotas/proj-a/details", headers=h.alice)).json())["quota"]
    assert details["network"] == {"limit": 100, "used": 1, "reserved": 0}
    await neutron_error(await h.http.get("/network/v2.0/quotas/proj-a", headers=h.bob), 403)
    assert (await h.http.get("/network/v2.0/quotas/proj-a", headers=h.admin)).status == 200
