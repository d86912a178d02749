"""An instance's volumes as the disks of its domain, from its block device mappings.

The mapping of each attached volume keeps the connection compute got for it
(volume/messages.py ConnectionInfo.as_cinder()) and the device name the guest sees, so the
guest can be defined again with the same disks whenever its domain is made anew (build,
rebuild, resize, recovery), without asking the volume service."""

from __future__ import annotations

from typing import Any

from nova_async.compute.domain_xml import Disk
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

BQ = queries("block_devices")


def connector(host_name: str) -> dict[str, Any]:
    """What a compute host tells the volume service about itself when it connects a volume
    (os-brick's connector, in short): the answer is a file or block device on this machine."""
    return {"host": host_name, "platform": "x86_64", "os_type": "linux", "multipath": False,
            "initiator": f"iqn.2004-10.org.openstack.nova-async:{host_name}"}


def target_of(device_name: str | None) -> str:
    """The domain's target for a device name: "/dev/vdb" → "vdb"."""
    return (device_name or "").rsplit("/", 1)[-1]


def disk_of(connection_info: dict[str, Any], device_name: str | None) -> Disk:
    """The domain disk a volume's connection gives, on the guest's device `device_name`."""
    data = connection_info.get("data") or {}
    return Disk(path=data["device_path"], target=target_of(device_name), format=data.get("format", "raw"),
                kind=data.get("disk_kind", "file"), serial=str(data.get("volume_id") or connection_info["serial"]))


async def volume_disks(pool: Pool, instance_uuid: str) -> list[Disk]:
    """The disks of the volumes the instance has connected, root volume first (boot_index 0)."""
    rows = await pool.fetch(BQ.of_instance, instance_uuid)
    return [disk_of(row["connection_info"], row["device_name"]) for row in rows
            if row["destination_type"] == "volume" and row["connection_info"]]
