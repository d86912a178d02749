"""External and flat provider networks on the host (nova_async/dataplane/external.py): their
bridges, the NICs plugged into them (dummy links here: they send nothing anywhere), and
what is never touched — a bridge or NIC that is not ours, a NIC the host uses — and the
host as the external network's gateway, in a namespace standing in for the host."""

from __future__ import annotations

import sys
import uuid

import pytest

from nova_async.config import NetworkSettings
from nova_async.dataplane import desired as d
from nova_async.dataplane.external import NAT_TABLE, NIC, ExternalNetworks
from nova_async.dataplane.linux import HostNetworkError
from nova_async.dataplane.made import Made
from tests.integration.dataplane import netlab
from tests.integration.dataplane.netlab import Lab, link_exists, master_of, network

pytestmark = netlab.needs_root


@pytest.fixture
async def lab():
    lab = Lab()
    try:
        yield lab
    finally:
        await lab.close()


@pytest.fixture
async def host(pool, lab):
    """A part factory for this test's host; whatever its parts made goes at the end."""
    made = Made(pool, f"test-{uuid.uuid4().hex[:12]}")
    parts = []

    def part(**settings) -> ExternalNetworks:
        settings.setdefault("external_host_gateway", False)
        each = ExternalNetworks(made=made, settings=NetworkSettings(
            dataplane_table=f"t{uuid.uuid4().hex[:10]}", **settings))
        parts.append(each)
        return each

    part.made = made
    try:
        yield part
    finally:
        try:
            for each in parts:
                await each.apply(d.Desired())
        finally:
            await netlab.scrub(made)


def want(*nets: d.Network) -> d.Desired:
    return d.Desired(networks={n.id: n for n in nets})


async def test_a_flat_network_gets_its_physical_networks_nic_and_gives_it_back(host, lab):
    nic = await lab.dummy()
    physnet = f"ph{uuid.uuid4().hex[:6]}"
    part = host(physical_networks=(f"{physnet}:{nic}",))
    flat = network("198.51.100.0/24", network_type="flat", physical_network=physnet)
    await part.apply(want(flat))
    assert master_of(nic) == flat.bridge
    assert await host.made.listed(NIC) == {nic: {"bridge": flat.bridge}}

    await part.apply(want())
    assert link_exists(nic) and master_of(nic) is None      # unplugged, never deleted
    assert not link_exists(flat.bridge)
    assert await host.made.listed(NIC) == {}


async def test_external_interface_goes_into_the_external_bridge_and_the_host_holds_no_address(host, lab):
    nic = await lab.dummy()
    # external_host_gateway as its default (true): with a NIC the gateway is on the LAN, not here.
    part = host(external_interface=nic, external_host_gateway=True, external_cidr="198.51.100.0/24")
    ext = network("198.51.100.0/24", external=True)
    await part.apply(want(ext))
    assert master_of(nic) == ext.bridge
    shown = await netlab.sh("ip", "-br", "addr", "show", "dev", ext.bridge)
    assert "198.51.100" not in shown
    assert await host.made.listed(NAT_TABLE) == {}


async def test_a_nic_the_host_uses_or_another_bridge_holds_is_refused(host, lab):
    busy, enslaved = await lab.dummy(), await lab.dummy()
    await netlab.sh("ip", "addr", "add", f"fd{uuid.uuid4().hex[:2]}:{uuid.uuid4().hex[:4]}::1/128",
                    "dev", busy, "nodad")
    theirs = lab.link_name("lb")
    await netlab.sh("ip", "link", "add", "name", theirs, "type", "bridge")
    await netlab.sh("ip", "link", "set", "dev", enslaved, "master", theirs)
    physnets = {f"pa{uuid.uuid4().hex[:6]}": busy, f"pb{uuid.uuid4().hex[:6]}": enslaved}
    part = host(physical_networks=tuple(f"{p}:{n}" for p, n in physnets.items()))
    nets = [network("198.51.100.0/24", network_type="flat", physical_network=p) for p in physnets]
    with pytest.raises(HostNetworkError) as refused:
        await part.apply(want(*nets))
    assert f"NIC {busy} holds addresses" in str(refused.value)
    assert f"NIC {enslaved} is already in {theirs}" in str(refused.value)
    assert master_of(busy) is None and master_of(enslaved) == theirs
    assert all(link_exists(n.bridge) for n in nets)          # the networks still have bridges
    assert await host.made.listed(NIC) == {}


async def test_a_bridge_not_ours_is_left_alone(host, lab):
    ext = network("203.0.113.0/24", external=True)
    # Someone (compute, another service) made this network's bridge before us.
    lab.made_links.append(ext.bridge)
    await netlab.sh("ip", "link", "add", "name", ext.bridge, "type", "bridge")
    part = host()
    await part.apply(want(ext))
    await part.apply(want())
    assert link_exists(ext.bridge)

    mine = network("203.0.113.0/24", external=True)
    await part.apply(want(mine))
    assert link_exists(mine.bridge)
    await part.apply(want())
    assert not link_exists(mine.bridge)


# The host-gateway mode turns on the host's forwarding: a test may do that only to a host of
# its own, so the part runs in a namespace that stands in for the host (`ip netns exec` gives
# it that namespace's /proc/sys/net and /sys/class/net), with an "upstream" namespace behind
# its uplink and a machine on the external bridge.
AS_HOST = """
import asyncio, ipaddress, sys
from nova_async.config import NetworkSettings
from nova_async.dataplane import desired as d
from nova_async.dataplane.external import ExternalNetworks
from nova_async.dataplane.made import Made
from nova_async.db.pool import open_pool

async def main(dsn, host, table, net_id, cidr):
    nets = {}
    if cidr:
        c = ipaddress.ip_network(cidr)
        nets = {net_id: d.Network(net_id, 1500, True, subnets=(d.Subnet("s", net_id, c, 4, c[1], False),))}
    async with open_pool(dsn, min_size=1, max_size=2) as pool:
        part = ExternalNetworks(made=Made(pool, host),
                                settings=NetworkSettings(dataplane_table=table, external_host_gateway=True))
        await part.apply(d.Desired(networks=nets))

asyncio.run(main(*sys.argv[1:]))
"""


async def test_the_host_as_the_external_gateway_masquerades_the_range_out_of_its_uplink(database, pool, lab):
    made = Made(pool, f"test-{uuid.uuid4().hex[:12]}")
    table = f"t{uuid.uuid4().hex[:10]}"
    box = await lab.namespace("box")               # the host
    upstream = await lab.namespace("up")           # what lies beyond its uplink
    await netlab.sh("ip", "-n", box, "link", "add", "name", "uplink", "type", "veth", "peer", "name", "eth0",
                    "netns", upstream)
    await netlab.sh("ip", "-n", box, "addr", "add", "198.51.100.2/24", "dev", "uplink")
    await netlab.sh("ip", "-n", box, "link", "set", "uplink", "up")
    await netlab.sh("ip", "-n", upstream, "addr", "add", "198.51.100.1/24", "dev", "eth0")
    await netlab.sh("ip", "-n", upstream, "link", "set", "eth0", "up")
    await netlab.sh("ip", "-n", box, "route", "add", "default", "via", "198.51.100.1")
    ext = network("203.0.113.0/24", external=True)

    async def as_host(cidr: str) -> None:
        await netlab.sh("ip", "netns", "exec", box, sys.executable, "-c", AS_HOST, database, made.host,
                        table, ext.id, cidr)

    try:
        await as_host("203.0.113.0/24")
        assert await netlab.sh("ip", "netns", "exec", box, "sysctl", "-n", "net.ipv4.ip_forward") == "1\n"
        assert "203.0.113.1/24" in await netlab.sh("ip", "-n", box, "addr", "show", "dev", ext.bridge)
        machine = await lab.namespace("vm")
        await netlab.sh("ip", "link", "add", "name", "eth0", "netns", machine, "type", "veth", "peer", "name",
                        "tapvm", "netns", box)
        # Named as a guest's tap is: a port of the network, which does not keep its bridge.
        await netlab.sh("ip", "-n", box, "link", "set", "tapvm", "master", ext.bridge, "up")
        await netlab.sh("ip", "-n", machine, "addr", "add", "203.0.113.50/24", "dev", "eth0")
        await netlab.sh("ip", "-n", machine, "link", "set", "eth0", "up")
        await netlab.sh("ip", "-n", machine, "route", "add", "default", "via", "203.0.113.1")
        async with netlab.listening(upstream) as (tcp, output):
            assert (await netlab.connect(machine, "198.51.100.1", tcp)).startswith("reached")
            assert await netlab.peer_seen(output) == "198.51.100.2"     # masqueraded as the host

        await as_host("")                            # the external network is gone
        assert not (await netlab.sh("ip", "-n", box, "-br", "link", "show", "type", "bridge")).strip()
        assert table not in await netlab.sh("ip", "netns", "exec", box, "nft", "list", "tables")
        assert await pool.fetch("SELECT * FROM dataplane_objects WHERE host = $1", made.host) == []
    finally:
        await pool.execute("DELETE FROM dataplane_objects WHERE host = $1", made.host)
