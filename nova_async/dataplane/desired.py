"""What the host should have, read from the database in one snapshot: the data plane's
input. Plain frozen values, so each part can be tested by building one by hand."""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address, IPv4Network, IPv6Network

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
