"""Ports for instances over the bus: what the API and compute see when they validate
requested networks, allocate ports for a build and release them on delete."""

from __future__ import annotations

import asyncio
import ipaddress
import uuid

import pytest

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.network import instance_ports
from nova_async.network.client import NetworkClient
from nova_async.network.messages import AllocatePorts, RequestedNetwork
from tests.harness import running

ALICE = RequestContext(user_id="alice", project_id="proj-a", roles=("member",))


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["network"], tmp_path) as harness:
        yield harness


async def make_network(h, headers, cidr="10.0.0.0/24", name="net1", **extra):
    resp = await h.http.post("/network/v2.0/networks", json={"network": {"name": name, **extra}},
                             headers=headers)
    net = (await resp.json())["network"]
    if cidr:
        resp = await h.http.post("/network/v2.0/subnets", headers=headers, json={"subnet": {
            "network_id": net["id"], "cidr": cidr, "ip_version": 4}})
        assert resp.status == 201, await resp.text()
    return net["id"]


async def ports_of(h, **params):
    resp = await h.http.get("/network/v2.0/ports", params=params, headers=h.admin)
    return (await resp.json())["ports"]


def on(*network_ids):
    return [RequestedNetwork(network_id=n) for n in network_ids]


async def test_allocate_gives_compute_what_it_needs(h):
    net = await make_network(h, h.alice, mtu=1400)
    client = NetworkClient(h.bus)
    instance = str(uuid.uuid4())
    [vif] = await client.allocate(instance, "proj-a", "host-1", on(net))
    assert vif.network_id == net and vif.network_name == "net1" and vif.mtu == 1400
    assert vif.mac_address.startswith("fa:16:3e:")
    assert vif.bridge == "brq" + net[:11] and vif.tap == "tap" + vif.port_id[:11]
    [ip] = vif.ips
    assert (ip.address, ip.version, ip.cidr, ip.gateway) == ("10.0.0.2", 4, "10.0.0.0/24", "10.0.0.1")

    [port] = await ports_of(h, device_id=instance)
    assert port["id"] == vif.port_id and port["device_owner"] == "compute:nova"
    assert port["binding:host_id"] == "host-1" and port["status"] == "ACTIVE"
    assert port["project_id"] == "proj-a"
    assert port["fixed_ips"] == [{"subnet_id": ip.subnet_id, "ip_address": "10.0.0.2"}]


async def test_allocate_is_idempotent_and_follows_a_reschedule(h):
    net_a = await make_network(h, h.alice)
    net_b = await make_network(h, h.alice, cidr="10.1.0.0/24", name="net2")
    client = NetworkClient(h.bus)
    instance = str(uuid.uuid4())
    together = await asyncio.gather(*(client.allocate(instance, "proj-a", "host-1", on(net_b, net_a))
                                      for _ in range(4)))
    assert all(v == together[0] for v in together)
    assert [v.network_name for v in together[0]] == ["net2", "net1"]  # NIC order as requested
    again = await client.allocate(instance, "proj-a", "host-2", on(net_b, net_a))
    assert [v.port_id for v in again] == [v.port_id for v in together[0]]
    assert {p["binding:host_id"] for p in await ports_of(h, device_id=instance)} == {"host-2"}
    assert len(await ports_of(h)) == 2


async def test_deallocate_deletes_made_ports_and_releases_given_ones(h):
    net = await make_network(h, h.alice)
    client = NetworkClient(h.bus)
    resp = await h.http.post("/network/v2.0/ports", json={"port": {"network_id": net, "name": "mine"}},
                             headers=h.alice)
    given = (await resp.json())["port"]
    instance = str(uuid.uuid4())
    await client.validate(ALICE, [RequestedNetwork(port_id=given["id"])] + on(net))
    vifs = await client.allocate(instance, "proj-a", "host-1", [RequestedNetwork(port_id=given["id"])] + on(net))
    assert vifs[0].port_id == given["id"] and len(vifs) == 2
    with pytest.raises(errors.Conflict, match="in use"):
        await client.validate(ALICE, [RequestedNetwork(port_id=given["id"])])

    await client.deallocate(instance)
    await client.deallocate(instance)  # twice is fine
    remaining = await ports_of(h)
    assert [p["id"] for p in remaining] == [given["id"]]
    assert remaining[0]["device_id"] == "" and remaining[0]["binding:host_id"] == ""
    await client.deallocate(str(uuid.uuid4()))  # never allocated: nothing to do


async def test_no_requested_network(h):
    client = NetworkClient(h.bus)
    assert await client.allocate(str(uuid.uuid4()), "proj-a", "host-1", []) == []
    net = await make_network(h, h.alice)
    await make_network(h, h.bob, name="bobs", cidr="10.9.0.0/24")
    [vif] = await client.allocate(str(uuid.uuid4()), "proj-a", "host-1", [])
    assert vif.network_id == net
    await make_network(h, h.admin, name="shared", cidr="172.24.0.0/24", shared=True)
    with pytest.raises(errors.Conflict, match="Multiple possible networks"):
        await client.validate(ALICE, [])
    with pytest.raises(errors.Conflict, match="Multiple possible networks"):
        await client.allocate(str(uuid.uuid4()), "proj-a", "host-1", [])


async def test_validate_names_what_is_wrong(h):
    client = NetworkClient(h.bus)
    own = await make_network(h, h.alice)
    bare = await make_network(h, h.alice, cidr=None, name="bare")
    bobs = await make_network(h, h.bob, name="bobs", cidr="10.9.0.0/24")
    shared = await make_network(h, h.admin, name="shared", cidr="172.24.0.0/24", shared=True)
    await client.validate(ALICE, on(own, shared, own))
    missing = str(uuid.uuid4())
    for wrong in (missing, bobs, "net1"):
        with pytest.raises(errors.NotFound, match=wrong):
            await client.validate(ALICE, on(wrong))
    with pytest.raises(errors.InvalidInput, match=bare):
        await client.validate(ALICE, on(bare))
    with pytest.raises(errors.NotFound, match="Port"):
        await client.validate(ALICE, [RequestedNetwork(port_id=str(uuid.uuid4()))])
    await client.validate(ALICE, [RequestedNetwork(network_id=own, fixed_ip="10.0.0.50")])
    with pytest.raises(errors.InvalidInput, match="10.7.0.1"):
        await client.validate(ALICE, [RequestedNetwork(network_id=own, fixed_ip="10.7.0.1")])


async def test_requested_fixed_ip(h):
    net = await make_network(h, h.alice)
    client = NetworkClient(h.bus)
    [vif] = await client.allocate(str(uuid.uuid4()), "proj-a", "h", [RequestedNetwork(network_id=net,
                                                                                       fixed_ip="10.0.0.77")])
    assert vif.ips[0].address == "10.0.0.77"
    with pytest.raises(errors.Conflict, match="10.0.0.77"):
        await client.allocate(str(uuid.uuid4()), "proj-a", "h", [RequestedNetwork(network_id=net,
                                                                                  fixed_ip="10.0.0.77")])


async def test_twenty_concurrent_builds_get_unique_addresses(h):
    net = await make_network(h, h.alice, cidr="10.20.0.0/27")
    client = NetworkClient(h.bus)
    results = await asyncio.gather(*(client.allocate(str(uuid.uuid4()), "proj-a", "host-1", on(net))
                                     for _ in range(20)))
    addresses = [vifs[0].ips[0].address for vifs in results]
    macs = [vifs[0].mac_address for vifs in results]
    assert len(set(addresses)) == 20 and len(set(macs)) == 20
    # Lowest free first: .1 is the gateway, so exactly .2 … .21 are handed out.
    assert sorted(addresses, key=ipaddress.ip_address) == [f"10.20.0.{n}" for n in range(2, 22)]


async def test_an_exhausted_pool_fails_cleanly(h):
    small = await make_network(h, h.alice, cidr="10.30.0.0/28", name="small")  # 13 addresses
    big = await make_network(h, h.alice, cidr="10.31.0.0/24", name="big")
    client = NetworkClient(h.bus)
    # Each instance wants a port on `big` first: a failure on `small` must undo that one too.
    results = await asyncio.gather(*(client.allocate(str(uuid.uuid4()), "proj-a", "host-1", on(big, small))
                                     for _ in range(20)), return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert len(failures) == 7
    for failure in failures:
        assert isinstance(failure, errors.Conflict)
        assert "No more IP addresses available" in failure.message and small in failure.message
    assert len(await ports_of(h, network_id=small)) == 13
    assert len(await ports_of(h, network_id=big)) == 13
    addresses = {v.ips[0].address for r in results if not isinstance(r, BaseException) for v in r}
    assert len(addresses) == 26


async def test_none_means_no_nic_and_auto_means_the_only_network(h):
    net = await make_network(h, h.alice)
    client = NetworkClient(h.bus)
    none = [RequestedNetwork(network_id="none")]
    await client.validate(ALICE, none)
    assert await client.allocate(str(uuid.uuid4()), "proj-a", "h", none) == []
    [vif] = await client.allocate(str(uuid.uuid4()), "proj-a", "h", [RequestedNetwork(network_id="auto")])
    assert vif.network_id == net
    with pytest.raises(errors.InvalidInput, match="none"):
        await client.validate(ALICE, none + on(net))


async def test_allocate_refuses_what_validate_refuses_and_leaves_nothing(h):
    """A build's allocation checks again what the API validated (things change in between):
    the same errors, and no port made for a request that is refused in part."""
    own = await make_network(h, h.alice)
    bare = await make_network(h, h.alice, cidr=None, name="bare")
    bobs = await make_network(h, h.bob, name="bobs", cidr="10.9.0.0/24")
    client = NetworkClient(h.bus)
    instance = str(uuid.uuid4())
    for wrong in (str(uuid.uuid4()), bobs):
        with pytest.raises(errors.NotFound, match=wrong):
            await client.allocate(instance, "proj-a", "h", on(own, wrong))
    with pytest.raises(errors.InvalidInput, match=f"Network {bare} has no subnet"):
        await client.allocate(instance, "proj-a", "h", on(own, bare))
    assert await ports_of(h) == []
    # a network named twice is two NICs, two addresses
    vifs = await client.allocate(instance, "proj-a", "h", on(own, own))
    assert [v.ips[0].address for v in vifs] == ["10.0.0.2", "10.0.0.3"]
    assert len({v.mac_address for v in vifs}) == 2


async def test_the_lowest_free_address_after_releases(h):
    """A subnet remembers where its free addresses begin; a released address below that is
    the next one handed out, then the search goes on above the highest."""
    net = await make_network(h, h.alice, cidr="10.40.0.0/24")
    client = NetworkClient(h.bus)
    instances = [str(uuid.uuid4()) for _ in range(4)]
    for instance in instances:
        await client.allocate(instance, "proj-a", "h", on(net))   # .2 .3 .4 .5
    await client.deallocate(instances[1])
    await client.deallocate(instances[2])
    got = [(await client.allocate(str(uuid.uuid4()), "proj-a", "h", on(net)))[0].ips[0].address
           for _ in range(3)]
    assert got == ["10.40.0.3", "10.40.0.4", "10.40.0.6"]


async def test_allocations_made_together_share_a_transaction_and_are_refused_alone(h, pool):
    """Boots on one network in a burst: their ports are made by one statement (one transaction,
    one wait for the subnet), and one that is refused takes nothing from the others."""
    own = await make_network(h, h.alice, cidr="10.50.0.0/24")
    bobs = await make_network(h, h.bob, name="bobs", cidr="10.51.0.0/24")
    instances = [str(uuid.uuid4()) for _ in range(10)]

    def asking(instance, network):
        return AllocatePorts(instance_uuid=instance, project_id="proj-a", host="h", requested=on(network))
    results = await asyncio.gather(*(instance_ports.allocate(pool, asking(i, own)) for i in instances[:5]),
                                   instance_ports.allocate(pool, asking(str(uuid.uuid4()), bobs)),
                                   *(instance_ports.allocate(pool, asking(i, own)) for i in instances[5:]),
                                   return_exceptions=True)
    refused = results.pop(5)
    assert isinstance(refused, errors.NotFound) and bobs in refused.message
    assert sorted((vifs[0].ips[0].address for vifs in results), key=ipaddress.ip_address) == \
        [f"10.50.0.{n}" for n in range(2, 12)]
    # created_at is now(): the time its transaction began
    assert await pool.fetchval("SELECT count(DISTINCT created_at) FROM ports WHERE device_id = ANY($1)",
                               instances) == 1
    assert await ports_of(h, network_id=bobs) == []
