"""Routers, floating IPs, the external network and provider networks through the Neutron
API, as the OpenStack clients drive them: status codes and fault types as Neutron answers,
projects kept apart, quotas enforced, and a floating IP left unassociated when its port goes."""

from __future__ import annotations

import asyncio

import pytest

from nova_async.network import external
from tests.harness import running

NET = "/network/v2.0/networks"
SUBNET = "/network/v2.0/subnets"
PORT = "/network/v2.0/ports"
ROUTER = "/network/v2.0/routers"
FIP = "/network/v2.0/floatingips"
EXT_CIDR = "203.0.113.0/24"   # TEST-NET-3: never routed anywhere


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["network"], tmp_path, network={"external_cidr": EXT_CIDR}) as harness:
        await external.ensure(harness.pool, harness.deps.settings.network)
        yield harness


async def call(h, method, url, headers, body=None, status=200):
    resp = await h.http.request(method, url, json=body, headers=headers)
    assert resp.status == status, await resp.text()
    return None if status == 204 else await resp.json()


async def fault(h, method, url, headers, body=None, status=400):
    resp = await h.http.request(method, url, json=body, headers=headers)
    assert resp.status == status, await resp.text()
    error = (await resp.json())["NeutronError"]
    assert set(error) == {"type", "message", "detail"}
    return error


async def public(h, headers):
    resp = await h.http.get(NET, params={"name": "public"}, headers=headers)
    nets = (await resp.json())["networks"]
    assert len(nets) == 1, nets
    return nets[0]


async def private_net(h, headers, cidr="10.0.0.0/24", name="net1", **subnet):
    net = (await call(h, "POST", NET, headers, {"network": {"name": name}}, 201))["network"]
    sub = (await call(h, "POST", SUBNET, headers, {"subnet": {"name": "sub1", "network_id": net["id"], "cidr": cidr,
                                                              "ip_version": 4, **subnet}}, 201))["subnet"]
    return net, sub


async def router(h, headers, name="r1", **extra):
    return (await call(h, "POST", ROUTER, headers, {"router": {"name": name, "admin_state_up": True, **extra}},
                       201))["router"]


async def guest_port(h, headers, net, **extra):
    body = {"port": {"network_id": net["id"], "device_id": "vm-1", "device_owner": "compute:nova", **extra}}
    return (await call(h, "POST", PORT, headers, body, 201))["port"]


async def test_the_external_network_is_made_once_and_everyone_sees_it(h):
    assert await external.ensure(h.pool, h.deps.settings.network) is None  # a second start: nothing new
    pub = await public(h, h.alice)
    assert pub["router:external"] is True and pub["shared"] is False and pub["project_id"] == "admin"
    assert "provider:network_type" not in pub  # admins only
    assert (await public(h, h.bob))["id"] == pub["id"]
    as_admin = await call(h, "GET", f"{NET}/{pub['id']}", h.admin)
    assert as_admin["network"]["provider:network_type"] == "local"
    assert as_admin["network"]["provider:physical_network"] is None
    assert as_admin["network"]["provider:segmentation_id"] is None
    sub = (await call(h, "GET", f"{SUBNET}/{pub['subnets'][0]}", h.alice))["subnet"]
    assert sub["cidr"] == EXT_CIDR and sub["gateway_ip"] == "203.0.113.1" and sub["enable_dhcp"] is False
    assert sub["allocation_pools"] == [{"start": "203.0.113.2", "end": "203.0.113.254"}]
    # Its subnet is every project's to see, and says so (Neutron's subnet-external-network).
    assert sub["router:external"] is True
    seen = await call(h, "GET", f"{SUBNET}?network_id={pub['id']}", h.bob)
    assert [(s["id"], s["router:external"]) for s in seen["subnets"]] == [(sub["id"], True)]
    aliases = {e["alias"] for e in (await call(h, "GET", "/network/v2.0/extensions", h.bob))["extensions"]}
    assert "subnet-external-network" in aliases
    _, mine = await private_net(h, h.alice)
    assert mine["router:external"] is False
    listed = await call(h, "GET", NET, h.alice, None)
    assert [n["name"] for n in listed["networks"]] == ["public", "net1"]
    # Only an admin makes another external network.
    await fault(h, "POST", NET, h.alice, {"network": {"name": "ext2", "router:external": True}}, status=403)


async def test_external_network_settings(pool, tmp_path):
    settings = {"external_network": "ext", "external_cidr": "198.51.100.0/24",
                "external_gateway": "198.51.100.254", "external_interface": "eth9"}
    async with running(pool, ["network"], tmp_path, network=settings) as h:
        made = await external.ensure(h.pool, h.deps.settings.network)
        assert made["name"] == "ext"
        net = (await call(h, "GET", f"{NET}/{made['id']}", h.admin))["network"]
        assert net["provider:network_type"] == "flat" and net["provider:physical_network"] == "external"
        sub = (await call(h, "GET", f"{SUBNET}/{net['subnets'][0]}", h.admin))["subnet"]
        assert sub["gateway_ip"] == "198.51.100.254"
        assert sub["allocation_pools"] == [{"start": "198.51.100.1", "end": "198.51.100.253"}]


async def test_no_external_network_when_the_setting_is_empty(pool, tmp_path):
    async with running(pool, ["network"], tmp_path, network={"external_network": ""}) as h:
        assert await external.ensure(h.pool, h.deps.settings.network) is None
        assert (await call(h, "GET", NET, h.admin))["networks"] == []


async def test_router_lifecycle_like_openstack_cli(h):
    net, sub = await private_net(h, h.alice)
    r = await router(h, h.alice)
    assert r["status"] == "ACTIVE" and r["external_gateway_info"] is None and r["routes"] == []
    assert r["project_id"] == r["tenant_id"] == "proj-a" and r["admin_state_up"] is True
    assert "distributed" not in r and "ha" not in r  # admins only, as Neutron
    assert {"revision_number", "tags", "availability_zones", "created_at", "updated_at"} <= set(r)

    # router add subnet r1 sub1
    info = await call(h, "PUT", f"{ROUTER}/{r['id']}/add_router_interface", h.alice, {"subnet_id": sub["id"]})
    assert info["id"] == r["id"] and info["subnet_id"] == sub["id"] and info["subnet_ids"] == [sub["id"]]
    assert info["network_id"] == net["id"] and info["tenant_id"] == info["project_id"] == "proj-a"
    port = (await call(h, "GET", f"{PORT}/{info['port_id']}", h.alice))["port"]
    assert port["device_owner"] == "network:router_interface" and port["device_id"] == r["id"]
    assert port["fixed_ips"] == [{"subnet_id": sub["id"], "ip_address": "10.0.0.1"}]
    # `router show` finds the interfaces by device_id
    by_device = await h.http.get(PORT, params={"device_id": r["id"]}, headers=h.alice)
    assert [p["id"] for p in (await by_device.json())["ports"]] == [info["port_id"]]

    # Twice on one router: 400; a router interface cannot be deleted through /ports: 409.
    error = await fault(h, "PUT", f"{ROUTER}/{r['id']}/add_router_interface", h.alice, {"subnet_id": sub["id"]})
    assert error["type"] == "BadRequest" and "already has a port on subnet" in error["message"]
    error = await fault(h, "DELETE", f"{PORT}/{info['port_id']}", h.alice, status=409)
    assert error["type"] == "ServicePortInUse"
    # The same subnet on a second router: its gateway address is taken (409, as Neutron).
    r2 = await router(h, h.alice, name="r2")
    error = await fault(h, "PUT", f"{ROUTER}/{r2['id']}/add_router_interface", h.alice, {"subnet_id": sub["id"]},
                        status=409)
    assert error["type"] == "IpAddressAlreadyAllocated"
    # A router with an interface is in use.
    error = await fault(h, "DELETE", f"{ROUTER}/{r['id']}", h.alice, status=409)
    assert error["type"] == "RouterInUse"

    # router set --external-gateway public r1
    pub = await public(h, h.alice)
    updated = (await call(h, "PUT", f"{ROUTER}/{r['id']}", h.alice,
                          {"router": {"external_gateway_info": {"network_id": pub["id"]}}}))["router"]
    gw = updated["external_gateway_info"]
    assert gw["network_id"] == pub["id"] and gw["enable_snat"] is True
    assert gw["external_fixed_ips"] == [{"subnet_id": pub["subnets"][0], "ip_address": "203.0.113.2"}]
    gw_ports = await call(h, "GET", f"{PORT}?device_owner=network:router_gateway", h.admin)
    assert [(p["device_id"], p["network_id"]) for p in gw_ports["ports"]] == [(r["id"], pub["id"])]
    assert (await call(h, "GET", f"{ROUTER}/{r['id']}", h.alice))["router"]["external_gateway_info"] == gw
    # router unset --external-gateway r1: the gateway port goes with it
    cleared = (await call(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"external_gateway_info": {}}}))
    assert cleared["router"]["external_gateway_info"] is None
    assert (await call(h, "GET", f"{PORT}?device_owner=network:router_gateway", h.admin))["ports"] == []

    # router remove subnet r1 sub1, then delete
    removed = await call(h, "PUT", f"{ROUTER}/{r['id']}/remove_router_interface", h.alice, {"subnet_id": sub["id"]})
    assert removed["port_id"] == info["port_id"] and removed["subnet_ids"] == [sub["id"]]
    await fault(h, "GET", f"{PORT}/{info['port_id']}", h.alice, status=404)
    error = await fault(h, "PUT", f"{ROUTER}/{r['id']}/remove_router_interface", h.alice, {"subnet_id": sub["id"]},
                        status=404)
    assert error["type"] == "RouterInterfaceNotFoundForSubnet"
    await call(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"name": "renamed", "description": "d"}})
    assert (await call(h, "GET", f"{ROUTER}/{r['id']}", h.alice))["router"]["name"] == "renamed"
    await call(h, "DELETE", f"{ROUTER}/{r['id']}", h.alice, status=204)
    error = await fault(h, "GET", f"{ROUTER}/{r['id']}", h.alice, status=404)
    assert error["type"] == "RouterNotFound"
    # Now the subnet is free for r2.
    await call(h, "PUT", f"{ROUTER}/{r2['id']}/add_router_interface", h.alice, {"subnet_id": sub["id"]})


async def test_router_ports_are_active(h):
    """Tempest waits for an interface port to be ACTIVE before it removes it (on a router it
    made admin-down): Neutron's reference back end, OVN, reports a router's ports ACTIVE as
    soon as they are made, whatever the router's admin state."""
    _, sub1 = await private_net(h, h.alice)
    _, sub2 = await private_net(h, h.alice, cidr="10.0.1.0/24", name="net2")
    r = await router(h, h.alice, admin_state_up=False)
    first = await call(h, "PUT", f"{ROUTER}/{r['id']}/add_router_interface", h.alice, {"subnet_id": sub1["id"]})
    second = await call(h, "PUT", f"{ROUTER}/{r['id']}/add_router_interface", h.alice, {"subnet_id": sub2["id"]})
    net3, _ = await private_net(h, h.alice, cidr="10.0.2.0/24", name="net3")
    by_port = (await call(h, "POST", PORT, h.alice, {"port": {"network_id": net3["id"]}}, 201))["port"]
    assert by_port["status"] == "DOWN"  # until it is the router's
    third = await call(h, "PUT", f"{ROUTER}/{r['id']}/add_router_interface", h.alice, {"port_id": by_port["id"]})
    pub = await public(h, h.alice)
    await call(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"external_gateway_info": {"network_id": pub["id"]}}})

    async def statuses():
        listed = (await call(h, "GET", f"{PORT}?device_id={r['id']}", h.admin))["ports"]
        return {p["id"]: p["status"] for p in listed}
    ids = {first["port_id"], second["port_id"], third["port_id"]}
    up = await statuses()
    assert len(up) == 4 and ids < set(up) and set(up.values()) == {"ACTIVE"}
    await call(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"admin_state_up": True}})
    assert await statuses() == up

    # An interface port's fixed IP given again by subnet keeps its address (the gateway IP).
    updated = (await call(h, "PUT", f"{PORT}/{first['port_id']}", h.alice,
                          {"port": {"fixed_ips": [{"subnet_id": sub1["id"]}]}}))["port"]
    assert updated["fixed_ips"] == [{"subnet_id": sub1["id"], "ip_address": "10.0.0.1"}]
    assert updated["status"] == "ACTIVE" and updated["device_id"] == r["id"]
    # Removing one interface leaves the others as they were.
    await call(h, "PUT", f"{ROUTER}/{r['id']}/remove_router_interface", h.alice, {"port_id": second["port_id"]})
    left = await statuses()
    assert second["port_id"] not in left and {first["port_id"], third["port_id"]} < set(left)


async def test_router_interface_by_port_and_bad_requests(h):
    net, sub = await private_net(h, h.alice)
    r = await router(h, h.alice, external_gateway_info={"network_id": (await public(h, h.alice))["id"]})
    assert r["external_gateway_info"]["external_fixed_ips"][0]["ip_address"] == "203.0.113.2"
    url = f"{ROUTER}/{r['id']}/add_router_interface"
    port = (await call(h, "POST", PORT, h.alice, {"port": {"network_id": net["id"],
                                                           "fixed_ips": [{"ip_address": "10.0.0.9"}]}}, 201))["port"]
    info = await call(h, "PUT", url, h.alice, {"port_id": port["id"]})
    assert info["port_id"] == port["id"] and info["subnet_ids"] == [sub["id"]]
    shown = (await call(h, "GET", f"{PORT}/{port['id']}", h.alice))["port"]
    assert shown["device_owner"] == "network:router_interface" and shown["device_id"] == r["id"]

    for body, kind in (({}, "BadRequest"), ({"subnet_id": sub["id"], "port_id": port["id"]}, "BadRequest"),
                       ({"subnet": sub["id"]}, "HTTPBadRequest")):
        assert (await fault(h, "PUT", url, h.alice, body))["type"] == kind
    nogw_net, nogw = await private_net(h, h.alice, cidr="10.9.0.0/24", name="nogw", gateway_ip=None)
    error = await fault(h, "PUT", url, h.alice, {"subnet_id": nogw["id"]})
    assert "must have a gateway IP" in error["message"]
    _, overlapping = await private_net(h, h.alice, cidr="10.0.0.0/16", name="wide")
    assert "overlaps" in (await fault(h, "PUT", url, h.alice, {"subnet_id": overlapping["id"]}))["message"]
    assert (await fault(h, "PUT", url, h.alice, {"subnet_id": "nope"}, status=404))["type"] == "SubnetNotFound"
    used = await guest_port(h, h.alice, nogw_net)
    assert (await fault(h, "PUT", url, h.alice, {"port_id": used["id"]}, status=409))["type"] == "PortInUse"
    pub = await public(h, h.alice)
    assert "external" in (await fault(h, "PUT", url, h.alice, {"subnet_id": pub["subnets"][0]}))["message"]

    # A gateway must be on an external network; enable_snat and distributed are admin-only.
    error = await fault(h, "PUT", f"{ROUTER}/{r['id']}", h.alice,
                        {"router": {"external_gateway_info": {"network_id": net["id"]}}})
    assert error["type"] == "BadRequest" and "not an external network" in error["message"]
    for body in ({"external_gateway_info": {"network_id": pub["id"], "enable_snat": False}},
                 {"distributed": False}, {"ha": False}):
        await fault(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": body}, status=403)
    snatless = (await call(h, "PUT", f"{ROUTER}/{r['id']}", h.admin, {"router": {"external_gateway_info": {
        "network_id": pub["id"], "enable_snat": False}}}))["router"]
    assert snatless["external_gateway_info"]["enable_snat"] is False and snatless["distributed"] is False
    assert snatless["external_gateway_info"]["external_fixed_ips"][0]["ip_address"] == "203.0.113.2"  # kept
    fixed = (await call(h, "PUT", f"{ROUTER}/{r['id']}", h.admin, {"router": {"external_gateway_info": {
        "network_id": pub["id"], "external_fixed_ips": [{"ip_address": "203.0.113.77"}]}}}))["router"]
    assert fixed["external_gateway_info"]["external_fixed_ips"][0]["ip_address"] == "203.0.113.77"
    await fault(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"routes": [
        {"destination": "10.5.0.0/16", "nexthop": "10.0.0.5"}]}})
    await fault(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"bogus": 1}})
    await fault(h, "POST", ROUTER, h.alice, {"router": {"name": "x", "external_gateway_info": {"network_id": "no"}}},
                status=404)

    # By port, removed by port: the port goes (as Neutron); a wrong subnet for it is 400.
    rm = f"{ROUTER}/{r['id']}/remove_router_interface"
    error = await fault(h, "PUT", rm, h.alice, {"port_id": port["id"], "subnet_id": nogw["id"]})
    assert error["type"] == "SubnetMismatchForPort"
    error = await fault(h, "PUT", rm, h.alice, {"port_id": used["id"]}, status=404)
    assert error["type"] == "RouterInterfaceNotFound"
    await call(h, "PUT", rm, h.alice, {"port_id": port["id"]})
    await fault(h, "GET", f"{PORT}/{port['id']}", h.alice, status=404)
    # Deleting a router with only a gateway takes the gateway port along.
    await call(h, "DELETE", f"{ROUTER}/{r['id']}", h.alice, status=204)
    assert (await call(h, "GET", f"{PORT}?device_owner=network:router_gateway", h.admin))["ports"] == []


async def test_routers_of_other_projects_are_invisible(h):
    r = await router(h, h.alice)
    _, bob_sub = await private_net(h, h.bob, cidr="10.1.0.0/24")
    for method, url, body in (("GET", f"{ROUTER}/{r['id']}", None), ("DELETE", f"{ROUTER}/{r['id']}", None),
                              ("PUT", f"{ROUTER}/{r['id']}", {"router": {"name": "mine"}}),
                              ("PUT", f"{ROUTER}/{r['id']}/add_router_interface", {"subnet_id": bob_sub["id"]})):
        assert (await fault(h, method, url, h.bob, body, status=404))["type"] == "RouterNotFound"
    assert (await call(h, "GET", ROUTER, h.bob))["routers"] == []
    assert [x["id"] for x in (await call(h, "GET", ROUTER, h.admin))["routers"]] == [r["id"]]
    # Alice cannot attach Bob's subnet: she cannot see it.
    error = await fault(h, "PUT", f"{ROUTER}/{r['id']}/add_router_interface", h.alice,
                        {"subnet_id": bob_sub["id"]}, status=404)
    assert error["type"] == "SubnetNotFound"
    await fault(h, "GET", f"{ROUTER}/not-a-uuid", h.alice, status=404)


async def setup_reachable(h, headers, cidr="10.0.0.0/24"):
    """A private network with a guest port, behind a router with a gateway on public."""
    net, sub = await private_net(h, headers, cidr=cidr)
    pub = await public(h, headers)
    r = await router(h, headers, external_gateway_info={"network_id": pub["id"]})
    await call(h, "PUT", f"{ROUTER}/{r['id']}/add_router_interface", headers, {"subnet_id": sub["id"]})
    return net, sub, pub, r, await guest_port(h, headers, net)


async def test_floating_ip_lifecycle_like_openstack_cli(h):
    net, sub, pub, r, port = await setup_reachable(h, h.alice)
    # floating ip create public
    fip = (await call(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"]}}, 201))["floatingip"]
    assert fip["floating_ip_address"] == "203.0.113.3"  # .1 the gateway, .2 the router's
    assert fip["status"] == "DOWN" and fip["port_id"] is None and fip["router_id"] is None
    assert fip["fixed_ip_address"] is None and fip["port_details"] is None
    assert fip["floating_network_id"] == pub["id"] and fip["project_id"] == fip["tenant_id"] == "proj-a"
    holder = await call(h, "GET", f"{PORT}?device_owner=network:floatingip", h.admin)
    assert [(p["device_id"], p["fixed_ips"][0]["ip_address"]) for p in holder["ports"]] == [(fip["id"], "203.0.113.3")]
    error = await fault(h, "DELETE", f"{PORT}/{holder['ports'][0]['id']}", h.admin, status=409)
    assert error["type"] == "ServicePortInUse"
    # find_ip: GET /floatingips/<address> is a 404, then the listing
    await fault(h, "GET", f"{FIP}/203.0.113.3", h.alice, status=404)

    # server add floating ip vm1 203.0.113.3
    assoc = (await call(h, "PUT", f"{FIP}/{fip['id']}", h.alice, {"floatingip": {"port_id": port["id"]}}))["floatingip"]
    assert assoc["port_id"] == port["id"] and assoc["router_id"] == r["id"] and assoc["status"] == "ACTIVE"
    assert assoc["fixed_ip_address"] == port["fixed_ips"][0]["ip_address"]
    assert assoc["port_details"]["device_id"] == "vm-1" and assoc["port_details"]["network_id"] == net["id"]
    listed = (await call(h, "GET", FIP, h.alice))["floatingips"]
    assert [(f["floating_ip_address"], f["fixed_ip_address"]) for f in listed] == [
        ("203.0.113.3", port["fixed_ips"][0]["ip_address"])]
    by_port = await h.http.get(FIP, params={"port_id": port["id"]}, headers=h.alice)
    assert [f["id"] for f in (await by_port.json())["floatingips"]] == [fip["id"]]

    # What the association now holds in place: the gateway, the interface.
    error = await fault(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"external_gateway_info": None}},
                        status=409)
    assert error["type"] == "RouterExternalGatewayInUseByFloatingIp"
    error = await fault(h, "PUT", f"{ROUTER}/{r['id']}/remove_router_interface", h.alice, {"subnet_id": sub["id"]},
                        status=409)
    assert error["type"] == "RouterInterfaceInUseByFloatingIP"
    # One floating IP per fixed IP
    second = (await call(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"]}},
                         201))["floatingip"]
    error = await fault(h, "PUT", f"{FIP}/{second['id']}", h.alice, {"floatingip": {"port_id": port["id"]}},
                        status=409)
    assert error["type"] == "FloatingIPPortAlreadyAssociated"

    # server remove floating ip vm1 203.0.113.3
    off = (await call(h, "PUT", f"{FIP}/{fip['id']}", h.alice, {"floatingip": {"port_id": None}}))["floatingip"]
    assert off["port_id"] is None and off["router_id"] is None and off["fixed_ip_address"] is None
    assert off["status"] == "DOWN"
    # Now `second` may take it, on create.
    third = (await call(h, "POST", FIP, h.alice, {"floatingip": {
        "floating_network_id": pub["id"], "port_id": port["id"], "description": "web"}}, 201))["floatingip"]
    assert third["port_id"] == port["id"] and third["status"] == "ACTIVE" and third["description"] == "web"
    # floating ip delete
    await call(h, "DELETE", f"{FIP}/{fip['id']}", h.alice, status=204)
    assert (await fault(h, "GET", f"{FIP}/{fip['id']}", h.alice, status=404))["type"] == "FloatingIPNotFound"
    assert len((await call(h, "GET", f"{PORT}?device_owner=network:floatingip", h.admin))["ports"]) == 2
    # The address is free again, and the lowest: the next one takes it.
    again = (await call(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"]}}, 201))["floatingip"]
    assert again["floating_ip_address"] == "203.0.113.3"


async def test_deleting_an_external_network_takes_its_unused_floating_ips(h):
    """Neutron's answer: unassociated floating IPs go with their network; one that a router
    holds the network for (its gateway) keeps it, and then nothing is deleted."""
    ext = (await call(h, "POST", NET, h.admin, {"network": {"name": "ext2", "router:external": True}}, 201))["network"]
    sub = (await call(h, "POST", SUBNET, h.admin, {"subnet": {"network_id": ext["id"], "cidr": "198.51.100.0/24",
                                                              "ip_version": 4, "enable_dhcp": False}}, 201))["subnet"]
    fip = (await call(h, "POST", FIP, h.admin, {"floatingip": {"floating_network_id": ext["id"]}}, 201))["floatingip"]
    r = await router(h, h.admin, external_gateway_info={"network_id": ext["id"]})
    error = await fault(h, "DELETE", f"{NET}/{ext['id']}", h.admin, status=409)
    assert error["type"] == "NetworkInUse"
    assert (await call(h, "GET", f"{FIP}/{fip['id']}", h.admin))["floatingip"]["id"] == fip["id"]

    await call(h, "PUT", f"{ROUTER}/{r['id']}", h.admin, {"router": {"external_gateway_info": None}})
    await call(h, "DELETE", f"{NET}/{ext['id']}", h.admin, status=204)
    assert (await fault(h, "GET", f"{FIP}/{fip['id']}", h.admin, status=404))["type"] == "FloatingIPNotFound"
    await fault(h, "GET", f"{SUBNET}/{sub['id']}", h.admin, status=404)
    assert (await call(h, "GET", f"{PORT}?network_id={ext['id']}", h.admin))["ports"] == []


async def test_floating_ip_bad_requests(h):
    net, sub, pub, r, port = await setup_reachable(h, h.alice)
    err = await fault(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": net["id"]}})
    assert err["type"] == "BadRequest" and "not a valid external network" in err["message"]
    err = await fault(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": "nope"}}, status=404)
    assert err["type"] == "NetworkNotFound"
    await fault(h, "POST", FIP, h.alice, {"floatingip": {}})
    await fault(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"], "dns_name": "x"}})
    # A chosen address: admins only (Neutron's policy); then in range, free, not the gateway.
    await fault(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"],
                                                         "floating_ip_address": "203.0.113.50"}}, status=403)
    chosen = (await call(h, "POST", FIP, h.admin, {"floatingip": {
        "floating_network_id": pub["id"], "floating_ip_address": "203.0.113.50", "project_id": "proj-a"}},
        201))["floatingip"]
    assert chosen["floating_ip_address"] == "203.0.113.50" and chosen["project_id"] == "proj-a"
    err = await fault(h, "POST", FIP, h.admin, {"floatingip": {"floating_network_id": pub["id"],
                                                               "floating_ip_address": "203.0.113.50"}}, status=409)
    assert err["type"] == "IpAddressAlreadyAllocated"
    err = await fault(h, "POST", FIP, h.admin, {"floatingip": {"floating_network_id": pub["id"],
                                                               "floating_ip_address": "192.0.2.1"}})
    assert err["type"] == "InvalidIpForNetwork"
    await fault(h, "POST", FIP, h.admin, {"floatingip": {"floating_network_id": pub["id"],
                                                         "floating_ip_address": "203.0.113.1"}})

    # Association: a port no router reaches is a 404 ExternalGatewayForFloatingIPNotFound.
    lonely_net, _ = await private_net(h, h.alice, cidr="10.7.0.0/24", name="lonely")
    lonely = await guest_port(h, h.alice, lonely_net)
    url = f"{FIP}/{chosen['id']}"
    err = await fault(h, "PUT", url, h.alice, {"floatingip": {"port_id": lonely["id"]}}, status=404)
    assert err["type"] == "ExternalGatewayForFloatingIPNotFound"
    err = await fault(h, "PUT", url, h.alice, {"floatingip": {"port_id": "nope"}}, status=404)
    assert err["type"] == "PortNotFound"
    err = await fault(h, "PUT", url, h.alice, {"floatingip": {"port_id": port["id"], "fixed_ip_address": "10.0.0.99"}})
    assert "does not have fixed ip" in err["message"]
    await fault(h, "PUT", url, h.alice, {"floatingip": {"fixed_ip_address": "10.0.0.99"}})
    router_port = (await call(h, "GET", f"{PORT}?device_owner=network:router_interface", h.alice))["ports"][0]
    await fault(h, "PUT", url, h.alice, {"floatingip": {"port_id": router_port["id"]}})
    # With the right fixed IP named it works, and a description alone changes only that.
    done = (await call(h, "PUT", url, h.alice, {"floatingip": {
        "port_id": port["id"], "fixed_ip_address": port["fixed_ips"][0]["ip_address"]}}))["floatingip"]
    assert done["router_id"] == r["id"]
    described = (await call(h, "PUT", url, h.alice, {"floatingip": {"description": "db"}}))["floatingip"]
    assert described["description"] == "db" and described["port_id"] == port["id"]


async def test_floating_ips_of_other_projects_are_invisible(h):
    _, _, pub, _, port = await setup_reachable(h, h.alice)
    fip = (await call(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"]}}, 201))["floatingip"]
    for method, body in (("GET", None), ("DELETE", None), ("PUT", {"floatingip": {"port_id": None}})):
        err = await fault(h, method, f"{FIP}/{fip['id']}", h.bob, body, status=404)
        assert err["type"] == "FloatingIPNotFound"
    assert (await call(h, "GET", FIP, h.bob))["floatingips"] == []
    # Bob cannot point his floating IP at Alice's port: he cannot see it.
    bobs = (await call(h, "POST", FIP, h.bob, {"floatingip": {"floating_network_id": pub["id"]}}, 201))["floatingip"]
    await fault(h, "PUT", f"{FIP}/{bobs['id']}", h.bob, {"floatingip": {"port_id": port["id"]}}, status=404)
    assert len((await call(h, "GET", FIP, h.admin))["floatingips"]) == 2
    # Neither sees the other's floating IP port, nor the router's gateway port.
    assert (await call(h, "GET", PORT, h.bob))["ports"] == []


async def test_a_deleted_guest_port_leaves_its_floating_ip_unassociated(h):
    _, _, pub, r, port = await setup_reachable(h, h.alice)
    fip = (await call(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"],
                                                               "port_id": port["id"]}}, 201))["floatingip"]
    assert fip["status"] == "ACTIVE" and fip["router_id"] == r["id"]
    await call(h, "DELETE", f"{PORT}/{port['id']}", h.alice, status=204)
    left = (await call(h, "GET", f"{FIP}/{fip['id']}", h.alice))["floatingip"]
    assert left["port_id"] is None and left["fixed_ip_address"] is None and left["router_id"] is None
    assert left["status"] == "DOWN" and left["port_details"] is None
    assert left["floating_ip_address"] == fip["floating_ip_address"]
    # Nothing holds the router any more: its gateway can go.
    await call(h, "PUT", f"{ROUTER}/{r['id']}", h.alice, {"router": {"external_gateway_info": {}}})


async def test_router_and_floating_ip_quotas(h):
    pub = await public(h, h.alice)
    for i in range(10):
        await router(h, h.alice, name=f"r{i}")
    err = await fault(h, "POST", ROUTER, h.alice, {"router": {"name": "one-too-many"}}, status=409)
    assert err["type"] == "OverQuota" and "router" in err["message"]
    await router(h, h.bob, name="bobs")  # per project
    for _ in range(50):
        await call(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"]}}, 201)
    err = await fault(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": pub["id"]}}, status=409)
    assert err["type"] == "OverQuota" and "floatingip" in err["message"]
    details = (await call(h, "GET", "/network/v2.0/quotas/proj-a/details", h.alice))["quota"]
    assert details["router"] == {"limit": 10, "used": 10, "reserved": 0}
    assert details["floatingip"] == {"limit": 50, "used": 50, "reserved": 0}
    # The router's own ports and the floating IPs' ports are no project's ports.
    assert details["port"]["used"] == 0
    # Freed, one fits again.
    some = (await call(h, "GET", ROUTER, h.alice))["routers"][0]
    await call(h, "DELETE", f"{ROUTER}/{some['id']}", h.alice, status=204)
    await router(h, h.alice, name="again")


async def test_the_external_subnet_runs_out(pool, tmp_path):
    async with running(pool, ["network"], tmp_path, network={"external_cidr": "203.0.113.0/29"}) as h:
        pub = await external.ensure(h.pool, h.deps.settings.network)
        for _ in range(5):  # .2 to .6
            await call(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": str(pub["id"])}}, 201)
        err = await fault(h, "POST", FIP, h.alice, {"floatingip": {"floating_network_id": str(pub["id"])}},
                          status=409)
        assert err["type"] == "IpAddressGenerationFailure"
        err = await fault(h, "POST", ROUTER, h.alice, {"router": {
            "name": "r", "external_gateway_info": {"network_id": str(pub["id"])}}}, status=409)
        assert (await call(h, "GET", ROUTER, h.alice))["routers"] == []  # nothing half-made


async def test_provider_networks(pool, tmp_path):
    async with running(pool, ["network"], tmp_path,
                       network={"physical_networks": ["physnet1:eth1", "physnet2:eth2"]}) as h:
        flat = (await call(h, "POST", NET, h.admin, {"network": {
            "name": "lan", "provider:network_type": "flat", "provider:physical_network": "physnet1"}}, 201))["network"]
        assert flat["provider:network_type"] == "flat" and flat["provider:physical_network"] == "physnet1"
        assert flat["provider:segmentation_id"] is None
        err = await fault(h, "POST", NET, h.admin, {"network": {
            "name": "again", "provider:network_type": "flat", "provider:physical_network": "physnet1"}}, status=409)
        assert err["type"] == "FlatNetworkInUse"
        local = (await call(h, "POST", NET, h.admin, {"network": {"name": "l"}}, 201))["network"]
        assert local["provider:network_type"] == "local" and local["provider:physical_network"] is None
        for body in ({"provider:network_type": "vxlan"}, {"provider:network_type": "vlan",
                                                          "provider:physical_network": "physnet2"},
                     {"provider:network_type": "flat"},
                     {"provider:network_type": "flat", "provider:physical_network": "physnet9"},
                     {"provider:network_type": "flat", "provider:physical_network": "physnet2",
                      "provider:segmentation_id": 5},
                     {"provider:network_type": "flat", "provider:physical_network": "physnet2",
                      "provider:segmentation_id": "5"},  # as `--provider-segment 5` sends it
                     {"provider:physical_network": "physnet2"}, {"provider:network_type": 3}):
            err = await fault(h, "POST", NET, h.admin, {"network": {"name": "x", **body}})
            assert err["type"] in ("HTTPBadRequest", "InvalidInput"), err
        assert "not supported here" in (await fault(h, "POST", NET, h.admin, {"network": {
            "provider:network_type": "geneve"}}))["message"]
        err = await fault(h, "POST", NET, h.alice, {"network": {"name": "mine", "provider:network_type": "local"}},
                          status=403)
        assert "provider:network_type" in err["message"]
        # Members see no provider attributes, even of their own networks.
        mine = (await call(h, "POST", NET, h.alice, {"network": {"name": "mine"}}, 201))["network"]
        assert not any(k.startswith("provider:") for k in mine)
        shown = (await call(h, "GET", f"{NET}/{mine['id']}", h.admin))["network"]
        assert shown["provider:network_type"] == "local"
        listed = (await call(h, "GET", NET, h.admin))["networks"]
        assert {n["name"]: n["provider:network_type"] for n in listed} == {"lan": "flat", "l": "local",
                                                                            "mine": "local"}


async def test_extensions_listed_for_the_cli(h):
    listed = (await call(h, "GET", "/network/v2.0/extensions", h.alice))["extensions"]
    assert {"router", "external-net", "ext-gw-mode"} <= {e["alias"] for e in listed}
    assert (await call(h, "GET", "/network/v2.0/extensions/router", h.alice))["extension"]["alias"] == "router"
    await fault(h, "GET", "/network/v2.0/extensions/external-gateway-multihoming", h.alice, status=404)
    by_name = await h.http.get("/network/v2.0/extensions", params={"name": "external-gateway-multihoming"},
                               headers=h.alice)
    assert (await by_name.json())["extensions"] == []


async def test_agents_are_listed_as_none(h):
    """No Neutron agents report here (the roles do their work in-process): the list is empty
    for everyone, as a Neutron server's before any agent reports, and any id is unknown."""
    assert "agent" in {e["alias"] for e in (await call(h, "GET", "/network/v2.0/extensions", h.alice))["extensions"]}
    for who in (h.alice, h.admin):
        assert await call(h, "GET", "/network/v2.0/agents", who) == {"agents": []}
    url = "/network/v2.0/agents/0b9c1e1e-8d5a-4a4e-9d6a-3f3f0e9b1c11"
    for method, body in (("GET", None), ("PUT", {"agent": {"admin_state_up": False}}), ("DELETE", None)):
        assert (await fault(h, method, url, h.admin, body, status=404))["type"] == "AgentNotFound"


async def test_racing_requests_keep_quotas_and_interfaces_exact(h):
    """Concurrent creations never pass the quota, and one subnet never gets two routers."""
    for i in range(8):
        await router(h, h.alice, name=f"r{i}")
    answers = await asyncio.gather(*[h.http.post(ROUTER, json={"router": {"name": f"race{i}"}}, headers=h.alice)
                                     for i in range(6)])
    assert sorted(a.status for a in answers) == [201, 201, 409, 409, 409, 409]
    assert len((await call(h, "GET", ROUTER, h.alice))["routers"]) == 10

    _, sub = await private_net(h, h.bob, cidr="10.2.0.0/24")
    routers_ = [await router(h, h.bob, name=f"b{i}") for i in range(4)]
    answers = await asyncio.gather(*[
        h.http.put(f"{ROUTER}/{r['id']}/add_router_interface", json={"subnet_id": sub["id"]}, headers=h.bob)
        for r in routers_])
    assert sorted(a.status for a in answers) == [200, 409, 409, 409]
    ports = (await call(h, "GET", f"{PORT}?device_owner=network:router_interface", h.bob))["ports"]
    assert [p["fixed_ips"][0]["ip_address"] for p in ports] == ["10.2.0.1"]


async def test_a_bad_external_setting_is_logged_and_the_service_serves_on(pool, tmp_path):
    from nova_async.service import make_external_network

    async with running(pool, ["network"], tmp_path, network={"external_cidr": "203.0.113.0/33"}) as h:
        await make_external_network(h.pool, h.deps.settings, list(h.roles.values()))
        assert (await call(h, "GET", NET, h.admin))["networks"] == []
    # Fixed, the next start makes it: the failed attempt claimed nothing.
    async with running(pool, ["network"], tmp_path, network={"external_cidr": EXT_CIDR}) as h:
        await make_external_network(h.pool, h.deps.settings, list(h.roles.values()))
        assert [n["name"] for n in (await call(h, "GET", NET, h.admin))["networks"]] == ["public"]
