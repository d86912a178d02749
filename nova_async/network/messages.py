"""What other roles may ask the network service over the bus."""

from __future__ import annotations

from typing import Any, ClassVar

from nova_async.bus.messages import Message


class RequestedNetwork(Message, frozen=True, kw_only=True):
    network_id: str | None = None
    port_id: str | None = None
    fixed_ip: str | None = None


class ValidateNetworks(Message, frozen=True, kw_only=True):
    """Raise NotFound/InvalidInput unless every requested network/port is usable by project_id."""

    REDELIVERABLE = True
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
    # the floating IPs associated with the port (an adopted port may come with one), which
    # the server's addresses show; network/instance_addresses.py keeps them current after
    floating_ips: list[str] = []


class AllocatePorts(Message, frozen=True, kw_only=True):
    """Create (or adopt) ports for an instance. Idempotent: calling again returns the same ports.
    Not redeliverable all the same: a copy handled after its caller gave up (and let the ports
    go) would make ports nobody holds."""

    VERSION: ClassVar[str] = "1.1"  # 1.1: security_groups

    instance_uuid: str
    project_id: str
    host: str
    requested: list[RequestedNetwork]
    # ids of the groups the new ports join (resolved when the boot was accepted); None: the
    # project's default group (instances accepted before security groups existed)
    security_groups: list[str] | None = None


class PortList(Message, frozen=True, kw_only=True):
    vifs: list[Vif]


class DeallocatePorts(Message, frozen=True, kw_only=True):
    """Delete the ports made for an instance. Idempotent."""

    REDELIVERABLE = True

    instance_uuid: str


class EnsureDhcpPort(Message, frozen=True, kw_only=True):
    """The DHCP port of data-plane `host` on the network, made, completed or deleted to fit
    the subnets that have DHCP on now. Idempotent. Answer: PortList with that port, or empty
    when the network needs none (or is gone)."""

    REDELIVERABLE = True
    network_id: str
    host: str


class ResolveSecurityGroups(Message, frozen=True, kw_only=True):
    """The ids of the project's groups `names` names (each a name or an id), in order;
    `default` is made if the project has none yet. NotFound names an unknown one."""

    REDELIVERABLE = True
    project_id: str
    names: list[str]


class SecurityGroupIds(Message, frozen=True, kw_only=True):
    ids: list[str]


class InstanceSecurityGroups(Message, frozen=True, kw_only=True):
    """The groups on the ports of each instance (Nova's server `security_groups`)."""

    REDELIVERABLE = True
    instance_uuids: list[str]


class SecurityGroupsByInstance(Message, frozen=True, kw_only=True):
    names: dict[str, list[str]]        # instance uuid -> group names; no key: no group
    ids: dict[str, list[str]]


class ChangeInstanceSecurityGroup(Message, frozen=True, kw_only=True):
    """Nova's addSecurityGroup (add) / removeSecurityGroup: one group (name or id) on all the
    instance's ports."""

    instance_uuid: str
    project_id: str
    group: str
    add: bool


class SecurityGroupRequest(Message, frozen=True, kw_only=True):
    """Nova's os-security-groups proxy API, answered by the Neutron API's own domain code
    with the caller's context: `action` is list | show | create | update | delete for groups,
    create_rule | delete_rule for rules; `body` as Neutron's API takes it."""

    action: str
    id: str | None = None
    ids: list[str] | None = None
    body: dict[str, Any] = {}


class SecurityGroupReply(Message, frozen=True, kw_only=True):
    """Groups (with their rules) or one rule, as Neutron's API shows them."""

    groups: list[dict[str, Any]] = []
    rule: dict[str, Any] | None = None


class NetworkRequest(Message, frozen=True, kw_only=True):
    """Nova's deprecated os-networks and os-tenant-networks proxies: the networks the caller
    (the bus context) may see (`id` empty), or that one."""

    id: str = ""


class NetworkReply(Message, frozen=True, kw_only=True):
    """Networks as Neutron's API shows them to that caller."""

    networks: list[dict[str, Any]] = []


class FloatingIpRequest(Message, frozen=True, kw_only=True):
    """Nova's deprecated os-floating-ips / os-floating-ip-pools proxy and its addFloatingIp /
    removeFloatingIp server actions, answered by the Neutron API's own domain code with the
    caller's context (the bus context). `action`: list | show | create | delete (by `id`),
    pools, associate (`address` to `instance_uuid`, on `fixed_address` or its first IPv4
    address) | disassociate (`address` from `instance_uuid`). `pool` names an external
    network by name or id; empty: the one this service made (settings' external_network)."""

    action: str
    id: str = ""
    pool: str = ""
    address: str = ""
    instance_uuid: str = ""
    fixed_address: str = ""


class FloatingIpInfo(Message, frozen=True, kw_only=True):
    """A floating IP as Nova's proxy shows it."""

    id: str
    address: str
    pool: str                       # its external network's name (its id when it has none)
    fixed_address: str | None = None
    instance_uuid: str | None = None   # the device of the port it is associated with


class FloatingIpReply(Message, frozen=True, kw_only=True):
    floating_ips: list[FloatingIpInfo] = []
    pools: list[str] = []
