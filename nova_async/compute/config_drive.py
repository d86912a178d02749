"""The config drive: an ISO 9660 volume labelled `config-2` that tells a guest who it is.

Guests without a metadata service (ours have none) learn their identity, network and user
data from this drive, laid out the way Nova's `ConfigDriveBuilder` lays it out so cloud-init
and our demo guest's init read it unchanged:

    openstack/latest/meta_data.json      uuid, name, hostname, project, keys, AZ
    openstack/latest/network_data.json   links (NICs by MAC), networks (static IPs), services
    openstack/latest/user_data           the user's data, raw bytes (the API's base64 decoded)

The tree is built by a pure function (`drive_tree`), so what the guest will see is testable
without genisoimage. `write_iso` then writes the files into a private temporary directory
and runs genisoimage with an argv list: the server's name and user data are file contents,
never command-line text, and no shell is involved at any point.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nova_async.common import errors, process
from nova_async.compute.domain_xml import canonical_uuid

LABEL = "config-2"
LATEST = "openstack/latest"
MAX_USER_DATA = 65535      # Nova's limit on decoded user data
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


@dataclass(frozen=True)
class Nic:
    """One port as the guest should configure it (static IPv4, like Nova's network_data)."""
    port_id: str
    mac: str
    ip_address: str
    netmask: str
    network_id: str
    gateway: str = ""
    mtu: int = 1500

    def __post_init__(self) -> None:
        object.__setattr__(self, "mac", str(self.mac).lower())
        if not _MAC.match(self.mac):
            raise errors.InvalidInput(f"MAC address {self.mac!r} is not of the form aa:bb:cc:dd:ee:ff")
        try:
            ip = ipaddress.IPv4Address(self.ip_address)
            net = ipaddress.IPv4Network(f"{ip}/{self.netmask}", strict=False)
            if self.gateway and ipaddress.IPv4Address(self.gateway) not in net:
                raise errors.InvalidInput(f"gateway {self.gateway} is outside {net}")
        except ValueError as exc:
            raise errors.InvalidInput(f"bad IPv4 settings for port {self.port_id}: {exc}") from None
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or not 68 <= self.mtu <= 65535:
            raise errors.InvalidInput(f"MTU {self.mtu!r} is out of range 68..65535")


@dataclass(frozen=True)
class DriveContent:
    uuid: str
    name: str
    project_id: str = ""
    hostname: str = ""
    availability_zone: str = "nova"
    launch_index: int = 0
    user_data: bytes | None = None
    public_keys: dict[str, str] = field(default_factory=dict)
    nics: tuple[Nic, ...] = ()


def hostname_for(name: str) -> str:
    """A DNS label from a display name, the way Nova sanitizes it ("My Server!" → my-server)."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower().replace("_", "-")).strip("-.")
    return label[:63].rstrip("-") or "server"


def meta_data(c: DriveContent) -> dict:
    return {"uuid": canonical_uuid(c.uuid), "name": c.name, "hostname": c.hostname or hostname_for(c.name),
            "launch_index": c.launch_index, "availability_zone": c.availability_zone,
            "project_id": c.project_id, "public_keys": dict(c.public_keys), "meta": {}}


def network_data(nics: tuple[Nic, ...]) -> dict:
    links, networks = [], []
    for i, nic in enumerate(nics):
        link_id = f"tap{nic.port_id[:11]}"
        links.append({"id": link_id, "vif_id": nic.port_id, "type": "phy",
                      "ethernet_mac_address": nic.mac, "mtu": nic.mtu})
        routes = ([{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": nic.gateway}]
                  if nic.gateway else [])
        networks.append({"id": f"network{i}", "type": "ipv4", "link": link_id,
                         "ip_address": nic.ip_address, "netmask": nic.netmask, "routes": routes,
                         "network_id": nic.network_id})
    return {"links": links, "networks": networks, "services": []}


def drive_tree(c: DriveContent) -> dict[str, bytes]:
    """Relative path → file content, exactly what the ISO will hold."""
    if c.user_data is not None and len(c.user_data) > MAX_USER_DATA:
        raise errors.InvalidInput(f"user data is {len(c.user_data)} bytes; at most {MAX_USER_DATA} fit")
    # ensure_ascii keeps the files 7-bit clean; the guest's sed parser then never meets
    # multi-byte sequences, and any quote in a name arrives escaped as \".
    tree = {f"{LATEST}/meta_data.json": json.dumps(meta_data(c)).encode(),
            f"{LATEST}/network_data.json": json.dumps(network_data(c.nics)).encode()}
    if c.user_data is not None:
        tree[f"{LATEST}/user_data"] = bytes(c.user_data)
    return tree


def _genisoimage_argv(source: Path, iso: Path) -> list[str]:
    # Nova's own flags: -r (Rock Ridge with sane owners and modes), -J (Joliet), relaxed
    # ISO 9660 names so "meta_data.json" survives for readers without Rock Ridge.
    return ["genisoimage", "-o", str(iso), "-ldots", "-allow-lowercase", "-allow-multidot", "-l",
            "-publisher", "nova-async", "-quiet", "-J", "-r", "-V", LABEL, str(source)]


async def write_iso(tree: dict[str, bytes], iso: Path, timeout: float = 60) -> Path:
    """Write the tree as a config-2 ISO at `iso` (atomically: a reader never sees half of it)."""
    iso.parent.mkdir(parents=True, exist_ok=True)
    part = iso.with_name(f".{iso.name}.part")
    with tempfile.TemporaryDirectory(prefix="config-drive-") as tmp:
        root = Path(tmp)
        for rel, content in tree.items():
            path = (root / rel).resolve()
            if not path.is_relative_to(root.resolve()):
                raise errors.InvalidInput(f"config drive path {rel!r} leaves the drive")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        done = await process.run(*_genisoimage_argv(root, part), timeout=timeout)
    if done.returncode != 0:
        part.unlink(missing_ok=True)
        raise errors.NovaAsyncError(f"genisoimage failed ({done.returncode}): {done.output.strip()[-400:]}")
    os.replace(part, iso)
    return iso


async def build_config_drive(content: DriveContent, iso: Path) -> Path:
    return await write_iso(drive_tree(content), iso)
