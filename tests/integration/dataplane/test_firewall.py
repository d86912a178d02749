"""Security groups as a guest sees them: real nftables tables, real bridged traffic between
namespaces standing in for guests (guestnet.py), Python sockets on both ends. Needs root."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from ipaddress import ip_network

import pytest

from nova_async.config import NetworkSettings
from nova_async.dataplane.desired import Desired, Port, Rule, SecurityGroup, bridge_name
from nova_async.dataplane.firewall import Firewall
from nova_async.dataplane.linux import ip, nft, run
from nova_async.dataplane.made import Made
from tests.integration.dataplane.guestnet import (BROADCAST, GuestNet, arp_frame, fixed, guest_net,
                                                 next_line, say, udp_frame)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: makes network namespaces, "
                                "veths, a bridge and nftables tables")

HOST = "h1"
TABLE = "fwtest"


def new_id() -> str:
    return str(uuid.uuid4())


def port(net: GuestNet, *ips: str, groups: tuple[str, ...] = (), owner: str = "compute:nova",
         port_security: bool = True) -> Port:
    pid = new_id()
    mac = "fa:16:3e:" + ":".join(pid[i:i + 2] for i in (0, 2, 4))
    return Port(pid, net.network_id, mac, owner, new_id(), fixed(*ips), groups,
                port_security_enabled=port_security, binding_host=HOST)


def rule(direction: str, ethertype: str = "IPv4", protocol: str | None = None,
         ports: tuple[int, int] | None = None, **kw) -> Rule:
    lo, hi = ports or (None, None)
    return Rule(new_id(), direction, ethertype, protocol, lo, hi, **kw)


def all_egress() -> tuple[Rule, ...]:
    """What a project's default group holds for egress."""
    return rule("egress", "IPv4"), rule("egress", "IPv6")


def group(*rules: Rule, stateful: bool = True) -> SecurityGroup:
    return SecurityGroup(new_id(), stateful, rules)


def desired(ports: list[Port], groups: list[SecurityGroup]) -> Desired:
    return Desired(ports={p.id: p for p in ports}, security_groups={g.id: g for g in groups})


def firewall(pool, net: GuestNet, tmp_path) -> Firewall:
    return Firewall(pool=pool, made=Made(pool, HOST), settings=NetworkSettings(dataplane_table=TABLE),
                    host=HOST, state_dir=tmp_path, netns=net.netns)


async def test_ingress_is_what_the_rules_allow_and_a_removed_rule_refuses_new_connections(pool, tmp_path):
    async with guest_net() as net:
        ssh = group(rule("ingress", "IPv4", "tcp", (22, 22)), *all_egress())
        a = port(net, "10.0.0.10", groups=(ssh.id,))
        peer = port(net, "10.0.0.1", owner="network:router_interface")   # never filtered
        ga, gp = await net.plug(a), await net.plug(peer)
        await net.serve(ga, 22, 23)
        fw = firewall(pool, net, tmp_path)

        await fw.apply(desired([a, peer], [ssh]))
        assert await net.connect(gp, ga.v4, 22, expect="open") == "open"
        assert await net.connect(gp, ga.v4, 23, expect="blocked") == "timeout"
        held = await net.hold(gp, ga.v4, 22)
        assert await say(held, "before") == "echo"

        await fw.apply(desired([a, peer], [replace(ssh, rules=all_egress())]))
        assert await net.connect(gp, ga.v4, 22, expect="blocked") == "timeout"
        # What conntrack gives: the connection made while the rule existed goes on (the
        # table is replaced, conntrack's entry is not). Neutron promises new connections
        # are refused, which they are; its iptables agent also deletes such entries, for
        # which this host has no conntrack tool.
        assert await say(held, "after") == "echo"
        await fw.close()


async def test_egress_by_the_default_rules_and_replies_to_the_guests_own_connections(pool, tmp_path):
    async with guest_net() as net:
        default = group(*all_egress())          # no ingress rule at all
        a = port(net, "10.0.0.10", groups=(default.id,))
        peer = port(net, "10.0.0.1", owner="network:router_interface")
        ga, gp = await net.plug(a), await net.plug(peer)
        dhcp_client = await net.serve(ga, 22, udp=68)
        await net.serve(gp, 80)
        # An address of the host's own on the bridge: the guest's egress rules apply to it too.
        await ip("-n", net.netns, "addr", "add", "10.0.0.254/24", "dev", bridge_name(net.network_id))
        await net.serve(net.netns, 8080)
        fw = firewall(pool, net, tmp_path)

        await fw.apply(desired([a, peer], [default]))
        # Out, and the answer back in though no ingress rule allows port 80's replies.
        assert await net.connect(ga, gp.v4, 80, expect="open") == "open"
        assert await net.connect(ga, "10.0.0.254", 8080, expect="open") == "open"
        assert await net.connect(gp, ga.v4, 22, expect="blocked") == "timeout"
        # No ingress rule, yet a DHCP server's answers come in (and nothing else to port 68).
        await net.send_udp(gp, ga.v4, 68, 6767, "other")
        await net.send_udp(gp, ga.v4, 68, 67, "offer")
        assert (await next_line(dhcp_client)).split() == ["udp", "offer"]

        await fw.apply(desired([a, peer], [replace(default, rules=())]))
        assert await net.connect(ga, gp.v4, 80, expect="blocked") == "timeout"
        assert await net.connect(ga, "10.0.0.254", 8080, expect="blocked") == "timeout"


async def test_a_stateless_group_needs_a_rule_for_replies_too(pool, tmp_path):
    async with guest_net() as net:
        stateless = group(rule("ingress", "IPv4", "tcp", (22, 22)), *all_egress(), stateful=False)
        a = port(net, "10.0.0.10", groups=(stateless.id,))
        peer = port(net, "10.0.0.1", owner="network:router_interface")
        ga, gp = await net.plug(a), await net.plug(peer)
        await net.serve(ga, 22)
        await net.serve(gp, 80)
        fw = firewall(pool, net, tmp_path)

        await fw.apply(desired([a, peer], [stateless]))
        # In to 22, and the reply goes out by the egress rule.
        assert await net.connect(gp, ga.v4, 22, expect="open") == "open"
        # Out to 80 is allowed, but the reply from port 80 matches no ingress rule.
        assert await net.connect(ga, gp.v4, 80, expect="blocked") == "timeout"

        with_replies = replace(stateless, rules=(*stateless.rules, rule("ingress", "IPv4", "tcp")))
        await fw.apply(desired([a, peer], [with_replies]))
        assert await net.connect(ga, gp.v4, 80, expect="open") == "open"


async def test_a_remote_group_rule_allows_the_groups_members_only(pool, tmp_path):
    async with guest_net() as net:
        db = group(*all_egress())
        other = group(*all_egress())
        web = group(rule("ingress", "IPv4", "tcp", (22, 22), remote_group_id=db.id), *all_egress())
        a = port(net, "10.0.0.10", groups=(web.id,))
        b = port(net, "10.0.0.11", groups=(db.id,))
        c = port(net, "10.0.0.12", groups=(other.id,))
        ga, gb, gc = await net.plug(a), await net.plug(b), await net.plug(c)
        await net.serve(ga, 22)
        fw = firewall(pool, net, tmp_path)

        await fw.apply(desired([a, b, c], [web, db, other]))
        assert await net.connect(gb, ga.v4, 22, expect="open") == "open"
        assert await net.connect(gc, ga.v4, 22, expect="blocked") == "timeout"

        # c joins the group: the set of members follows.
        joined = replace(c, security_group_ids=(other.id, db.id))
        await fw.apply(desired([a, b, joined], [web, db, other]))
        assert await net.connect(gc, ga.v4, 22, expect="open") == "open"


async def test_an_ipv6_rule(pool, tmp_path):
    async with guest_net() as net:
        v6 = group(rule("ingress", "IPv6", "tcp", (22, 22), remote_ip_prefix=ip_network("fd00::/8")),
                   *all_egress())
        a = port(net, "10.0.0.10", "fd00::10", groups=(v6.id,))
        peer = port(net, "10.0.0.1", "fd00::1", owner="network:router_interface")
        ga, gp = await net.plug(a), await net.plug(peer)
        await net.serve(ga, 22, 23)
        fw = firewall(pool, net, tmp_path)

        await fw.apply(desired([a, peer], [v6]))
        assert await net.connect(gp, ga.v6, 22, expect="open") == "open"
        assert await net.connect(gp, ga.v6, 23, expect="blocked") == "timeout"
        assert await net.connect(gp, ga.v4, 22, expect="blocked") == "timeout"   # an IPv6 rule only

        # Out from its own address, not from another (both ends know each other's MAC, so
        # only the packet's source address can be what is dropped).
        await net.serve(gp, 80)
        assert await net.connect(ga, gp.v6, 80, expect="open") == "open"
        await ip("-n", ga.netns, "addr", "add", "fd00::99/64", "dev", "eth0", "nodad")
        await ip("-n", ga.netns, "neigh", "replace", gp.v6, "lladdr", peer.mac_address, "dev", "eth0")
        await ip("-n", gp.netns, "neigh", "replace", "fd00::99", "lladdr", a.mac_address, "dev", "eth0")
        assert await net.connect(ga, gp.v6, 80, expect="blocked", source="fd00::99") == "timeout"


async def test_rules_hold_for_traffic_the_host_routes_to_a_guest(pool, tmp_path):
    """A guest on a network whose gateway is the host (a provider network on a lab box)."""
    async with guest_net() as net:
        ssh = group(rule("ingress", "IPv4", "tcp", (22, 22)), *all_egress())
        a = port(net, "10.0.0.10", groups=(ssh.id,))
        ga = await net.plug(a)
        await ip("-n", net.netns, "addr", "add", "10.0.0.254/24", "dev", bridge_name(net.network_id))
        await ip("-n", ga.netns, "route", "add", "default", "via", "10.0.0.254")
        outside = await net.outside("198.51.100.1", "198.51.100.254")
        await net.serve(ga, 22, 23)
        await net.serve(outside, 80)
        fw = firewall(pool, net, tmp_path)

        await fw.apply(desired([a], [ssh]))
        assert await net.connect(outside, ga.v4, 22, expect="open") == "open"
        assert await net.connect(outside, ga.v4, 23, expect="blocked") == "timeout"
        assert await net.connect(ga, "198.51.100.1", 80, expect="open") == "open"


async def test_a_guest_cannot_spoof_its_address_or_mac_nor_serve_dhcp(pool, tmp_path):
    async with guest_net() as net:
        default = group(*all_egress())
        c = port(net, "10.0.0.12", groups=(default.id,))
        peer = port(net, "10.0.0.1", owner="network:router_interface")
        gc, gp = await net.plug(c), await net.plug(peer)
        dhcp_client = await net.serve(gp, 80, udp=68)
        fw = firewall(pool, net, tmp_path)
        await fw.apply(desired([c, peer], [default]))
        assert await net.connect(gc, gp.v4, 80, expect="open") == "open"

        # Another source address. Both ends know each other's MAC already, so no ARP (which
        # is checked too) is needed: only the IP packet itself can be what is dropped.
        await ip("-n", gc.netns, "addr", "add", "10.0.0.99/24", "dev", "eth0")
        await ip("-n", gc.netns, "neigh", "replace", gp.v4, "lladdr", peer.mac_address, "dev", "eth0")
        await ip("-n", gp.netns, "neigh", "replace", "10.0.0.99", "lladdr", c.mac_address, "dev", "eth0")
        assert await net.connect(gc, gp.v4, 80, expect="blocked", source="10.0.0.99") == "timeout"

        # A DHCP server's answer (udp from port 67) is dropped; the same datagram from another
        # port, sent after it, is what arrives first.
        await net.send_udp(gc, gp.v4, 68, 67, "offer")
        await net.send_udp(gc, gp.v4, 68, 6767, "control")
        assert (await next_line(dhcp_client)).split() == ["udp", "control"]

        # Another MAC, which the peer is told to use: dropped at the tap.
        spoofed = "fa:16:3e:ee:ee:ee"
        await ip("-n", gc.netns, "link", "set", "eth0", "address", spoofed)
        await ip("-n", gp.netns, "neigh", "replace", gc.v4, "lladdr", spoofed, "dev", "eth0")
        await ip("-n", gc.netns, "neigh", "replace", gp.v4, "lladdr", peer.mac_address, "dev", "eth0")
        assert await net.connect(gc, gp.v4, 80, expect="blocked") == "timeout"


async def test_arp_only_for_its_own_addresses_and_dhcp_discovery_from_no_address(pool, tmp_path):
    async with guest_net() as net:
        default = group(*all_egress())
        c = port(net, "10.0.0.12", groups=(default.id,))
        peer = port(net, "10.0.0.1", owner="network:router_interface")
        gc, gp = await net.plug(c), await net.plug(peer)
        fw = firewall(pool, net, tmp_path)
        await fw.apply(desired([c, peer], [default]))
        seen = await net.sniff(gp)

        # Frames the guest crafts itself; each check sends the one that must be dropped first,
        # then one that must pass: the first frame seen says which happened, without a wait.
        mac = c.mac_address
        await net.send_frames(gc, arp_frame(mac, "10.0.0.1", "10.0.0.250"),    # the peer's address
                              arp_frame(mac, "10.0.0.12", "10.0.0.250"))
        assert (await next_line(seen)).split() == ["arp", "10.0.0.12"]

        await net.send_frames(
            gc, udp_frame(mac, BROADCAST, "10.0.0.77", "255.255.255.255", 68, 67, b"mark:spoofed"),
            udp_frame(mac, BROADCAST, "0.0.0.0", "255.255.255.255", 68, 67, b"mark:discover"),
            udp_frame(mac, BROADCAST, "0.0.0.0", "255.255.255.255", 4000, 4000, b"mark:not-dhcp"),
            udp_frame(mac, BROADCAST, "10.0.0.12", "255.255.255.255", 4000, 4000, b"mark:own"))
        assert (await next_line(seen)).split() == ["udp", "0.0.0.0", "discover"]
        assert (await next_line(seen)).split() == ["udp", "10.0.0.12", "own"]


async def table_handles(net: GuestNet) -> dict[str, str]:
    """Each of our tables' kernel handle: a table made again gets a new one."""
    handles = {}
    for family in ("inet", "bridge"):
        done = await run("nft", "-a", "list", "table", family, TABLE, netns=net.netns, check=False)
        if done.returncode == 0:
            handles[family] = done.output.splitlines()[0].split("# handle ")[1]
    return handles


async def test_an_unchanged_pass_applies_nothing_and_no_ports_leave_no_tables(pool, tmp_path):
    async with guest_net() as net:
        # The host's own rules: never touched.
        await nft("table inet hostown {\n chain c { type filter hook forward priority 10; policy accept; }\n}\n",
                  netns=net.netns)
        default = group(*all_egress())
        a = port(net, "10.0.0.10", groups=(default.id,))
        open_port = port(net, "10.0.0.11", groups=(default.id,), port_security=False)
        peer = port(net, "10.0.0.1", owner="network:router_interface")
        gopen, gp = await net.plug(open_port), await net.plug(peer)
        await net.serve(gopen, 23)
        fw = firewall(pool, net, tmp_path)
        made = Made(pool, HOST)

        await fw.apply(desired([a, open_port, peer], [default]))
        first = await table_handles(net)
        assert set(first) == {"inet", "bridge"}
        assert set(await made.listed("nft_table")) == {f"inet {TABLE} in {net.netns}",
                                                        f"bridge {TABLE} in {net.netns}"}
        # Port security disabled: not filtered at all, though its group allows no ingress.
        assert await net.connect(gp, gopen.v4, 23, expect="open") == "open"

        # The same state, read again as a new value: nothing is applied.
        await fw.apply(desired([replace(a), replace(open_port), replace(peer)], [replace(default)]))
        assert await table_handles(net) == first

        # A new process (nothing applied by it yet) with no port needing a firewall: what the
        # record says is ours goes, and only that.
        again = firewall(pool, net, tmp_path)
        await again.apply(desired([open_port, peer], [default]))
        assert await table_handles(net) == {}
        assert await made.listed("nft_table") == {}
        tables = (await run("nft", "list", "tables", netns=net.netns)).output.split("\n")
        assert [t for t in tables if t] == ["table inet hostown"]
        await again.apply(Desired())
        assert await made.listed("nft_table") == {}
