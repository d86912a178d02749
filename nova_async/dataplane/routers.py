"""Routers on this host, as Neutron's L3 agent makes them, in our own code.

A router is a network namespace `qrouter-<router id>` with forwarding on (in it only).
Each of its ports is a veth pair: the namespace end carries the port's MAC and addresses
(`qr-<port[:11]>` on an internal network, `qg-<port[:11]>` the gateway on the external
network), the host end `tap<port[:11]>` is plugged into the network's bridge. The default
route goes via the external subnet's gateway.

NAT lives in one nft table inside the namespace (the namespace is ours, so is the table),
replaced whole in one transaction on every change (`nft -f`: the table deleted and made
again, atomically; connections already translated keep their translation in conntrack):
- a floating IP is held as a /32 on qg, so the router answers ARP for it; prerouting
  DNATs it to the fixed IP from wherever it comes (the outside or another internal
  network), postrouting SNATs the fixed IP to it on the way out of qg;
- with enable_snat, what else the internal subnets send out of qg leaves as the gateway
  port's address;
- a guest reaching a floating IP on its own network would get the answer straight from its
  neighbour, not through the router; such traffic is masqueraded to the router's address;
- conntrack keeps a connection's translation after the rule that made it is gone (there is
  no `conntrack` tool here to delete it), so the forward chain drops connections whose
  translation the router no longer has: a floating IP disassociated or moved to another
  guest ends its established connections, as Neutron's agent does by deleting them.

Every veth and namespace is recorded in Made before it is made and forgotten after it is
gone; a pass removes what Made lists that the database no longer wants (a router deleted,
an interface detached, a gateway cleared, admin_state_up false), which is also how a restart
cleans up after a crash. A router whose ports are bound to another host is not built here."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import structlog

from nova_async.dataplane import bridging, linux
from nova_async.dataplane.desired import Desired, Network, Port, Router, short
from nova_async.dataplane.made import Made

log = structlog.get_logger("dataplane.routers")

NAMESPACE = "router-namespace"   # Made kind: a router's namespace, named qrouter-<id>
LEG = "router-link"              # Made kind: a router port's veth, by its host end tap<port>
TABLE = "router"                 # the nft table inside each router's namespace


def namespace_name(router_id: str) -> str:
    return f"qrouter-{router_id}"


@dataclass(frozen=True)
class Leg:
    """One router port: a veth between the namespace and a network's bridge."""

    port: Port
    network: Network
    inside: str                     # qr-… or qg-…
    addresses: tuple[str, ...]      # address/prefix, as `ip addr` shows them

    @property
    def tap(self) -> str:
        return self.port.tap


@dataclass(frozen=True)
class Plan:
    """What one router should be on this host."""

    router_id: str
    netns: str
    legs: tuple[Leg, ...]
    routes: tuple[tuple[int, str, str], ...]    # (ip version, default via, dev)
    nat: str                                    # the whole nft script for the namespace


def _addresses(port: Port, network: Network) -> list[str]:
    subnets = {s.id: s for s in network.subnets}
    return [f"{f.address}/{subnets[f.subnet_id].cidr.prefixlen}" for f in port.fixed_ips
            if f.subnet_id in subnets]


def plan(router: Router, want: Desired, host: str = "") -> Plan | None:
    """The router as it should be here, or None when it should not be here at all."""
    if not router.admin_state_up:
        return None
    ports = [p for p in (router.gateway_port, *router.interfaces) if p is not None]
    if host and any(p.binding_host not in ("", host) for p in ports):
        return None
    legs: list[Leg] = []
    inside_cidrs: list[str] = []
    for port in sorted(router.interfaces, key=lambda p: p.id):
        network = want.networks.get(port.network_id)
        if network is None:
            continue
        legs.append(Leg(port, network, f"qr-{short(port.id)}", tuple(_addresses(port, network))))
        subnets = {s.id: s for s in network.subnets}
        inside_cidrs += [str(subnets[f.subnet_id].cidr) for f in port.fixed_ips
                         if f.subnet_id in subnets and f.address.version == 4]
    gateway = router.gateway_port
    external = want.networks.get(gateway.network_id) if gateway else None
    routes: list[tuple[int, str, str]] = []
    gw_leg = None
    if gateway is not None and external is not None:
        floating = sorted((f for f in want.floating_ips.values()
                           if f.router_id == router.id and f.fixed_ip is not None
                           and f.address.version == 4 and f.fixed_ip.version == 4),
                          key=lambda f: f.address)
        gw_leg = Leg(gateway, external, f"qg-{short(gateway.id)}",
                     tuple(_addresses(gateway, external)) + tuple(f"{f.address}/32" for f in floating))
        legs.append(gw_leg)
        subnets = {s.id: s for s in external.subnets}
        for fixed in gateway.fixed_ips:
            subnet = subnets.get(fixed.subnet_id)
            if subnet is not None and subnet.gateway_ip is not None \
                    and subnet.ip_version not in {v for v, _, _ in routes}:
                routes.append((subnet.ip_version, str(subnet.gateway_ip), gw_leg.inside))
        snat_to = next((str(f.address) for f in gateway.fixed_ips if f.address.version == 4), None)
        qrs = [(leg.inside, [a.split("/")[0] for a in leg.addresses if ":" not in a])
               for leg in legs if leg is not gw_leg]
        nat = render_nat(gw_leg.inside, qrs,
                         [(str(f.address), str(f.fixed_ip)) for f in floating],
                         snat_to if router.enable_snat else None, inside_cidrs)
    else:
        nat = f"table inet {TABLE}\ndelete table inet {TABLE}\n"
    return Plan(router.id, namespace_name(router.id), tuple(legs), tuple(routes), nat)


def render_nat(qg: str, qrs: list[tuple[str, list[str]]], floating: list[tuple[str, str]],
               snat_to: str | None, inside_cidrs: list[str]) -> str:
    """The router's nft table, replaced whole: floating IPs first, then the general SNAT.
    `qrs`: each internal port's device and its IPv4 addresses."""
    pre = [f"        ip daddr {fip} dnat ip to {fixed}\n" for fip, fixed in floating]
    post = [f'        oifname "{qg}" ip saddr {fixed} snat ip to {fip}\n' for fip, fixed in floating]
    if floating:
        post += [f'        iifname "{qr}" oifname "{qr}" ct status dnat masquerade\n' for qr, _ in qrs]
    if snat_to and inside_cidrs:
        post.append(f'        oifname "{qg}" ip saddr {_set(inside_cidrs)} snat ip to {snat_to}\n')
    # A translation lives in conntrack as long as its connection does, whatever the rules
    # say now: a connection through a floating IP since disassociated (or moved to another
    # guest), or SNATed to an address the router no longer uses, is dropped here.
    if floating:
        stale = [f"        ct status dnat ct original ip daddr . ct reply ip saddr != "
                 f"{_set(f'{fip} . {fixed}' for fip, fixed in floating)} drop\n",
                 f"        ct status snat ct reply ip daddr {_set(fip for fip, _ in floating)} "
                 f"ct original ip saddr . ct reply ip daddr != "
                 f"{_set(f'{fixed} . {fip}' for fip, fixed in floating)} drop\n"]
    else:
        stale = ["        ct status dnat drop\n"]
    sources = [fip for fip, _ in floating] + ([snat_to] if snat_to else [])
    sources += [a for _, addresses in qrs for a in addresses] if floating else []
    stale.append(f"        ct status snat ct reply ip daddr != {_set(sources)} drop\n" if sources
                 else "        ct status snat drop\n")
    return (f"table inet {TABLE}\ndelete table inet {TABLE}\n"
            f"table inet {TABLE} {{\n"
            f"    chain forward {{\n"
            f"        type filter hook forward priority filter; policy accept;\n"
            f"{''.join(stale)}"
            f"    }}\n"
            f"    chain prerouting {{\n"
            f"        type nat hook prerouting priority dstnat; policy accept;\n"
            f"{''.join(pre)}"
            f"    }}\n"
            f"    chain postrouting {{\n"
            f"        type nat hook postrouting priority srcnat; policy accept;\n"
            f"{''.join(post)}"
            f"    }}\n}}\n")


# Gratuitous ARP, as Neutron's agent sends with arping: a floating IP that moved to this
# router (or a router made anew) is answered by its MAC at once, not when the neighbours'
# caches expire. Python, because this host has no arping; the frame is built by hand.
_GARP = """
import socket, sys
dev, mac = sys.argv[1], bytes.fromhex(sys.argv[2].replace(":", ""))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((dev, 0x0806))
for address in sys.argv[3:]:
    ip = socket.inet_aton(address)
    s.send(b"\\xff" * 6 + mac + b"\\x08\\x06\\x00\\x01\\x08\\x00\\x06\\x04\\x00\\x01" + mac + ip + bytes(6) + ip)
"""


async def announce(netns: str, dev: str, mac: str, addresses: list[str]) -> None:
    """Tell the network `dev` in `netns` now holds `addresses` (IPv4), at MAC `mac`."""
    done = await linux.run(sys.executable, "-c", _GARP, linux.check_name(dev), mac, *addresses,
                           netns=netns, check=False)
    if done.returncode != 0:
        # The addresses work without it; neighbours learn them when their caches expire.
        log.warning("gratuitous ARP not sent", netns=netns, dev=dev, error=done.output.strip()[-300:])


def _set(items: Iterable[str]) -> str:
    return "{ " + ", ".join(sorted(set(items))) + " }"


class Routers:
    """The data-plane part for routers (see the module doc)."""

    name = "routers"

    def __init__(self, *, made: Made, host: str) -> None:
        self._made = made
        self._host = host
        # Per namespace, what this process already did to it: forwarding switched on, and
        # the nft script last applied (a restart does both once more, which changes nothing).
        self._forwarding: set[str] = set()
        self._applied: dict[str, str] = {}

    async def apply(self, want: Desired) -> None:
        plans = {p.netns: p for p in (plan(r, want, self._host) for r in want.routers.values())
                 if p is not None}
        wanted_legs = {leg.tap: p.netns for p in plans.values() for leg in p.legs}
        for tap, detail in (await self._made.listed(LEG)).items():
            if wanted_legs.get(tap) != detail.get("netns"):
                await self._remove_leg(tap, detail)
        for netns in await self._made.listed(NAMESPACE):
            if netns not in plans:
                await self._remove_router(netns)
        present = await linux.namespaces()
        made = await self._made.listed(NAMESPACE)
        legs = await self._made.listed(LEG)
        # One router failing (a bridge in the way, a refused rule set) leaves the others built.
        failed: list[str] = []
        for p in plans.values():
            try:
                await self._build(p, present, made, legs)
            except linux.HostNetworkError as e:
                log.error("router not built", router_id=p.router_id, error=str(e))
                failed.append(f"router {p.router_id}: {e}")
        if failed:
            raise linux.HostNetworkError("; ".join(failed))

    async def close(self) -> None:
        """Nothing held open: routers keep routing while the process is away; the next
        start's first pass takes them over from Made."""

    async def _build(self, p: Plan, present: set[str], made: dict[str, Any], legs: dict[str, Any]) -> None:
        netns = linux.check_name(p.netns, netns=True)
        if netns not in present:
            await self._made.record(NAMESPACE, netns, {"router_id": p.router_id})
            await linux.ip("netns", "add", netns)
            self._forwarding.discard(netns)
            self._applied.pop(netns, None)
            log.info("router namespace created", router_id=p.router_id, netns=netns)
        elif netns not in made:
            await self._made.record(NAMESPACE, netns, {"router_id": p.router_id})
        if netns not in self._forwarding:
            await linux.ip("-n", netns, "link", "set", "lo", "up")
            await linux.run("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
                            netns=netns)
            self._forwarding.add(netns)
        # The rules before the addresses: a floating IP is translated from the moment the
        # router answers ARP for it (nft names devices, so they need not exist yet).
        if self._applied.get(netns) != p.nat:
            await linux.nft(p.nat, netns=netns)
            self._applied[netns] = p.nat
        inside = await self._inside(netns)
        for leg in p.legs:
            await self._ensure_leg(netns, leg, inside, leg.tap in legs)
        await self._routes(netns, p.routes)

    async def _inside(self, netns: str) -> dict[str, dict[str, Any]]:
        shown = await linux.ip("-j", "-n", netns, "addr", "show")
        return {link["ifname"]: link for link in json.loads(shown.output or "[]")}

    async def _ensure_leg(self, netns: str, leg: Leg, inside: dict[str, dict[str, Any]], recorded: bool) -> None:
        tap, name = linux.check_name(leg.tap), linux.check_name(leg.inside)
        mtu = str(leg.network.mtu)
        await bridging.ensure_bridge(self._made, leg.network)
        if not (bridging.exists(tap) and name in inside):
            # Half a pair (a crash between the two ends' moves, a namespace made anew): start over.
            if bridging.exists(tap):
                await linux.ip("link", "del", "dev", tap, check=False)
            if name in inside:
                await linux.ip("-n", netns, "link", "del", "dev", name, check=False)
            await self._made.record(LEG, tap, {"netns": netns, "inside": name, "network_id": leg.network.id})
            await linux.ip("link", "add", "name", tap, "mtu", mtu, "type", "veth", "peer", "name", name,
                           "mtu", mtu, "address", leg.port.mac_address, "netns", netns)
            log.info("router port plugged", netns=netns, port_id=leg.port.id, inside=name, tap=tap,
                     bridge=leg.network.bridge)
            inside[name] = {"ifname": name, "address": leg.port.mac_address, "mtu": leg.network.mtu,
                            "flags": [], "addr_info": []}
        elif not recorded:
            await self._made.record(LEG, tap, {"netns": netns, "inside": name, "network_id": leg.network.id})
        if bridging.master(tap) != leg.network.bridge:
            await linux.ip("link", "set", "dev", tap, "master", leg.network.bridge)
        if not bridging.is_up(tap):
            await linux.ip("link", "set", "dev", tap, "up")
        link = inside[name]
        if str(link.get("address", "")).lower() != leg.port.mac_address.lower():
            await linux.ip("-n", netns, "link", "set", "dev", name, "address", leg.port.mac_address)
        if link.get("mtu") != leg.network.mtu:
            await linux.ip("-n", netns, "link", "set", "dev", name, "mtu", mtu)
        held = {f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", ())
                if a.get("scope") == "global"}
        for address in sorted(held - set(leg.addresses)):
            await linux.ip("-n", netns, "addr", "del", address, "dev", name)
        added = [a for a in leg.addresses if a not in held]
        for address in added:
            # nodad: the address is the port's, allocated by the database, not contended.
            extra = ("nodad",) if ":" in address else ()
            await linux.ip("-n", netns, "addr", "replace", address, "dev", name, *extra)
        if "UP" not in link.get("flags", ()):
            await linux.ip("-n", netns, "link", "set", "dev", name, "up")
        fresh = [a.split("/")[0] for a in added if ":" not in a]
        if fresh:
            await announce(netns, name, leg.port.mac_address, fresh)

    async def _routes(self, netns: str, routes: tuple[tuple[int, str, str], ...]) -> None:
        for version in (4, 6):
            shown = await linux.ip(f"-{version}", "-j", "-n", netns, "route", "show", "default")
            now = {(r.get("gateway"), r.get("dev")) for r in json.loads(shown.output or "[]")}
            wanted = {(via, dev) for v, via, dev in routes if v == version}
            if now == wanted:
                continue
            if wanted:
                (via, dev), = wanted
                await linux.ip(f"-{version}", "-n", netns, "route", "replace", "default", "via", via, "dev", dev)
            else:
                await linux.ip(f"-{version}", "-n", netns, "route", "del", "default", check=False)

    async def _remove_leg(self, tap: str, detail: dict[str, Any]) -> None:
        """One veth of ours goes (deleting either end deletes the pair)."""
        if bridging.exists(linux.check_name(tap)):
            await linux.ip("link", "del", "dev", tap, check=False)
            if bridging.exists(tap):
                raise linux.HostNetworkError(f"cannot delete router port {tap}")
            log.info("router port unplugged", tap=tap, netns=detail.get("netns"))
        await self._made.forget(LEG, tap)

    async def _remove_router(self, netns: str) -> None:
        for tap, detail in (await self._made.listed(LEG)).items():
            if detail.get("netns") == netns:
                await self._remove_leg(tap, detail)
        linux.check_name(netns, netns=True)
        if netns in await linux.namespaces():
            await linux.ip("netns", "del", netns)
            log.info("router namespace removed", netns=netns)
        self._forwarding.discard(netns)
        self._applied.pop(netns, None)
        await self._made.forget(NAMESPACE, netns)
