"""Routers on the host (nova_async/dataplane/routers.py), driven by hand-built Desired
values: a guest namespace behind the router reaches an "outside" namespace on the external
bridge (SNAT), a floating IP makes the guest reachable from the outside and from another
internal network, and everything of the router goes when the database stops wanting it."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from nova_async.config import NetworkSettings
from nova_async.dataplane import desired as d
from nova_async.dataplane.external import ExternalNetworks
from nova_async.dataplane.made import Made
from nova_async.dataplane.routers import LEG, NAMESPACE, Routers
from tests.integration.dataplane import netlab
from tests.integration.dataplane.netlab import (Lab, addresses_in, chatting, connect, echoing, link_exists, links_in,
                                                listening, master_of, namespaces, network, nft_in,
                                                peer_seen, port, uid)
from tests.waiting import until

pytestmark = netlab.needs_root


@dataclasses.dataclass
class Cloud:
    """One external network (203.0.113.0/24, its gateway the outside namespace), one
    internal network behind a router, and the two parts that make them real."""

    made: Made
    external: ExternalNetworks
    routers: Routers
    ext: d.Network
    inner: d.Network
    router_id: str
    gateway: d.Port
    interface: d.Port
    guest: d.Port

    def want(self, *, interfaces: bool = True, gateway: bool = True, floating: dict | None = None,
             routers: bool = True, more_networks: tuple[d.Network, ...] = (),
             more_interfaces: tuple[d.Port, ...] = ()) -> d.Desired:
        router = d.Router(id=self.router_id, gateway_port=self.gateway if gateway else None,
                          interfaces=((self.interface,) if interfaces else ()) + more_interfaces)
        nets = {n.id: n for n in (self.ext, self.inner, *more_networks)}
        ports = [self.guest, *((self.gateway,) if gateway else ()), *router.interfaces]
        return d.Desired(networks=nets, ports={p.id: p for p in ports},
                         routers={router.id: router} if routers else {},
                         floating_ips=floating or {})

    async def apply(self, want: d.Desired) -> None:
        await self.external.apply(want)   # the external bridge first: the router's gateway plugs into it
        await self.routers.apply(want)

    @property
    def netns(self) -> str:
        return f"qrouter-{self.router_id}"


@pytest.fixture
async def lab():
    lab = Lab()
    try:
        yield lab
    finally:
        await lab.close()


@pytest.fixture
async def cloud(pool, lab):
    made = Made(pool, f"test-{uuid.uuid4().hex[:12]}")
    settings = NetworkSettings(dataplane_table=f"t{uuid.uuid4().hex[:10]}", external_host_gateway=False)
    ext = network("203.0.113.0/24", external=True)
    inner = network("10.0.0.0/24", mtu=1450)
    router_id = uid()
    c = Cloud(made=made, external=ExternalNetworks(made=made, settings=settings),
              routers=Routers(made=made, host=made.host), ext=ext, inner=inner,
              router_id=router_id,
              gateway=port(ext, "203.0.113.10", owner=d.ROUTER_GATEWAY_OWNER, device_id=router_id),
              interface=port(inner, "10.0.0.1", owner=d.ROUTER_INTERFACE_OWNER, device_id=router_id),
              guest=port(inner, "10.0.0.5"))
    try:
        yield c
    finally:
        try:
            await c.routers.apply(d.Desired())
            await c.external.apply(d.Desired())
        finally:
            await lab.close()          # the lab's veths first: they are in the parts' bridges
            await netlab.scrub(made)


async def outside_and_guest(cloud: Cloud, lab: Lab) -> tuple[str, str]:
    outside = await lab.host(cloud.ext.bridge, netlab.mac(), "203.0.113.1/24", None, prefix="out")
    guest = await lab.host(cloud.inner.bridge, cloud.guest.mac_address, "10.0.0.5/24", "10.0.0.1", prefix="gst")
    return outside, guest


async def test_a_guest_reaches_the_outside_through_the_router_as_the_gateway_address(cloud, lab):
    await cloud.apply(cloud.want())
    outside, guest = await outside_and_guest(cloud, lab)

    async with listening(outside) as (tcp, output):
        assert (await connect(guest, "203.0.113.1", tcp)).startswith("reached hello 10.0.0.5")
        assert await peer_seen(output) == "203.0.113.10"

    # The router as built: its ports, their addresses, forwarding, the default route.
    links = await links_in(cloud.netns)
    qr, qg = f"qr-{cloud.interface.id[:11]}", f"qg-{cloud.gateway.id[:11]}"
    assert links[qr]["address"] == cloud.interface.mac_address and links[qr]["mtu"] == 1450
    assert await addresses_in(cloud.netns, qr) == {"10.0.0.1/24"}
    assert await addresses_in(cloud.netns, qg) == {"203.0.113.10/24"}
    assert master_of(cloud.interface.tap) == cloud.inner.bridge
    assert master_of(cloud.gateway.tap) == cloud.ext.bridge
    route = await netlab.sh("ip", "-n", cloud.netns, "route", "show", "default")
    assert f"via 203.0.113.1 dev {qg}" in route


async def test_without_snat_the_outside_sees_the_guests_own_address(cloud, lab):
    want = cloud.want()
    router = dataclasses.replace(want.routers[cloud.router_id], enable_snat=False)
    await cloud.apply(dataclasses.replace(want, routers={router.id: router}))
    outside, guest = await outside_and_guest(cloud, lab)
    await netlab.sh("ip", "-n", outside, "route", "add", "10.0.0.0/24", "via", "203.0.113.10")

    async with listening(outside) as (tcp, output):
        assert (await connect(guest, "203.0.113.1", tcp)).startswith("reached")
        assert await peer_seen(output) == "10.0.0.5"


async def test_a_floating_ip_reaches_the_guest_from_outside_and_from_inside_until_disassociated(cloud, lab):
    other = network("10.1.0.0/24")
    other_interface = port(other, "10.1.0.1", owner=d.ROUTER_INTERFACE_OWNER, device_id=cloud.router_id)
    neighbour = port(other, "10.1.0.7")
    fip = d.FloatingIp(id=uid(), address=d.IPv4Address("203.0.113.20"), network_id=cloud.ext.id,
                       router_id=cloud.router_id, fixed_ip=d.IPv4Address("10.0.0.5"), port_id=cloud.guest.id)
    associated = cloud.want(floating={fip.id: fip}, more_networks=(other,), more_interfaces=(other_interface,))
    await cloud.apply(associated)
    outside, guest = await outside_and_guest(cloud, lab)
    elsewhere = await lab.host(other.bridge, neighbour.mac_address, "10.1.0.7/24", "10.1.0.1", prefix="nbr")
    same_net = await lab.host(cloud.inner.bridge, netlab.mac(), "10.0.0.9/24", "10.0.0.1", prefix="sib")

    async with listening(guest) as (tcp, output):
        assert (await connect(outside, "203.0.113.20", tcp)).startswith("reached hello")
        assert await peer_seen(output) == "203.0.113.1"      # the guest sees who really called
    async with listening(guest) as (tcp, output):
        assert (await connect(elsewhere, "203.0.113.20", tcp)).startswith("reached hello")
        assert await peer_seen(output) == "10.1.0.7"          # routed east-west, not translated
    async with listening(guest) as (tcp, output):
        assert (await connect(same_net, "203.0.113.20", tcp)).startswith("reached hello")
        assert await peer_seen(output) == "10.0.0.1"          # hairpin: answered through the router
    # The guest's own traffic out leaves as its floating IP, not as the router's.
    async with listening(outside) as (tcp, output):
        assert (await connect(guest, "203.0.113.1", tcp)).startswith("reached")
        assert await peer_seen(output) == "203.0.113.20"
    qg = f"qg-{cloud.gateway.id[:11]}"
    assert await addresses_in(cloud.netns, qg) == {"203.0.113.10/24", "203.0.113.20/32"}

    disassociated = dataclasses.replace(fip, router_id=None, fixed_ip=None, port_id=None)
    await cloud.apply(dataclasses.replace(associated, floating_ips={fip.id: disassociated}))
    assert await addresses_in(cloud.netns, qg) == {"203.0.113.10/24"}
    assert "203.0.113.20" not in await nft_in(cloud.netns)
    async with listening(guest) as (tcp, _):
        assert (await connect(outside, "203.0.113.20", tcp, timeout=5)).startswith("unreachable")
    async with listening(outside) as (tcp, output):
        assert (await connect(guest, "203.0.113.1", tcp)).startswith("reached")
        assert await peer_seen(output) == "203.0.113.10"     # back to the router's SNAT


async def test_a_connection_through_a_floating_ip_ends_when_it_is_disassociated_or_moved(cloud, lab):
    fip = d.FloatingIp(id=uid(), address=d.IPv4Address("203.0.113.22"), network_id=cloud.ext.id,
                       router_id=cloud.router_id, fixed_ip=d.IPv4Address("10.0.0.5"), port_id=cloud.guest.id)
    other = port(cloud.inner, "10.0.0.6")
    await cloud.apply(cloud.want(floating={fip.id: fip}))
    outside, guest = await outside_and_guest(cloud, lab)

    async with echoing(guest) as tcp, chatting(outside, "203.0.113.22", tcp) as chat:
        assert await chat.say("one") == "echo one"
        await cloud.apply(cloud.want(floating={fip.id: dataclasses.replace(fip, router_id=None, fixed_ip=None)}))
        assert (await chat.say("two")).startswith("lost")

    await cloud.apply(cloud.want(floating={fip.id: fip}))
    async with echoing(guest) as tcp, chatting(outside, "203.0.113.22", tcp) as chat:
        assert await chat.say("three") == "echo three"
        moved = dataclasses.replace(fip, fixed_ip=d.IPv4Address("10.0.0.6"), port_id=other.id)
        await cloud.apply(cloud.want(floating={fip.id: moved}))
        assert (await chat.say("four")).startswith("lost")

    # The guest's own connections out through the floating IP end with it too.
    await cloud.apply(cloud.want(floating={fip.id: fip}))
    async with echoing(outside) as tcp, chatting(guest, "203.0.113.1", tcp) as chat:
        assert await chat.say("five") == "echo five"
        await cloud.apply(cloud.want(floating={}))
        assert (await chat.say("six")).startswith("lost")


async def test_the_outside_learns_at_once_where_a_floating_ip_now_is(cloud, lab):
    await cloud.apply(cloud.want())
    outside, _ = await outside_and_guest(cloud, lab)
    # The outside last saw 203.0.113.23 somewhere else (another router, since gone).
    await netlab.sh("ip", "-n", outside, "neigh", "replace", "203.0.113.23", "lladdr", "02:00:00:00:00:01",
                    "dev", "eth0", "nud", "stale")
    fip = d.FloatingIp(id=uid(), address=d.IPv4Address("203.0.113.23"), network_id=cloud.ext.id,
                       router_id=cloud.router_id, fixed_ip=d.IPv4Address("10.0.0.5"), port_id=cloud.guest.id)
    await cloud.apply(cloud.want(floating={fip.id: fip}))
    # The announcement has left the router; the outside's kernel takes it in its own time.
    await until(lambda: netlab.sh("ip", "-n", outside, "neigh", "show", "203.0.113.23"),
                lambda neigh: cloud.gateway.mac_address in neigh, what="the outside's neighbour entry moved")


async def test_removing_interface_gateway_and_router_leaves_nothing_of_ours(cloud, lab):
    await cloud.apply(cloud.want())
    qr, qg = f"qr-{cloud.interface.id[:11]}", f"qg-{cloud.gateway.id[:11]}"
    assert {qr, qg} <= set(await links_in(cloud.netns))

    await cloud.apply(cloud.want(interfaces=False))
    assert qr not in await links_in(cloud.netns) and not link_exists(cloud.interface.tap)
    assert cloud.interface.tap not in await cloud.made.listed(LEG)
    assert "snat ip to" not in await nft_in(cloud.netns)     # no internal subnet left to translate

    await cloud.apply(cloud.want(interfaces=False, gateway=False))
    assert qg not in await links_in(cloud.netns) and not link_exists(cloud.gateway.tap)
    assert (await nft_in(cloud.netns)).strip() == ""        # the router's table is gone
    assert (await netlab.sh("ip", "-n", cloud.netns, "route", "show", "default")).strip() == ""

    await cloud.apply(cloud.want(interfaces=False, gateway=False, routers=False))
    assert cloud.netns not in await namespaces()
    assert await cloud.made.listed(NAMESPACE) == {} and await cloud.made.listed(LEG) == {}

    await cloud.apply(d.Desired())
    assert not link_exists(cloud.ext.bridge) and not link_exists(cloud.inner.bridge)
    assert await cloud.made.pool.fetch("SELECT * FROM dataplane_objects WHERE host = $1", cloud.made.host) == []


async def test_an_administratively_down_router_is_not_on_the_host(cloud, lab):
    await cloud.apply(cloud.want())
    want = cloud.want()
    down = dataclasses.replace(want.routers[cloud.router_id], admin_state_up=False)
    await cloud.apply(dataclasses.replace(want, routers={down.id: down}))
    assert cloud.netns not in await namespaces()
    assert not link_exists(cloud.interface.tap) and not link_exists(cloud.gateway.tap)


async def snapshot(cloud: Cloud) -> tuple:
    # Once the kernel's duplicate address detection is over (in its own time): until then the
    # ports' IPv6 link-local addresses are tentative, and their local routes not there yet.
    links = await until(lambda: links_in(cloud.netns),
                        lambda found: not any(a.get("tentative") for link in found.values()
                                              for a in link.get("addr_info", ())),
                        what="duplicate address detection over")
    taps = [(t, master_of(t), Path(f"/sys/class/net/{t}/ifindex").read_text()) for t in
            (cloud.interface.tap, cloud.gateway.tap)]
    routes = await netlab.sh("ip", "-n", cloud.netns, "route", "show", "table", "all")
    rows = await cloud.made.pool.fetch("SELECT kind, name, detail, created_at FROM dataplane_objects "
                                       "WHERE host = $1 ORDER BY kind, name", cloud.made.host)
    return links, taps, routes, await nft_in(cloud.netns), [tuple(r) for r in rows]


async def test_applying_twice_changes_nothing_and_a_new_process_takes_over(cloud, lab):
    fip = d.FloatingIp(id=uid(), address=d.IPv4Address("203.0.113.21"), network_id=cloud.ext.id,
                       router_id=cloud.router_id, fixed_ip=d.IPv4Address("10.0.0.5"), port_id=cloud.guest.id)
    want = cloud.want(floating={fip.id: fip})
    await cloud.apply(want)
    before = await snapshot(cloud)
    await cloud.apply(want)
    assert await snapshot(cloud) == before
    # A restarted process (nothing in memory) finds the same router and leaves it as it is.
    again = Routers(made=cloud.made, host=cloud.made.host)
    await again.apply(want)
    assert await snapshot(cloud) == before


async def test_a_router_left_from_before_is_removed_and_one_not_ours_is_kept(cloud, lab):
    await cloud.apply(cloud.want())
    # A router this host made before a crash, which the database no longer has...
    stale_ns = f"qrouter-{uid()}"
    stale_tap = lab.link_name("tap")
    await cloud.made.record(NAMESPACE, stale_ns, {"router_id": stale_ns[8:]})
    await netlab.sh("ip", "netns", "add", stale_ns)
    await cloud.made.record(LEG, stale_tap, {"netns": stale_ns, "inside": "qr-stale", "network_id": cloud.inner.id})
    await netlab.sh("ip", "link", "add", "name", stale_tap, "type", "veth", "peer", "name", "qr-stale",
                    "netns", stale_ns)
    # ... and one another program made (not in Made).
    foreign = f"qrouter-{uid()}"
    lab.made_namespaces.append(foreign)
    await netlab.sh("ip", "netns", "add", foreign)

    await cloud.apply(cloud.want())
    present = await namespaces()
    assert stale_ns not in present and not link_exists(stale_tap)
    assert foreign in present and cloud.netns in present
    assert set(await cloud.made.listed(NAMESPACE)) == {cloud.netns}
