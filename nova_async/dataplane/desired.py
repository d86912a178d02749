"""What the host should have, read from the database in one snapshot: the data plane's
input. Plain frozen values, so each part can be tested by building one by hand.

`read` takes them in one REPEATABLE READ snapshot (sql/queries/dataplane.sql): a port never
appears without its network, nor an address without its subnet, however the API changes
things meanwhile."""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, IPv4Network, IPv6Network
from typing import Any

from nova_async.db.pool import Pool
from nova_async.db.queries import queries

IpAddress = IPv4Address | IPv6Address
IpNetwork = IPv4Network | IPv6Network

DHCP_OWNER = "network:dhcp"
ROUTER_INTERFACE_OWNER = "network:router_interface"
ROUTER_GATEWAY_OWNER = "network:router_gateway"
FLOATINGIP_OWNER = "network:floatingip"


def short(uuid: str) -> str:
    """The 11 characters of an id that name its devices (as Neutron's agents do)."""
    return uuid[:11]


def bridge_name(network_id: str) -> str:
    return f"brq{short(network_id)}"


def tap_name(port_id: str) -> str:
    """A port's device on the host side: a guest's tap (made by libvirt), or the host end
    of the veth that plugs a namespace (DHCP, router) into the network's bridge."""
    return f"tap{short(port_id)}"


@dataclass(frozen=True)
class Subnet:
    id: str
    network_id: str
    cidr: IpNetwork
    ip_version: int
    gateway_ip: IpAddress | None
    enable_dhcp: bool
    dns_nameservers: tuple[str, ...] = ()
    host_routes: tuple[tuple[str, str], ...] = ()   # (destination cidr, nexthop)


@dataclass(frozen=True)
class Network:
    id: str
    mtu: int
    external: bool
    network_type: str = "local"            # local | flat
    physical_network: str | None = None    # flat: the physnet, mapped to a NIC by settings
    subnets: tuple[Subnet, ...] = ()

    @property
    def bridge(self) -> str:
        return bridge_name(self.id)


@dataclass(frozen=True)
class FixedIp:
    subnet_id: str
    address: IpAddress


@dataclass(frozen=True)
class Port:
    id: str
    network_id: str
    mac_address: str
    device_owner: str
    device_id: str
    fixed_ips: tuple[FixedIp, ...]
    security_group_ids: tuple[str, ...] = ()
    port_security_enabled: bool = True
    allowed_address_pairs: tuple[tuple[str, str | None], ...] = ()   # (ip or cidr, mac or None)
    binding_host: str = ""

    @property
    def tap(self) -> str:
        return tap_name(self.id)


@dataclass(frozen=True)
class Rule:
    id: str
    direction: str                  # ingress | egress
    ethertype: str                  # IPv4 | IPv6
    protocol: str | None = None     # None: any; a name or a number, as the API stored it
    port_range_min: int | None = None
    port_range_max: int | None = None
    remote_ip_prefix: IpNetwork | None = None
    remote_group_id: str | None = None


@dataclass(frozen=True)
class SecurityGroup:
    id: str
    stateful: bool = True
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class Router:
    id: str
    admin_state_up: bool = True
    enable_snat: bool = True
    gateway_port: Port | None = None          # on the external network
    interfaces: tuple[Port, ...] = ()         # one per attached subnet


@dataclass(frozen=True)
class FloatingIp:
    id: str
    address: IpAddress
    network_id: str                 # the external network
    router_id: str | None = None    # set when associated
    fixed_ip: IpAddress | None = None
    port_id: str | None = None


@dataclass(frozen=True)
class Desired:
    networks: dict[str, Network] = field(default_factory=dict)
    ports: dict[str, Port] = field(default_factory=dict)
    security_groups: dict[str, SecurityGroup] = field(default_factory=dict)
    routers: dict[str, Router] = field(default_factory=dict)
    floating_ips: dict[str, FloatingIp] = field(default_factory=dict)

    def ports_on(self, network_id: str, owner: str | None = None) -> list[Port]:
        return [p for p in self.ports.values()
                if p.network_id == network_id and (owner is None or p.device_owner == owner)]


Q = queries("dataplane")


def _address(value: Any) -> IpAddress:
    """An inet as an address, whether asyncpg gave an address or an interface (with a mask)."""
    if isinstance(value, (ipaddress.IPv4Interface, ipaddress.IPv6Interface)):
        return value.ip
    return ipaddress.ip_address(value)


def _maybe(value: Any) -> IpAddress | None:
    return None if value is None else _address(value)


async def read(pool: Pool) -> Desired:
    """Everything the host should have, as one consistent snapshot of the database."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        nets = await conn.fetch(Q.desired_networks)
        subnet_rows = await conn.fetch(Q.desired_subnets)
        port_rows = await conn.fetch(Q.desired_ports)
        ip_rows = await conn.fetch(Q.desired_fixed_ips)
        group_rows = await conn.fetch(Q.desired_port_groups)
        sg_rows = await conn.fetch(Q.desired_security_groups)
        rule_rows = await conn.fetch(Q.desired_rules)
        router_rows = await conn.fetch(Q.desired_routers)
        fip_rows = await conn.fetch(Q.desired_floating_ips)

    subnets: dict[str, list[Subnet]] = defaultdict(list)
    for r in subnet_rows:
        subnets[str(r["network_id"])].append(Subnet(
            id=str(r["id"]), network_id=str(r["network_id"]), cidr=ipaddress.ip_network(r["cidr"]),
            ip_version=r["ip_version"], gateway_ip=_maybe(r["gateway_ip"]), enable_dhcp=r["enable_dhcp"],
            dns_nameservers=tuple(str(d) for d in r["dns_nameservers"] or ()),
            host_routes=tuple((str(h["destination"]), str(h["nexthop"])) for h in r["host_routes"] or ())))
    networks = {str(r["id"]): Network(
        id=str(r["id"]), mtu=r["mtu"], external=r["external"], network_type=r["provider_network_type"],
        physical_network=r["provider_physical_network"], subnets=tuple(subnets.get(str(r["id"]), ())))
        for r in nets}

    ips: dict[str, list[FixedIp]] = defaultdict(list)
    for r in ip_rows:
        ips[str(r["port_id"])].append(FixedIp(subnet_id=str(r["subnet_id"]), address=_address(r["ip_address"])))
    groups: dict[str, list[str]] = defaultdict(list)
    for r in group_rows:
        groups[str(r["port_id"])].append(str(r["security_group_id"]))
    ports = {}
    for r in port_rows:
        port_id = str(r["id"])
        pairs = tuple((str(p["ip_address"]), p.get("mac_address") or None)
                      for p in r["allowed_address_pairs"] or ())
        ports[port_id] = Port(
            id=port_id, network_id=str(r["network_id"]), mac_address=str(r["mac_address"]).lower(),
            device_owner=r["device_owner"], device_id=r["device_id"], fixed_ips=tuple(ips.get(port_id, ())),
            security_group_ids=tuple(groups.get(port_id, ())), port_security_enabled=r["port_security_enabled"],
            allowed_address_pairs=pairs, binding_host=r["binding_host"])

    rules: dict[str, list[Rule]] = defaultdict(list)
    for r in rule_rows:
        rules[str(r["security_group_id"])].append(Rule(
            id=str(r["id"]), direction=r["direction"], ethertype=r["ethertype"], protocol=r["protocol"],
            port_range_min=r["port_range_min"], port_range_max=r["port_range_max"],
            remote_ip_prefix=(None if r["remote_ip_prefix"] is None
                              else ipaddress.ip_interface(str(r["remote_ip_prefix"])).network),
            remote_group_id=None if r["remote_group_id"] is None else str(r["remote_group_id"])))
    security_groups = {str(r["id"]): SecurityGroup(id=str(r["id"]), stateful=r["stateful"],
                                                   rules=tuple(rules.get(str(r["id"]), ())))
                       for r in sg_rows}

    interfaces: dict[str, list[Port]] = defaultdict(list)
    for p in ports.values():
        if p.device_owner == ROUTER_INTERFACE_OWNER:
            interfaces[p.device_id].append(p)
    routers = {str(r["id"]): Router(
        id=str(r["id"]), admin_state_up=r["admin_state_up"], enable_snat=r["enable_snat"],
        gateway_port=None if r["gateway_port_id"] is None else ports.get(str(r["gateway_port_id"])),
        interfaces=tuple(interfaces.get(str(r["id"]), ())))
        for r in router_rows}

    floating_ips = {str(r["id"]): FloatingIp(
        id=str(r["id"]), address=_address(r["floating_ip_address"]), network_id=str(r["floating_network_id"]),
        router_id=None if r["router_id"] is None else str(r["router_id"]),
        fixed_ip=_maybe(r["fixed_ip_address"]), port_id=None if r["port_id"] is None else str(r["port_id"]))
        for r in fip_rows}
    return Desired(networks=networks, ports=ports, security_groups=security_groups, routers=routers,
                   floating_ips=floating_ips)
