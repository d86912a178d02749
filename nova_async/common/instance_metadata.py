"""What a guest is told about itself: the one source for both ways it can ask.

The config drive (compute/config_drive.py) and the metadata service at 169.254.169.254
(dataplane/metadata_api.py) both describe an instance with an `InstanceFacts` and build their
documents here, so a guest learns the same things whichever it reads. The documents follow
Nova's metadata API (nova/api/metadata/base.py, netutils.get_network_metadata):

    OpenStack  meta_data.json, network_data.json, vendor_data.json, vendor_data2.json and
               user_data, for each dated version cloud-init asks for and `latest`;
    EC2        meta-data (instance-id, local-ipv4, public-keys, placement …) and user-data,
               for EC2's versions 1.0 … 2009-04-04 and `latest`.

Nova takes EC2 ids from integer database ids (`i-%08x`). Our instances and images have only
uuids, so an EC2 id is the uuid's first 32 bits in that same format (`i-` + the uuid's first
eight hex digits): stable across restarts and hosts, and nothing to store. Two instances whose
uuids begin alike would share one, a 1-in-2^32 chance per pair; cloud-init's OpenStack source
identifies the instance by its uuid, not by this.

Everything here is pure: facts in, JSON-ready values out."""

from __future__ import annotations

import ipaddress
import re
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from nova_async.common import errors

_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")

# OpenStack's dated versions (Folsom … Victoria) and EC2's, oldest first; `latest` is the newest.
OPENSTACK_VERSIONS = ("2012-08-10", "2013-04-04", "2013-10-17", "2015-10-15", "2016-06-30",
                      "2016-10-06", "2017-02-22", "2018-08-27", "2020-10-14")
EC2_VERSIONS = ("1.0", "2007-01-19", "2007-03-01", "2007-08-29", "2007-10-10", "2007-12-15",
                "2008-02-01", "2008-09-01", "2009-04-04")
LATEST = "latest"
_LIBERTY, _NEWTON_ONE, _NEWTON_TWO, _HAVANA, _VICTORIA = (
    "2015-10-15", "2016-06-30", "2016-10-06", "2013-10-17", "2020-10-14")


@dataclass(frozen=True)
class Nic:
    """One port as the guest should configure it: DHCP when its subnet serves DHCP, else the
    static IPv4 settings (as the config drive has always described them)."""
    port_id: str
    mac: str
    ip_address: str
    netmask: str
    network_id: str
    gateway: str = ""
    mtu: int = 1500
    dhcp: bool = False
    dns: tuple[str, ...] = ()                     # the subnet's name servers
    routes: tuple[tuple[str, str], ...] = ()      # the subnet's host routes: (cidr, nexthop)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mac", str(self.mac).lower())
        if not _MAC.match(self.mac):
            raise errors.InvalidInput(f"MAC address {self.mac!r} is not of the form aa:bb:cc:dd:ee:ff")
        try:
            ip = ipaddress.IPv4Address(self.ip_address)
            net = ipaddress.IPv4Network(f"{ip}/{self.netmask}", strict=False)
            if self.gateway and ipaddress.IPv4Address(self.gateway) not in net:
                raise errors.InvalidInput(f"gateway {self.gateway} is outside {net}")
            for cidr, nexthop in self.routes:
                ipaddress.IPv4Network(cidr)
                ipaddress.IPv4Address(nexthop)
        except ValueError as exc:
            raise errors.InvalidInput(f"bad IPv4 settings for port {self.port_id}: {exc}") from None
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or not 68 <= self.mtu <= 65535:
            raise errors.InvalidInput(f"MTU {self.mtu!r} is out of range 68..65535")

    @property
    def link_id(self) -> str:
        return f"tap{self.port_id[:11]}"


@dataclass(frozen=True)
class InstanceFacts:
    """An instance as its guest sees it. The fields after `nics` are the metadata service's
    (the config drive leaves them at their defaults)."""
    uuid: str
    name: str
    project_id: str = ""
    hostname: str = ""
    availability_zone: str = "nova"
    launch_index: int = 0
    user_data: bytes | None = None
    public_keys: dict[str, str] = field(default_factory=dict)    # key name → public key
    nics: tuple[Nic, ...] = ()
    meta: dict[str, str] = field(default_factory=dict)           # the server's metadata
    key_type: str = "ssh"
    reservation_id: str = ""
    instance_type: str = ""                                      # the flavor's name
    image_ref: str = ""
    security_groups: tuple[str, ...] = ()                        # names
    floating_ips: tuple[str, ...] = ()


def canonical_uuid(value: str) -> str:
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError:
        raise errors.InvalidInput(f"{value!r} is not a UUID") from None


def hostname_for(name: str) -> str:
    """A DNS label from a display name, the way Nova sanitizes it ("My Server!" → my-server)."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower().replace("_", "-")).strip("-.")
    return label[:63].rstrip("-") or "server"


def hostname(c: InstanceFacts) -> str:
    return c.hostname or hostname_for(c.name)


def ec2_id(prefix: str, value: str) -> str:
    """`i-…`/`ami-…` in Nova's `%08x` shape, from a uuid's first 32 bits (module docstring)."""
    try:
        return f"{prefix}-{uuidlib.UUID(str(value)).hex[:8]}"
    except ValueError:
        return f"{prefix}-00000000"


# --- OpenStack ---------------------------------------------------------------------------

def meta_data(c: InstanceFacts) -> dict[str, Any]:
    """meta_data.json as the config drive has always written it."""
    return {"uuid": canonical_uuid(c.uuid), "name": c.name, "hostname": hostname(c),
            "launch_index": c.launch_index, "availability_zone": c.availability_zone,
            "project_id": c.project_id, "public_keys": dict(c.public_keys), "meta": dict(c.meta)}


def _since(first: str, version: str, versions: tuple[str, ...]) -> bool:
    return version == LATEST or versions.index(version) >= versions.index(first)


def openstack_meta_data(c: InstanceFacts, version: str) -> dict[str, Any]:
    """meta_data.json as the metadata service answers it for `version` (a known one): the
    config drive's document plus `keys` and, from the versions that brought them, Nova's
    `devices` (no tagged devices here: empty) and `dedicated_cpus` (none pinned: empty)."""
    doc = meta_data(c)
    doc["keys"] = [{"name": name, "type": c.key_type, "data": key} for name, key in c.public_keys.items()]
    if not _since(_LIBERTY, version, OPENSTACK_VERSIONS):
        del doc["project_id"]
    if _since(_NEWTON_ONE, version, OPENSTACK_VERSIONS):
        doc["devices"] = []
    if _since(_VICTORIA, version, OPENSTACK_VERSIONS):
        doc["dedicated_cpus"] = []
    return doc


def openstack_files(c: InstanceFacts, version: str) -> list[str]:
    """The files of /openstack/<version>/, in Nova's order."""
    files = ["meta_data.json"]
    if c.user_data is not None:
        files.append("user_data")
    if _since(_HAVANA, version, OPENSTACK_VERSIONS):
        files.append("vendor_data.json")
    if _since(_LIBERTY, version, OPENSTACK_VERSIONS):
        files.append("network_data.json")
    if _since(_NEWTON_TWO, version, OPENSTACK_VERSIONS):
        files.append("vendor_data2.json")
    return files


def network_data(nics: tuple[Nic, ...]) -> dict[str, Any]:
    """network_data.json: links by MAC, one network per NIC (`ipv4_dhcp` when its subnet
    serves DHCP, else static `ipv4` with routes), and the DNS servers as services."""
    links, networks, services = [], [], []
    for i, nic in enumerate(nics):
        links.append({"id": nic.link_id, "vif_id": nic.port_id, "type": "phy",
                      "ethernet_mac_address": nic.mac, "mtu": nic.mtu})
        dns = [{"type": "dns", "address": address} for address in nic.dns]
        services += [s for s in dns if s not in services]
        if nic.dhcp:
            networks.append({"id": f"network{i}", "type": "ipv4_dhcp", "link": nic.link_id,
                             "network_id": nic.network_id})
            continue
        routes = ([{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": nic.gateway}]
                  if nic.gateway else [])
        for cidr, nexthop in nic.routes:
            net = ipaddress.IPv4Network(cidr)
            routes.append({"network": str(net.network_address), "netmask": str(net.netmask),
                           "gateway": nexthop})
        network = {"id": f"network{i}", "type": "ipv4", "link": nic.link_id, "ip_address": nic.ip_address,
                   "netmask": nic.netmask, "routes": routes, "network_id": nic.network_id}
        if dns:
            network["services"] = dns
        networks.append(network)
    return {"links": links, "networks": networks, "services": services}


# --- EC2 ---------------------------------------------------------------------------------

PUBLIC_KEY_NAME = "_name"   # how a public key's directory lists itself: `0=<key name>`


def ec2_meta_data(c: InstanceFacts, version: str, address: str = "") -> dict[str, Any]:
    """The meta-data tree for an EC2 `version` (a known one) asked from `address`: a dict is a
    directory, a list a multi-line value, anything else a file. `public-keys/` lists
    `0=<name>` and holds `0/openssh-key`, as EC2 (and Nova) render it. local-ipv4 is the first
    NIC's address (Nova's choice), else the asking one."""
    name = hostname(c)
    fixed = next((n.ip_address for n in c.nics), address)
    tree: dict[str, Any] = {
        "ami-id": ec2_id("ami", c.image_ref), "ami-launch-index": c.launch_index,
        "hostname": name, "instance-id": ec2_id("i", c.uuid), "local-ipv4": fixed,
        "reservation-id": c.reservation_id, "security-groups": list(c.security_groups)}
    if c.public_keys:
        key_name, key = next(iter(c.public_keys.items()))
        tree["public-keys"] = {"0": {PUBLIC_KEY_NAME: f"0={key_name}", "openssh-key": key}}
    if _since("2007-01-19", version, EC2_VERSIONS):
        tree.update({"local-hostname": name, "public-hostname": name,
                     "public-ipv4": c.floating_ips[0] if c.floating_ips else ""})
    if _since("2007-08-29", version, EC2_VERSIONS):
        tree["instance-type"] = c.instance_type
    if _since("2008-02-01", version, EC2_VERSIONS):
        tree["placement"] = {"availability-zone": c.availability_zone}
    if _since("2008-09-01", version, EC2_VERSIONS):
        tree["instance-action"] = "none"
    return tree
