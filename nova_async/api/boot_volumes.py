"""A boot request's block_device_mapping_v2, read and checked as Nova does, and the volumes
it names reserved for the new instance.

What a server boots from is either its image on this host's disk (source image →
destination local, what `openstack server create --image` sends, or only imageRef) or a
volume (destination volume, boot_index 0): an existing volume, or one the compute host makes
at build from an image, a snapshot or nothing (blank). Only an existing volume is touched
here: it must be visible to the project and available, and is reserved (a Cinder attachment
for the new instance) before the instance is written, so that two boots cannot both take
it; `release` gives it back when the request fails before its instance is recorded. The
rows themselves are written with the instance's (server_create.write_rows)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from nova_async.api import schemas
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.volume.client import VolumeClient
from nova_async.volume.messages import AttachmentInfo

BOOT_SEQUENCE = ("Boot sequence for the instance and image/block device mapping combination "
                  "is not valid.")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_INT_MAX = 2**31 - 1
# vdb … vdz, less the flavor's ephemeral and swap disks: every volume gets a one-letter name.
MAX_DEVICES = 22


@dataclass(frozen=True)
class BlockDevice:
    """One mapping of the request, as block_device_mappings keeps it."""

    source_type: str                # image | volume | snapshot | blank
    destination_type: str           # local | volume
    boot_index: int | None
    uuid: str | None                # the image, volume or snapshot
    volume_size: int | None
    device_name: str | None
    disk_bus: str | None
    device_type: str | None
    guest_format: str | None
    volume_type: str | None
    delete_on_termination: bool
    tag: str | None

    @property
    def is_root_volume(self) -> bool:
        return self.boot_index == 0 and self.destination_type == "volume"


def parse(server: dict[str, Any], version) -> list[BlockDevice]:
    """The request's mappings, each checked on its own and the boot order as a whole."""
    raw_devices = server.get("block_device_mapping_v2") or []
    if len(raw_devices) > MAX_DEVICES:
        raise errors.InvalidInput(f"Block Device Mapping is Invalid: at most {MAX_DEVICES} block devices "
                                  "may be given.")
    devices = [_one(raw, version) for raw in raw_devices]
    boot = sorted(d.boot_index for d in devices if d.boot_index is not None and d.boot_index >= 0)
    if server.get("imageRef") and 0 not in boot:
        boot.insert(0, 0)  # the image is the first boot device, as Nova maps it
    if boot != list(range(len(boot))):
        raise errors.InvalidInput(BOOT_SEQUENCE)  # one 0, then 1, 2, … each once, as Nova
    if devices and not boot and not server.get("imageRef"):
        raise errors.InvalidInput(BOOT_SEQUENCE)  # nothing to boot from
    for d in devices:
        # blank → local is the client's way of asking for swap or ephemeral disks (--swap,
        # --ephemeral): kept as asked, while the flavor alone sizes the local disks here.
        if d.destination_type == "local" and not (d.source_type == "image" and d.boot_index == 0) \
                and d.source_type != "blank":
            raise errors.InvalidInput(f"Block Device Mapping is Invalid: a {d.source_type} source with "
                                      "destination local is only supported as the boot image.")
    return devices


def _one(raw: dict[str, Any], version) -> BlockDevice:
    if "tag" in raw and version < (2, 42):
        raise errors.InvalidInput("Invalid input for field/attribute block_device_mapping_v2: "
                                  "'tag' is not allowed before microversion 2.42.")
    if "volume_type" in raw and version < (2, 67):
        raise errors.InvalidInput("Invalid input for field/attribute block_device_mapping_v2: "
                                  "'volume_type' is not allowed before microversion 2.67.")
    source = raw.get("source_type")
    if source is None:
        raise errors.InvalidInput("Block Device Mapping is Invalid: missing source_type field.")
    destination = raw.get("destination_type") or ("local" if source in ("image", "blank") else "volume")
    ref = raw.get("uuid")
    if source in ("image", "volume", "snapshot"):
        if not ref:
            raise errors.InvalidInput("Block Device Mapping is Invalid: Missing device UUID.")
        if parse_uuid(ref) is None:
            raise errors.InvalidInput(f"Block Device Mapping is Invalid: {ref!r} is not a valid UUID.")
        ref = parse_uuid(ref)
    size = _integer(raw.get("volume_size"), "volume_size")
    if size is not None and size < 0:
        raise errors.InvalidInput("Block Device Mapping is Invalid: volume_size must not be negative.")
    if destination == "volume" and not size:
        if source == "image":
            raise errors.InvalidInput("Block Device Mapping is Invalid: Images with destination_type "
                                      "'volume' need to have a non-zero size specified.")
        if source == "blank":
            raise errors.InvalidInput("Block Device Mapping is Invalid: Blank volumes (source: 'blank', "
                                      "dest: 'volume') need to have non-zero size.")
    device_name = raw.get("device_name")
    if device_name is not None and (" " in device_name or len(device_name) > 255):
        raise errors.InvalidInput("Block Device Mapping is Invalid: Device name contains spaces "
                                  "or is too long.")
    dot = raw.get("delete_on_termination", False)
    return BlockDevice(
        source_type=source, destination_type=destination, boot_index=_integer(raw.get("boot_index"), "boot_index"),
        uuid=ref, volume_size=size, device_name=device_name, disk_bus=raw.get("disk_bus"),
        device_type=raw.get("device_type"), guest_format=raw.get("guest_format"),
        volume_type=raw.get("volume_type"), tag=raw.get("tag"),
        delete_on_termination=dot is True or str(dot).lower() in schemas.TRUE_SPELLINGS)


def _integer(value: Any, name: str) -> int | None:
    if value is None or value == "None":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise errors.InvalidInput(f"Block Device Mapping is Invalid: {name} {value!r} is not an integer.") from None
    if not -_INT_MAX <= number <= _INT_MAX:  # the columns are PostgreSQL integers
        raise errors.InvalidInput(f"Block Device Mapping is Invalid: {name} {value!r} is out of range.")
    return number


def root_volume(devices: list[BlockDevice]) -> BlockDevice | None:
    return next((d for d in devices if d.is_root_volume), None)


def boot_image(devices: list[BlockDevice]) -> BlockDevice | None:
    """The image mapping the server boots from (to local disk or to a new volume), if any."""
    return next((d for d in devices if d.boot_index == 0 and d.source_type == "image"), None)


async def check_volumes(volumes: VolumeClient, ctx: RequestContext, devices: list[BlockDevice],
                        max_count: int) -> None:
    """The existing volumes the request names: there, visible to the project, and a boot
    volume bootable. Nova refuses to give one volume to several instances."""
    named = [d for d in devices if d.source_type == "volume"]
    if named and max_count > 1:
        raise errors.InvalidInput("Cannot attach one or more volumes to multiple instances.")
    for d in named:
        assert d.uuid is not None
        try:
            volume = await volumes.get(d.uuid, ctx.project_id, ctx.is_admin)
        except errors.NotFound:
            raise errors.InvalidInput(f"Block Device Mapping is Invalid: failed to get volume {d.uuid}.") from None
        if d.boot_index == 0 and not volume.bootable:
            raise errors.InvalidInput(f"Block Device {d.uuid} is not bootable.")


async def reserve(volumes: VolumeClient, ctx: RequestContext, devices: list[BlockDevice],
                  instance_uuid: str) -> dict[int, AttachmentInfo]:
    """An attachment for the instance on every existing volume it names (by the mapping's
    place in `devices`); all or none: what was reserved is released when one fails. A volume
    not available is a 400, as Nova's InvalidVolume on boot."""
    reserved: dict[int, AttachmentInfo] = {}
    try:
        for i, d in enumerate(devices):
            if d.source_type != "volume":
                continue
            assert d.uuid is not None
            try:
                reserved[i] = await volumes.reserve(d.uuid, instance_uuid, ctx.project_id, ctx.is_admin,
                                                    context=ctx)
            except errors.Conflict as exc:
                raise errors.InvalidInput(f"Invalid volume: {exc.message}") from None
            except errors.NotFound:
                raise errors.InvalidInput(f"Block Device Mapping is Invalid: failed to get volume {d.uuid}.") \
                    from None
    except BaseException:
        await release(volumes, ctx, reserved)
        raise
    return reserved


async def release(volumes: VolumeClient, ctx: RequestContext, reserved: dict[int, AttachmentInfo]) -> None:
    """Give back the attachments `reserve` made (the instance was never recorded)."""
    for attachment in reserved.values():
        await volumes.delete_attachment(attachment.attachment_id, context=ctx)


def rows(devices: list[BlockDevice], instance_uuid: str, reserved: dict[int, AttachmentInfo],
         flavor_ephemeral: int, flavor_swap: int) -> list[tuple[Any, ...]]:
    """The block_devices.insert arguments of one instance. Device names are ours to give, as
    the libvirt driver gives them: the root volume vda, then after the flavor's local disks
    (disks.py: ephemeral vdb, swap next) the other volumes in the order the request lists them."""
    next_letter = 1 + bool(flavor_ephemeral) + bool(flavor_swap)
    out = []
    for i, d in enumerate(devices):
        if d.destination_type == "local":
            device = "/dev/vda" if d.boot_index == 0 else None
        elif d.is_root_volume:
            device = "/dev/vda"
        else:
            device = f"/dev/vd{_LETTERS[next_letter]}"
            next_letter += 1
        attachment = reserved.get(i)
        # a negative boot index is "not bootable", kept as NULL (the mappings list root first)
        boot_index = d.boot_index if d.boot_index is not None and d.boot_index >= 0 else None
        out.append((str(uuid.uuid4()), instance_uuid, d.source_type, d.destination_type, boot_index, device,
                    d.disk_bus, d.device_type or "disk", d.guest_format,
                    d.uuid if d.source_type == "image" else None,
                    d.uuid if d.source_type == "snapshot" else None,
                    d.uuid if d.source_type == "volume" else None,
                    d.volume_size, d.volume_type, d.delete_on_termination, d.tag,
                    attachment.attachment_id if attachment else None))
    return out
