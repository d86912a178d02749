"""What other roles may ask the network service over the bus."""

from __future__ import annotations

from nova_async.bus.messages import Message


class RequestedNetwork(Message, frozen=True, kw_only=True):
    network_id: str | None = None
    port_id: str | None = None
    fixed_ip: str | None = None


class ValidateNetworks(Message, frozen=True, kw_only=True):
    """Raise NotFound/InvalidInput unless every requested network/port is usable by project_id."""

    project_id: str
    requested: list[RequestedNetwork]


class IpInfo(Message, frozen=True, kw_only=True):
    address: str
    version: int
    subnet_id: str
    cidr: str
    gateway: str | None = None


class Vif(Message, frozen=True, kw_only=True):
    """One port as a compute host needs it: addresses, MAC and the host-side names."""

    port_id: str
    network_id: str
    network_name: str
    mac_address: str
    ips: list[IpInfo]
    mtu: int = 1500
    bridge: str = ""
    tap: str = ""


class AllocatePorts(Message, frozen=True, kw_only=True):
    """Create (or adopt) ports for an instance. Idempotent: calling again returns the same ports."""

    instance_uuid: str
    project_id: str
    host: str
    requested: list[RequestedNetwork]


class PortList(Message, frozen=True, kw_only=True):
    vifs: list[Vif]


class DeallocatePorts(Message, frozen=True, kw_only=True):
    """Delete the ports made for an instance. Idempotent."""

    instance_uuid: str


class EnsureDhcpPort(Message, frozen=True, kw_only=True):
    """The DHCP port of data-plane `host` on the network, made, completed or deleted to fit
    the subnets that have DHCP on now. Idempotent. Answer: PortList with that port, or empty
    when the network needs none (or is gone)."""

    network_id: str
    host: str
