"""External and provider networks on this host: their bridges, the NICs plugged into them,
and — on a lab box — the host as the external network's gateway.

Three ways out, from settings (`[network]`):
- `external_host_gateway` (a lab box): the external network's bridge has no NIC; the host
  holds each external subnet's gateway address on it and masquerades the range out of its
  other interfaces, in an nft table of its own (`<dataplane_table>_nat`, never the host's
  tables), with host forwarding on (`net.ipv4.ip_forward=1`, logged: it is the host's).
- `external_interface` (an edge site's LAN): that NIC is plugged into the external
  network's bridge (physical network `external`, as the network API makes it); the gateway is another machine on the LAN, so the host holds no address
  there, whatever `external_host_gateway` says (two gateways on one LAN would fight over
  the address).
- `physical_networks` PHYSNET:NIC: a flat network on PHYSNET gets NIC in its bridge.

A NIC is only ever plugged in and unplugged, never deleted, and only when Made lists the
plug as ours; a NIC that holds addresses or is already in another bridge or bond is
refused (plugging it would cut the host off from it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from ipaddress import IPv4Network, ip_interface, ip_network
from pathlib import Path

import structlog

from nova_async.common import errors
from nova_async.config import NetworkSettings
from nova_async.dataplane import bridging, linux
from nova_async.dataplane.desired import Desired, Network
from nova_async.dataplane.made import Made

log = structlog.get_logger("dataplane.external")

# Made kinds
NIC = "external-nic"                # a NIC we plugged into a bridge; detail {"bridge"}
HOST_ADDRESS = "external-address"   # "<bridge> <address>/<prefix>"; detail {"bridge", "address"}
NAT_TABLE = "external-nat-table"    # "inet <table>"
IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
EXTERNAL_PHYSNET = "external"   # as the network API names it (network/providers.py)
_TABLE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,27}")


def nat_table(dataplane_table: str) -> str:
    if not _TABLE.fullmatch(dataplane_table):
        raise errors.InvalidInput(f"[network] dataplane_table {dataplane_table!r} is not a usable nft table "
                                  "name (a letter, then letters, digits or _)")
    return f"{dataplane_table}_nat"


def physical_networks(pairs: tuple[str, ...], external_interface: str = "") -> dict[str, str]:
    """`physnet1:eth1` pairs as physnet → NIC; `external_interface` is physical network
    `external`'s NIC (the network API makes the external network flat on it then)."""
    mapped: dict[str, str] = {}
    for pair in pairs:
        physnet, sep, nic = pair.partition(":")
        if not sep or not physnet or physnet in mapped:
            raise errors.InvalidInput(f"[network] physical_networks: {pair!r} is not a new PHYSNET:NIC pair")
        mapped[physnet] = linux.check_name(nic)
    if external_interface:
        mapped.setdefault(EXTERNAL_PHYSNET, linux.check_name(external_interface))
    return mapped


@dataclass(frozen=True)
class Layout:
    """What this part wants on the host for one Desired."""

    bridges: dict[str, Network]            # bridge → its network
    plugs: dict[str, str]                  # NIC → bridge
    addresses: dict[str, tuple[str, str]]  # Made name → (bridge, address/prefix)
    masquerade: tuple[tuple[IPv4Network, str], ...]   # (external range, its bridge)


def layout(want: Desired, settings: NetworkSettings, physnets: dict[str, str]) -> Layout:
    flat = {n.id: n for n in want.networks.values()
            if n.network_type == "flat" and n.physical_network in physnets}
    external = {n.id: n for n in want.networks.values() if n.external}
    plugs: dict[str, str] = {}
    for net in sorted(flat.values(), key=lambda n: n.id):
        nic = physnets[net.physical_network]
        if nic in plugs:
            log.warning("physical network already has a flat network on this host; one NIC "
                        "cannot be in two bridges", network_id=net.id, physical_network=net.physical_network)
            continue
        plugs[nic] = net.bridge
    # An external network made before external_interface was set stays `local` in the
    # database; the setting still says where its NIC goes.
    if settings.external_interface and external and settings.external_interface not in plugs:
        net = _the_external_network(external, settings.external_cidr)
        plugs[linux.check_name(settings.external_interface)] = net.bridge
    plugged = set(plugs.values())
    addresses: dict[str, tuple[str, str]] = {}
    masquerade = []
    if settings.external_host_gateway:
        for net in sorted(external.values(), key=lambda n: n.id):
            if net.bridge in plugged:
                continue
            for subnet in net.subnets:
                if subnet.ip_version != 4 or subnet.gateway_ip is None:
                    continue
                address = f"{subnet.gateway_ip}/{subnet.cidr.prefixlen}"
                addresses[f"{net.bridge} {address}"] = (net.bridge, address)
                masquerade.append((subnet.cidr, net.bridge))
    return Layout(bridges={n.bridge: n for n in (*flat.values(), *external.values())},
                  plugs=plugs, addresses=addresses, masquerade=tuple(masquerade))


def _the_external_network(external: dict[str, Network], cidr: str) -> Network:
    """Where `external_interface` goes: the external network made from settings (its subnet
    is `external_cidr`), else the only external network, else the first by id."""
    try:
        configured = ip_network(cidr, strict=False)
    except ValueError:
        configured = None
    by_cidr = [n for n in external.values() if any(s.cidr == configured for s in n.subnets)]
    candidates = sorted(by_cidr or external.values(), key=lambda n: n.id)
    if len(candidates) > 1:
        log.warning("several external networks; external_interface goes to the first",
                    network_id=candidates[0].id)
    return candidates[0]


def render_nat(table: str, masquerade: tuple[tuple[IPv4Network, str], ...]) -> str:
    """The host table that lets the external ranges out through the host (replaced whole)."""
    # Only what the host routes out of the external bridge: with br_netfilter, traffic
    # bridged on any other bridge (a router's DNATed packet on its way to a guest, say) passes
    # this hook too, with that bridge as both iifname and oifname, and must keep its source.
    bridges = ", ".join(sorted({f'"{b}"' for _, b in masquerade}))
    rules = "".join(f'        iifname "{bridge}" ip saddr {cidr} oifname != {{ {bridges} }} masquerade\n'
                    for cidr, bridge in masquerade)
    return (f"table inet {table}\ndelete table inet {table}\n"
            f"table inet {table} {{\n"
            f"    chain postrouting {{\n"
            f"        type nat hook postrouting priority srcnat; policy accept;\n"
            f"{rules}"
            f"    }}\n}}\n")


class ExternalNetworks:
    """The data-plane part for external and flat provider networks (see the module doc)."""

    name = "external"

    def __init__(self, *, made: Made, settings: NetworkSettings) -> None:
        self._made = made
        self._settings = settings
        self._table = nat_table(settings.dataplane_table)
        self._physnets = physical_networks(settings.physical_networks, settings.external_interface)
        self._applied_nat: str | None = None

    async def apply(self, want: Desired) -> None:
        plan = layout(want, self._settings, self._physnets)
        problems: list[str] = []
        await self._remove_unwanted(want, plan)
        for network in plan.bridges.values():
            await bridging.ensure_bridge(self._made, network)
        for nic, bridge in sorted(plan.plugs.items()):
            problem = await self._plug(nic, bridge)
            if problem:
                problems.append(problem)
        for name, (bridge, address) in plan.addresses.items():
            await self._hold(name, bridge, address)
        if plan.masquerade:
            await self._nat(plan)
        if problems:
            raise linux.HostNetworkError("; ".join(problems))

    async def close(self) -> None:
        """Nothing held open: the bridges stay up while the process is away (guests keep
        their network); the next start's first pass takes them over from Made."""

    async def _remove_unwanted(self, want: Desired, plan: Layout) -> None:
        for nic, detail in (await self._made.listed(NIC)).items():
            if plan.plugs.get(nic) != detail.get("bridge"):
                await self._unplug(nic, detail.get("bridge", ""))
        for name, detail in (await self._made.listed(HOST_ADDRESS)).items():
            if name not in plan.addresses:
                bridge = detail["bridge"]
                if bridging.is_bridge(bridge):
                    await linux.ip("addr", "del", detail["address"], "dev", linux.check_name(bridge), check=False)
                await self._made.forget(HOST_ADDRESS, name)
                log.info("host no longer the gateway of an external network", bridge=bridge,
                         address=detail["address"])
        table_name = f"inet {self._table}"
        if not plan.masquerade and table_name in await self._made.listed(NAT_TABLE):
            await linux.nft(f"table inet {self._table}\ndelete table inet {self._table}\n")
            await self._made.forget(NAT_TABLE, table_name)
            self._applied_nat = None
        wanted_nets = set(want.networks)
        ours = set((await self._made.listed(NIC)))
        for bridge, detail in (await self._made.listed(bridging.BRIDGE)).items():
            if detail.get("network_id") not in wanted_nets:
                await bridging.remove_bridge(self._made, bridge, ours)

    async def _plug(self, nic: str, bridge: str) -> str | None:
        """Plug NIC into bridge; a refusal is returned as a sentence (the rest goes on)."""
        linux.check_name(nic)
        now = bridging.master(nic)
        if now == bridge:
            if not bridging.is_up(nic):
                await linux.ip("link", "set", "dev", nic, "up")
            return None
        if not bridging.exists(nic):
            return f"NIC {nic} for bridge {bridge} does not exist on this host"
        if now is not None:
            return f"NIC {nic} is already in {now}; not moving it into {bridge}"
        shown = await linux.ip("-j", "addr", "show", "dev", nic)
        held = [a["local"] for link in json.loads(shown.output or "[]") for a in link.get("addr_info", ())
                if a.get("scope") == "global"]
        if held:
            return (f"NIC {nic} holds addresses {', '.join(held)}: plugging it into {bridge} would cut the "
                    "host off them; give the network a NIC of its own")
        await self._made.record(NIC, nic, {"bridge": bridge})
        await linux.ip("link", "set", "dev", nic, "master", bridge)
        await linux.ip("link", "set", "dev", nic, "up")
        log.info("NIC plugged into a network's bridge", nic=nic, bridge=bridge)
        return None

    async def _unplug(self, nic: str, bridge: str) -> None:
        # Only out of the bridge we put it in: if someone moved it since, it is theirs now.
        if bridging.master(nic) == bridge:
            await linux.ip("link", "set", "dev", linux.check_name(nic), "nomaster")
            log.info("NIC unplugged from a network's bridge", nic=nic, bridge=bridge)
        await self._made.forget(NIC, nic)

    async def _hold(self, name: str, bridge: str, address: str) -> None:
        shown = await linux.ip("-j", "addr", "show", "dev", bridge)
        held = {f"{a['local']}/{a['prefixlen']}" for link in json.loads(shown.output or "[]")
                for a in link.get("addr_info", ())}
        if str(ip_interface(address)) in held:
            return
        await self._made.record(HOST_ADDRESS, name, {"bridge": bridge, "address": address})
        await linux.ip("addr", "replace", address, "dev", bridge)
        log.info("host is the external network's gateway", bridge=bridge, address=address)

    async def _nat(self, plan: Layout) -> None:
        script = render_nat(self._table, plan.masquerade)
        if script != self._applied_nat:
            await self._made.record(NAT_TABLE, f"inet {self._table}", {})
            await linux.nft(script)
            self._applied_nat = script
            log.info("external ranges masqueraded out of the host's other interfaces",
                     table=f"inet {self._table}", ranges=[str(c) for c, _ in plan.masquerade])
        if IP_FORWARD.read_text().strip() != "1":
            IP_FORWARD.write_text("1\n")
            log.warning("host forwarding turned on (net.ipv4.ip_forward=1) so the external network's "
                        "guests can reach past the host; it stays on")
