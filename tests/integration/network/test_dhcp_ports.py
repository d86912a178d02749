"""DHCP ports, as the data plane asks the network service for them: one per network and host,
with an address on each subnet that has DHCP on; never in the way of deleting a subnet or a
network (they go with it, as in Neutron)."""

from __future__ import annotations

import pytest

from nova_async.network.client import NetworkClient
from tests.harness import running

NET = "/network/v2.0/networks"
SUBNET = "/network/v2.0/subnets"
PORT = "/network/v2.0/ports"


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["network"], tmp_path) as harness:
        yield harness


async def post(h, url, body):
    resp = await h.http.post(url, json=body, headers=h.admin)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def subnet(h, network_id, cidr, **extra):
    return (await post(h, SUBNET, {"subnet": {"network_id": network_id, "cidr": cidr, "ip_version": 4,
                                              **extra}}))["subnet"]


async def dhcp_ports(h, network_id):
    body = await (await h.http.get(f"{PORT}?network_id={network_id}&device_owner=network:dhcp",
                                   headers=h.admin)).json()
    return body["ports"]


async def test_one_port_per_host_with_an_address_per_dhcp_subnet(h):
    client = NetworkClient(h.bus)
    net = (await post(h, NET, {"network": {"name": "n"}}))["network"]
    assert await client.ensure_dhcp_port(net["id"], "h1") is None  # no subnet yet: no port
    first = await subnet(h, net["id"], "10.1.0.0/24")
    await subnet(h, net["id"], "10.2.0.0/24", enable_dhcp=False)
    vif = await client.ensure_dhcp_port(net["id"], "h1")
    assert vif is not None and [ip.subnet_id for ip in vif.ips] == [first["id"]]
    assert vif.ips[0].address == "10.1.0.2"     # IPAM's, after the gateway: no guest gets it
    again = await client.ensure_dhcp_port(net["id"], "h1")
    assert again == vif                         # idempotent
    other = await client.ensure_dhcp_port(net["id"], "h2")
    assert other is not None and other.port_id != vif.port_id
    ports = await dhcp_ports(h, net["id"])
    assert sorted(p["device_id"] for p in ports) == ["dhcp-h1", "dhcp-h2"]

    third = await subnet(h, net["id"], "10.3.0.0/24")
    grown = await client.ensure_dhcp_port(net["id"], "h1")
    assert grown is not None and grown.port_id == vif.port_id
    assert sorted(ip.subnet_id for ip in grown.ips) == sorted([first["id"], third["id"]])

    # Deleting a subnet takes the DHCP addresses on it along; the last one, the ports too
    # (at the data plane's next question).
    assert (await h.http.delete(f"{SUBNET}/{third['id']}", headers=h.admin)).status == 204
    trimmed = await client.ensure_dhcp_port(net["id"], "h1")
    assert trimmed is not None and [ip.subnet_id for ip in trimmed.ips] == [first["id"]]
    assert (await h.http.delete(f"{SUBNET}/{first['id']}", headers=h.admin)).status == 204
    assert await client.ensure_dhcp_port(net["id"], "h1") is None
    assert [p["device_id"] for p in await dhcp_ports(h, net["id"])] == ["dhcp-h2"]

    # A network with DHCP ports left is deleted with them.
    assert (await h.http.delete(f"{NET}/{net['id']}", headers=h.admin)).status == 204
    assert await client.ensure_dhcp_port(net["id"], "h1") is None


async def test_a_guest_port_still_blocks_a_network_delete(h):
    client = NetworkClient(h.bus)
    net = (await post(h, NET, {"network": {"name": "n"}}))["network"]
    await subnet(h, net["id"], "10.1.0.0/24")
    await client.ensure_dhcp_port(net["id"], "h1")
    await post(h, PORT, {"port": {"network_id": net["id"]}})
    resp = await h.http.delete(f"{NET}/{net['id']}", headers=h.admin)
    assert resp.status == 409
    assert len(await dhcp_ports(h, net["id"])) == 1   # the refused delete took nothing
