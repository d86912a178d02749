"""Updating networks, subnets and ports (PUT) and creating them in bulk, as Neutron answers:
what may change and who may change it, a port's addresses replaced in one transaction, its
security groups, port security and allowed address pairs, and a bulk create that makes all
or nothing. Bad input gets a 4xx NeutronError, never a 500."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import running
from tests.integration.network.test_network_api import make_net, make_subnet, neutron_error, post

NET = "/network/v2.0/networks"
SUBNET = "/network/v2.0/subnets"
PORT = "/network/v2.0/ports"


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["network"], tmp_path) as harness:
        yield harness


async def put(h, url, headers, body, status=200):
    resp = await h.http.put(url, json=body, headers=headers)
    assert resp.status == status, await resp.text()
    return await resp.json()


async def refused(h, url, headers, body, status, kind):
    """A PUT refused with `status` and Neutron's fault `kind`; returns the message."""
    error = await neutron_error(await h.http.put(url, json=body, headers=headers), status)
    assert error["type"] == kind, error
    return error["message"]


async def make_port(h, headers, network_id, **extra):
    return (await post(h, PORT, headers, {"port": {"network_id": network_id, **extra}}))["port"]


async def show(h, url, headers):
    resp = await h.http.get(url, headers=headers)
    assert resp.status == 200, await resp.text()
    return next(iter((await resp.json()).values()))


def addresses(port):
    return sorted(ip["ip_address"] for ip in port["fixed_ips"])


async def add_group(h, project):
    """A security group row as the security-group API makes it (that API is another module's)."""
    group = str(uuid.uuid4())
    await h.pool.execute("INSERT INTO security_groups (id, project_id, name) VALUES ($1, $2, 'sg')", group, project)
    return group


# --- ports -----------------------------------------------------------------------------

async def test_port_update_moves_revision_and_shows_on_get(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"])
    port = await make_port(h, h.alice, net["id"], name="p1")
    assert port["revision_number"] == 1
    assert port["port_security_enabled"] is True and len(port["security_groups"]) == 1  # the default group
    assert port["allowed_address_pairs"] == []

    body = {"port": {"name": "renamed", "description": "d", "admin_state_up": False,
                     "device_id": "dev-1", "device_owner": "compute:nova"}}
    updated = (await put(h, f"{PORT}/{port['id']}", h.alice, body))["port"]
    assert {k: updated[k] for k in body["port"]} == body["port"]
    assert updated["revision_number"] == 2 and updated["updated_at"] >= port["updated_at"]
    assert updated["fixed_ips"] == port["fixed_ips"] and updated["mac_address"] == port["mac_address"]
    shown = await show(h, f"{PORT}/{port['id']}", h.alice)
    assert shown["name"] == "renamed" and shown["revision_number"] == 2
    await put(h, f"{PORT}/{port['id']}", h.alice, {"port": {"name": "again"}})
    assert (await show(h, f"{PORT}/{port['id']}", h.alice))["revision_number"] == 3


async def test_port_binding_and_mac_as_neutron_allows(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"])
    port = await make_port(h, h.alice, net["id"])
    other = await make_port(h, h.alice, net["id"])
    url = f"{PORT}/{port['id']}"

    await refused(h, url, h.alice, {"port": {"binding:host_id": "host1"}}, 403, "PolicyNotAuthorized")
    await refused(h, url, h.alice, {"port": {"mac_address": "fa:16:3e:00:00:01"}}, 403, "PolicyNotAuthorized")
    # An unbound port's MAC may change (admin); one another port has is refused.
    moved = (await put(h, url, h.admin, {"port": {"mac_address": "FA:16:3E:00:00:01"}}))["port"]
    assert moved["mac_address"] == "fa:16:3e:00:00:01"
    await refused(h, url, h.admin, {"port": {"mac_address": other["mac_address"]}}, 409, "MacAddressInUse")

    bound = (await put(h, url, h.admin, {"port": {"binding:host_id": "host1"}}))["port"]
    assert bound["binding:host_id"] == "host1" and bound["binding:vif_type"] == "bridge"
    assert bound["status"] == "ACTIVE"
    message = await refused(h, url, h.admin, {"port": {"mac_address": "fa:16:3e:00:00:02"}}, 409, "PortBound")
    assert "already bound" in message
    # The same MAC again is no change, and allowed.
    await put(h, url, h.admin, {"port": {"mac_address": "fa:16:3e:00:00:01", "name": "n"}})
    unbound = (await put(h, url, h.admin, {"port": {"binding:host_id": ""}}))["port"]
    assert unbound["status"] == "DOWN" and unbound["binding:vif_type"] == "unbound"


async def test_port_fixed_ips_are_replaced_in_one_transaction(h):
    net = await make_net(h, h.alice)
    sub = await make_subnet(h, h.alice, net["id"])
    port = await make_port(h, h.alice, net["id"], security_groups=[])  # no group: its address may go
    assert addresses(port) == ["10.0.0.2"]
    url = f"{PORT}/{port['id']}"

    # What `openstack port set --fixed-ip` sends: the port's addresses plus the new one.
    both = (await put(h, url, h.alice, {"port": {"fixed_ips": port["fixed_ips"] + [
        {"subnet_id": sub["id"], "ip_address": "10.0.0.50"}]}}))["port"]
    assert addresses(both) == ["10.0.0.2", "10.0.0.50"]
    # Only .50 listed: .2 is released, and another port can have it.
    one = (await put(h, url, h.alice, {"port": {"fixed_ips": [{"ip_address": "10.0.0.50"}]}}))["port"]
    assert addresses(one) == ["10.0.0.50"]
    other = await make_port(h, h.alice, net["id"])
    assert addresses(other) == ["10.0.0.2"]

    # A subnet named without an address keeps the address the port has there.
    kept = (await put(h, url, h.alice, {"port": {"fixed_ips": [{"subnet_id": sub["id"]}]}}))["port"]
    assert addresses(kept) == ["10.0.0.50"]

    # Conflict: another port's address; nothing of the request happens (.50 is kept).
    await refused(h, url, h.alice, {"port": {"fixed_ips": [{"ip_address": "10.0.0.2"}]}}, 409,
                  "IpAddressAlreadyAllocated")
    assert addresses(await show(h, url, h.alice)) == ["10.0.0.50"]

    # No address at all, then one from the pool again (the lowest free one).
    assert (await put(h, url, h.alice, {"port": {"fixed_ips": []}}))["port"]["fixed_ips"] == []
    again = (await put(h, url, h.alice, {"port": {"fixed_ips": [{"subnet_id": sub["id"]}]}}))["port"]
    assert addresses(again) == ["10.0.0.3"]

    # Bad input: 400, and the port unchanged.
    other_net = await make_net(h, h.alice, name="net2")
    other_sub = await make_subnet(h, h.alice, other_net["id"], cidr="10.9.0.0/24")
    for bad in ([{"ip_address": "192.168.7.7"}], [{"ip_address": "not-an-ip"}],
                [{"subnet_id": other_sub["id"]}], [{"subnet_id": sub["id"], "ip_address": "10.0.0.1"}],
                [{"ip_address": "10.0.0.60"}, {"ip_address": "10.0.0.60"}], [{}], "10.0.0.7",
                [{"subnet_id": sub["id"], "ip_address": "10.0.0.255"}]):
        await refused(h, url, h.alice, {"port": {"fixed_ips": bad}}, 400, "HTTPBadRequest")
    assert addresses(await show(h, url, h.alice)) == ["10.0.0.3"]


async def test_port_fixed_ips_from_an_exhausted_subnet(h):
    net = await make_net(h, h.alice)
    sub = await make_subnet(h, h.alice, net["id"], cidr="10.1.0.0/29",
                            allocation_pools=[{"start": "10.1.0.2", "end": "10.1.0.3"}])
    first = await make_port(h, h.alice, net["id"])
    second = await make_port(h, h.alice, net["id"])
    assert addresses(first) + addresses(second) == ["10.1.0.2", "10.1.0.3"]
    url = f"{PORT}/{first['id']}"
    await refused(h, url, h.alice, {"port": {"fixed_ips": first["fixed_ips"] + [{"subnet_id": sub["id"]}]}},
                  409, "IpAddressGenerationFailure")
    assert addresses(await show(h, url, h.alice)) == ["10.1.0.2"]
    # An address outside the pools but in the subnet may still be asked for by name.
    grown = (await put(h, url, h.alice, {"port": {"fixed_ips": first["fixed_ips"] + [
        {"ip_address": "10.1.0.6"}]}}))["port"]
    assert addresses(grown) == ["10.1.0.2", "10.1.0.6"]


async def test_port_security_groups(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"])
    port = await make_port(h, h.alice, net["id"])
    url = f"{PORT}/{port['id']}"
    mine, also_mine, bobs = await add_group(h, "proj-a"), await add_group(h, "proj-a"), await add_group(h, "proj-b")

    got = (await put(h, url, h.alice, {"port": {"security_groups": [mine, also_mine, mine]}}))["port"]
    assert sorted(got["security_groups"]) == sorted([mine, also_mine])
    got = (await put(h, url, h.alice, {"port": {"security_groups": [also_mine]}}))["port"]
    assert got["security_groups"] == [also_mine]
    assert (await show(h, url, h.alice))["security_groups"] == [also_mine]
    listed = await (await h.http.get(PORT, params={"id": port["id"]}, headers=h.alice)).json()
    assert listed["ports"][0]["security_groups"] == [also_mine]

    # Another project's group, or none such: 404 SecurityGroupNotFound; not a UUID: 400.
    await refused(h, url, h.alice, {"port": {"security_groups": [bobs]}}, 404, "SecurityGroupNotFound")
    await refused(h, url, h.alice, {"port": {"security_groups": [str(uuid.uuid4())]}}, 404,
                  "SecurityGroupNotFound")
    await refused(h, url, h.alice, {"port": {"security_groups": ["default!"]}}, 400, "HTTPBadRequest")
    await refused(h, url, h.alice, {"port": {"security_groups": "x"}}, 400, "HTTPBadRequest")
    assert (await show(h, url, h.alice))["security_groups"] == [also_mine]
    # An admin may give any project's group.
    assert (await put(h, url, h.admin, {"port": {"security_groups": [bobs]}}))["port"]["security_groups"] == [bobs]
    await put(h, url, h.alice, {"port": {"security_groups": [mine]}})

    # Port security off while groups remain: 409; off with groups named: 400; off and none: fine.
    await refused(h, url, h.alice, {"port": {"port_security_enabled": False}}, 409,
                  "PortSecurityPortHasSecurityGroup")
    await refused(h, url, h.alice, {"port": {"fixed_ips": []}}, 409, "PortSecurityPortHasSecurityGroup")
    await refused(h, url, h.alice, {"port": {"port_security_enabled": False, "security_groups": [mine]}}, 400,
                  "PortSecurityAndIPRequiredForSecurityGroups")
    off = (await put(h, url, h.alice, {"port": {"port_security_enabled": False, "security_groups": []}}))["port"]
    assert off["port_security_enabled"] is False and off["security_groups"] == []
    await refused(h, url, h.alice, {"port": {"security_groups": [mine]}}, 400,
                  "PortSecurityAndIPRequiredForSecurityGroups")
    shown = await show(h, url, h.alice)
    assert shown["port_security_enabled"] is False and shown["security_groups"] == []


async def test_port_allowed_address_pairs(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"])
    port = await make_port(h, h.alice, net["id"], security_groups=[])  # pairs, not groups, hold it
    url = f"{PORT}/{port['id']}"

    pairs = [{"ip_address": "10.0.0.100"}, {"ip_address": "192.168.0.0/24", "mac_address": "FA:16:3E:AA:BB:CC"}]
    got = (await put(h, url, h.alice, {"port": {"allowed_address_pairs": pairs}}))["port"]
    assert got["allowed_address_pairs"] == [
        {"ip_address": "10.0.0.100", "mac_address": port["mac_address"]},
        {"ip_address": "192.168.0.0/24", "mac_address": "fa:16:3e:aa:bb:cc"}]
    assert (await show(h, url, h.alice))["allowed_address_pairs"] == got["allowed_address_pairs"]

    for bad, kind in (([{"ip_address": "10.0.0.0/8x"}], "HTTPBadRequest"),
                      ([{"ip_address": "10.0.0.1/24"}], "HTTPBadRequest"),
                      ([{"mac_address": "fa:16:3e:00:00:01"}], "HTTPBadRequest"),
                      ([{"ip_address": "10.0.0.9", "mac_address": "zz"}], "HTTPBadRequest"),
                      ([{"ip_address": "10.0.0.9", "extra": 1}], "HTTPBadRequest"),
                      ([{"ip_address": "10.0.0.9"}, {"ip_address": "10.0.0.9"}], "DuplicateAddressPairInRequest"),
                      ([{"ip_address": f"10.0.1.{n}"} for n in range(11)], "AllowedAddressPairExhausted")):
        await refused(h, url, h.alice, {"port": {"allowed_address_pairs": bad}}, 400, kind)

    # Pairs need port security: turning it off while they remain, or adding them without it, is 409.
    await refused(h, url, h.alice, {"port": {"port_security_enabled": False}}, 409,
                  "AddressPairAndPortSecurityRequired")
    await put(h, url, h.alice, {"port": {"port_security_enabled": False, "allowed_address_pairs": []}})
    await refused(h, url, h.alice, {"port": {"allowed_address_pairs": pairs}}, 409,
                  "AddressPairAndPortSecurityRequired")
    shown = await show(h, url, h.alice)
    assert shown["allowed_address_pairs"] == [] and shown["port_security_enabled"] is False


async def test_port_create_takes_allowed_address_pairs(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"])
    pairs = [{"ip_address": "10.0.0.100"}, {"ip_address": "192.168.0.0/24", "mac_address": "FA:16:3E:AA:BB:CC"}]
    port = await make_port(h, h.alice, net["id"], allowed_address_pairs=pairs)
    expected = [{"ip_address": "10.0.0.100", "mac_address": port["mac_address"]},
                {"ip_address": "192.168.0.0/24", "mac_address": "fa:16:3e:aa:bb:cc"}]
    assert port["allowed_address_pairs"] == expected
    assert (await show(h, f"{PORT}/{port['id']}", h.alice))["allowed_address_pairs"] == expected
    listed = await show(h, f"{PORT}?network_id={net['id']}", h.alice)
    assert [p["allowed_address_pairs"] for p in listed] == [expected]

    async def refused_create(headers, network_id, status, kind, **extra):
        resp = await h.http.post(PORT, json={"port": {"network_id": network_id, **extra}}, headers=headers)
        assert (await neutron_error(resp, status))["type"] == kind

    await refused_create(h.alice, net["id"], 409, "AddressPairAndPortSecurityRequired",
                         port_security_enabled=False, allowed_address_pairs=pairs)
    await refused_create(h.alice, net["id"], 400, "DuplicateAddressPairInRequest",
                         allowed_address_pairs=[{"ip_address": "10.0.0.9"}, {"ip_address": "10.0.0.9"}])
    await refused_create(h.alice, net["id"], 400, "HTTPBadRequest", allowed_address_pairs=[{"ip_address": "x"}])
    # Only the network's owner (or an admin) sets them, as on update.
    shared = await make_net(h, h.admin, name="shared", shared=True)
    await make_subnet(h, h.admin, shared["id"], cidr="10.5.0.0/24")
    await refused_create(h.bob, shared["id"], 403, "PolicyNotAuthorized",
                         allowed_address_pairs=[{"ip_address": "10.5.0.9"}])
    assert len(await show(h, f"{PORT}?network_id={net['id']}", h.alice)) == 1  # the refused ones left nothing


async def test_a_project_cannot_update_another_projects_port(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"])
    port = await make_port(h, h.alice, net["id"], name="alices")
    url = f"{PORT}/{port['id']}"
    await refused(h, url, h.bob, {"port": {"name": "mine"}}, 404, "PortNotFound")
    await refused(h, url, h.bob, {"port": {"fixed_ips": []}}, 404, "PortNotFound")
    await refused(h, f"{PORT}/{uuid.uuid4()}", h.alice, {"port": {"name": "x"}}, 404, "PortNotFound")
    await refused(h, f"{PORT}/not-a-uuid", h.alice, {"port": {"name": "x"}}, 404, "PortNotFound")
    assert (await show(h, url, h.alice))["name"] == "alices"

    # Bob's port on the admin's shared network: his to rename, not to unprotect.
    shared = await make_net(h, h.admin, name="shared", shared=True)
    await make_subnet(h, h.admin, shared["id"], cidr="10.5.0.0/24")
    bobs = await make_port(h, h.bob, shared["id"])
    burl = f"{PORT}/{bobs['id']}"
    assert (await put(h, burl, h.bob, {"port": {"name": "b"}}))["port"]["name"] == "b"
    await refused(h, burl, h.bob, {"port": {"port_security_enabled": False}}, 403, "PolicyNotAuthorized")
    await refused(h, burl, h.bob, {"port": {"allowed_address_pairs": [{"ip_address": "10.5.0.9"}]}}, 403,
                  "PolicyNotAuthorized")
    await refused(h, burl, h.bob, {"port": {"device_owner": "network:router_interface"}}, 403,
                  "PolicyNotAuthorized")


async def test_port_update_refuses_bad_bodies(h):
    net = await make_net(h, h.alice)
    port = await make_port(h, h.alice, net["id"])
    url = f"{PORT}/{port['id']}"
    for body in ({"port": {"network_id": net["id"]}}, {"port": {"id": port["id"]}},
                 {"port": {"tenant_id": "proj-b"}}, {"port": {"status": "ACTIVE"}},
                 {"port": {"colour": "blue"}}, {"port": {"name": 7}}, {"port": {"admin_state_up": "yes"}},
                 {"port": "name"}, {"ports": [{"name": "x"}]}, [], {}):
        await refused(h, url, h.alice, body, 400, "HTTPBadRequest")
    message = await refused(h, url, h.alice, {"port": {"network_id": net["id"]}}, 400, "HTTPBadRequest")
    assert message == "Cannot update read-only attribute network_id"
    resp = await h.http.put(url, data=b"{not json", headers={**h.alice, "Content-Type": "application/json"})
    await neutron_error(resp, 400)


# --- networks --------------------------------------------------------------------------

async def test_network_update(h):
    net = await make_net(h, h.alice)
    url = f"{NET}/{net['id']}"
    body = {"network": {"name": "renamed", "description": "about", "admin_state_up": False, "mtu": 9000}}
    got = (await put(h, url, h.alice, body))["network"]
    assert (got["name"], got["description"], got["admin_state_up"], got["mtu"]) == ("renamed", "about", False, 9000)
    assert got["revision_number"] == 2 and got["updated_at"] >= net["updated_at"]
    assert (await show(h, url, h.alice))["name"] == "renamed"

    for bad in ({"network": {"mtu": 67}}, {"network": {"mtu": 9001}}, {"network": {"mtu": "big"}},
                {"network": {"subnets": []}}, {"network": {"project_id": "proj-b"}}, {"network": {"x": 1}},
                {"network": {"name": "a" * 256}}):
        await refused(h, url, h.alice, bad, 400, "HTTPBadRequest")
    await refused(h, url, h.alice, {"network": {"shared": True}}, 403, "PolicyNotAuthorized")
    await refused(h, url, h.alice, {"network": {"router:external": True}}, 403, "PolicyNotAuthorized")
    # Not seen by bob: 404, as if it were not there.
    await refused(h, url, h.bob, {"network": {"name": "bobs"}}, 404, "NetworkNotFound")
    assert (await show(h, url, h.alice))["name"] == "renamed"

    # The admin shares it: bob sees it now, but changing it is refused (403, not 404).
    assert (await put(h, url, h.admin, {"network": {"shared": True}}))["network"]["shared"] is True
    await refused(h, url, h.bob, {"network": {"name": "bobs"}}, 403, "PolicyNotAuthorized")
    await make_subnet(h, h.alice, net["id"])
    await make_port(h, h.bob, net["id"])
    # While bob has a port on it, it stays shared.
    await refused(h, url, h.admin, {"network": {"shared": False}}, 409, "InvalidSharedSetting")
    ext = (await put(h, url, h.admin, {"network": {"router:external": True}}))["network"]
    assert ext["router:external"] is True and ext["revision_number"] == 4


# --- subnets ---------------------------------------------------------------------------

async def test_subnet_update(h):
    net = await make_net(h, h.alice)
    sub = await make_subnet(h, h.alice, net["id"])
    url = f"{SUBNET}/{sub['id']}"
    body = {"subnet": {"name": "s2", "description": "d", "dns_nameservers": ["192.0.2.53", "2001:db8::53"],
                       "host_routes": [{"destination": "172.16.0.0/12", "nexthop": "10.0.0.254"}],
                       "enable_dhcp": False}}
    got = (await put(h, url, h.alice, body))["subnet"]
    assert {k: got[k] for k in body["subnet"]} == body["subnet"]
    assert got["revision_number"] == 2 and got["cidr"] == "10.0.0.0/24" and got["gateway_ip"] == "10.0.0.1"

    # The gateway: not in a pool (409), not outside the cidr (400); a pool change makes room.
    await refused(h, url, h.alice, {"subnet": {"gateway_ip": "10.0.0.254"}}, 409,
                  "GatewayConflictWithAllocationPools")
    await refused(h, url, h.alice, {"subnet": {"gateway_ip": "10.9.0.1"}}, 400, "HTTPBadRequest")
    moved = (await put(h, url, h.alice, {"subnet": {
        "gateway_ip": "10.0.0.254", "allocation_pools": [{"start": "10.0.0.2", "end": "10.0.0.100"}]}}))["subnet"]
    assert moved["gateway_ip"] == "10.0.0.254"
    assert moved["allocation_pools"] == [{"start": "10.0.0.2", "end": "10.0.0.100"}]

    # A port's address is never made the gateway, nor left out of the pools it came from.
    port = await make_port(h, h.alice, net["id"])
    assert addresses(port) == ["10.0.0.2"]
    await make_port(h, h.alice, net["id"], fixed_ips=[{"ip_address": "10.0.0.150"}])
    await refused(h, url, h.alice, {"subnet": {"gateway_ip": "10.0.0.150"}}, 409, "GatewayIpInUse")
    await refused(h, url, h.alice, {"subnet": {"allocation_pools": [{"start": "10.0.0.3", "end": "10.0.0.100"}]}},
                  409, "SubnetInUse")
    fine = (await put(h, url, h.alice, {"subnet": {"allocation_pools": [
        {"start": "10.0.0.2", "end": "10.0.0.20"}, {"start": "10.0.0.30", "end": "10.0.0.40"}]}}))["subnet"]
    assert len(fine["allocation_pools"]) == 2
    no_gateway = (await put(h, url, h.alice, {"subnet": {"gateway_ip": None}}))["subnet"]
    assert no_gateway["gateway_ip"] is None
    # The freed .254 can now be a port's.
    assert addresses(await make_port(h, h.alice, net["id"], fixed_ips=[{"ip_address": "10.0.0.254"}])) == [
        "10.0.0.254"]

    for bad in ({"subnet": {"cidr": "10.1.0.0/24"}}, {"subnet": {"ip_version": 6}},
                {"subnet": {"network_id": net["id"]}}, {"subnet": {"dns_nameservers": ["dns.example"]}},
                {"subnet": {"dns_nameservers": ["192.0.2.1", "192.0.2.1"]}},
                {"subnet": {"host_routes": [{"destination": "nowhere", "nexthop": "10.0.0.1"}]}},
                {"subnet": {"allocation_pools": [{"start": "10.0.0.50", "end": "10.0.0.40"}]}},
                {"subnet": {"allocation_pools": [{"start": "10.0.0.2", "end": "10.0.1.9"}]}},
                {"subnet": {"allocation_pools": [{"start": "10.0.0.2"}]}},
                {"subnet": {"gateway_ip": "gw"}}, {"subnet": {"enable_dhcp": "no"}}):
        await refused(h, url, h.alice, bad, 400, "HTTPBadRequest")
    message = await refused(h, url, h.alice, {"subnet": {"cidr": "10.1.0.0/24"}}, 400, "HTTPBadRequest")
    assert message == "Cannot update read-only attribute cidr"

    await refused(h, url, h.bob, {"subnet": {"name": "bobs"}}, 404, "SubnetNotFound")
    shared = await make_net(h, h.admin, name="shared", shared=True)
    shared_sub = await make_subnet(h, h.admin, shared["id"], cidr="10.5.0.0/24")
    await refused(h, f"{SUBNET}/{shared_sub['id']}", h.bob, {"subnet": {"name": "bobs"}}, 403,
                  "PolicyNotAuthorized")
    assert (await show(h, url, h.alice))["name"] == "s2"


# --- bulk create -----------------------------------------------------------------------

async def count(h, url, headers):
    return len(next(iter((await (await h.http.get(url, headers=headers)).json()).values())))


async def test_bulk_networks_all_or_nothing(h):
    made = await post(h, NET, h.alice, {"networks": [{"name": "a"}, {"name": "b", "mtu": 1400}]})
    assert [n["name"] for n in made["networks"]] == ["a", "b"] and made["networks"][1]["mtu"] == 1400
    assert all(n["project_id"] == "proj-a" for n in made["networks"])
    # The second is refused (shared needs an admin): the first is not made either.
    refused_batch = {"networks": [{"name": "c"}, {"name": "d", "shared": True}]}
    error = await neutron_error(await h.http.post(NET, json=refused_batch, headers=h.alice), 403)
    assert "shared" in error["message"]
    for bad in ({"networks": []}, {"networks": "x"}, {"networks": [{"name": "e"}, {"colour": "red"}]},
                {"networks": [{"name": "e"}], "network": {"name": "f"}}, {"networks": [7]}):
        await neutron_error(await h.http.post(NET, json=bad, headers=h.alice), 400)
    assert sorted(n["name"] for n in (await (await h.http.get(NET, headers=h.alice)).json())["networks"]) == ["a", "b"]


async def test_bulk_subnets_all_or_nothing(h):
    net = await make_net(h, h.alice)
    subs = (await post(h, SUBNET, h.alice, {"subnets": [
        {"network_id": net["id"], "cidr": "10.0.0.0/24", "ip_version": 4},
        {"network_id": net["id"], "cidr": "10.0.1.0/24", "ip_version": 4, "name": "second"}]}))["subnets"]
    assert [s["cidr"] for s in subs] == ["10.0.0.0/24", "10.0.1.0/24"] and subs[1]["name"] == "second"
    assert sorted((await show(h, f"{NET}/{net['id']}", h.alice))["subnets"]) == sorted(s["id"] for s in subs)
    # Two that overlap each other in one batch: neither is made.
    await neutron_error(await h.http.post(SUBNET, json={"subnets": [
        {"network_id": net["id"], "cidr": "10.0.8.0/24", "ip_version": 4},
        {"network_id": net["id"], "cidr": "10.0.8.0/25", "ip_version": 4}]}, headers=h.alice), 400)
    # One on a network bob cannot see: 404, and the good one beside it is not made.
    bobs = await make_net(h, h.bob, name="bobs")
    await neutron_error(await h.http.post(SUBNET, json={"subnets": [
        {"network_id": net["id"], "cidr": "10.0.9.0/24", "ip_version": 4},
        {"network_id": bobs["id"], "cidr": "10.0.10.0/24", "ip_version": 4}]}, headers=h.alice), 404)
    assert await count(h, SUBNET, h.alice) == 2


async def test_bulk_ports_all_or_nothing(h):
    net = await make_net(h, h.alice)
    await make_subnet(h, h.alice, net["id"])
    taken = await make_port(h, h.alice, net["id"], fixed_ips=[{"ip_address": "10.0.0.9"}])
    made = (await post(h, PORT, h.alice, {"ports": [
        {"network_id": net["id"], "name": "a"}, {"network_id": net["id"], "name": "b"},
        {"network_id": net["id"], "name": "c", "fixed_ips": [{"ip_address": "10.0.0.20"}]}]}))["ports"]
    assert [p["name"] for p in made] == ["a", "b", "c"]
    assert [addresses(p) for p in made] == [["10.0.0.2"], ["10.0.0.3"], ["10.0.0.20"]]
    assert all(len(p["security_groups"]) == 1 and p["port_security_enabled"] for p in made)  # default group

    # The last asks for an address already held: 409, and the first two are not made.
    error = await neutron_error(await h.http.post(PORT, json={"ports": [
        {"network_id": net["id"], "name": "d"}, {"network_id": net["id"], "name": "e"},
        {"network_id": net["id"], "name": "f", "fixed_ips": [{"ip_address": "10.0.0.9"}]}]}, headers=h.alice), 409)
    assert error["type"] == "IpAddressAlreadyAllocated"
    # Two in one batch with the same MAC: the same.
    mac = "fa:16:3e:12:34:56"
    error = await neutron_error(await h.http.post(PORT, json={"ports": [
        {"network_id": net["id"], "mac_address": mac}, {"network_id": net["id"], "mac_address": mac}]},
        headers=h.alice), 409)
    assert error["type"] == "MacAddressInUse"
    assert await count(h, PORT, h.alice) == 4
    # Nothing of the refused batches holds an address: the next port gets the lowest free one.
    assert addresses(await make_port(h, h.alice, net["id"])) == ["10.0.0.4"]
    assert taken["id"] in {p["id"] for p in (await (await h.http.get(PORT, headers=h.alice)).json())["ports"]}


async def test_bulk_create_counts_the_whole_batch_against_the_quota(h):
    error = await neutron_error(await h.http.post(NET, json={"networks": [{"name": f"n{i}"} for i in range(101)]},
                                                  headers=h.alice), 409)
    assert error["type"] == "OverQuota" and "network" in error["message"]
    assert await count(h, NET, h.alice) == 0
    made = await post(h, NET, h.alice, {"networks": [{"name": f"n{i}"} for i in range(100)]})
    assert len(made["networks"]) == 100
    error = await neutron_error(await h.http.post(NET, json={"network": {"name": "one-more"}}, headers=h.alice), 409)
    assert error["type"] == "OverQuota"
    # Another project's quota is its own.
    await make_net(h, h.bob)


async def test_extensions_are_listed_for_the_cli(h):
    listed = (await (await h.http.get("/network/v2.0/extensions", headers=h.alice)).json())["extensions"]
    aliases = {e["alias"] for e in listed}
    assert {"port-security", "allowed-address-pairs", "standard-attr-revisions"} <= aliases
    one = await (await h.http.get("/network/v2.0/extensions/port-security", headers=h.alice)).json()
    assert one["extension"]["alias"] == "port-security"
    # What `openstack port create` asks about before it decides how to tag: not here, 404.
    await neutron_error(await h.http.get("/network/v2.0/extensions/tag-ports-during-bulk-creation",
                                         headers=h.alice), 404)
