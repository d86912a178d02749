"""createImage of a volume-backed server, as Nova does it: no disk is copied. Each of the
server's volumes is snapshotted (even in use, Cinder's force), and an image with no data is
made whose `block_device_mapping` property names those snapshots in place of the volumes
(with `bdm_v2` and `root_device_name`), so that a boot from that image can make new volumes
from them. The snapshots are made by the volume service in the background; the image is
active at once, with size 0."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from nova_async.api.state import ApiState
from nova_async.common.context import RequestContext
from nova_async.db.queries import queries
from nova_async.image.messages import CreateImage
from nova_async.volume.messages import SnapshotVolume

BQ = queries("block_devices")
ROOT_DEVICE_NAME = "/dev/vda"
# What a volume keeps of its image (volume_image_metadata) that is the image's own, not a
# property a new image inherits.
_IMAGE_CORE = ("image_id", "image_name", "checksum", "size", "min_ram", "min_disk", "disk_format",
               "container_format")


def _mapping(bdm: asyncpg.Record, snapshot_id: str | None) -> dict[str, Any]:
    """One entry of the image's block_device_mapping: the server's device, its volume
    replaced by the snapshot (Nova's snapshot_from_bdm, then get_image_mapping)."""
    out = {"boot_index": bdm["boot_index"], "device_name": bdm["device_name"], "disk_bus": bdm["disk_bus"],
           "device_type": bdm["device_type"], "guest_format": bdm["guest_format"],
           "delete_on_termination": bdm["delete_on_termination"], "volume_size": bdm["volume_size"],
           "volume_type": bdm["volume_type"], "tag": bdm["tag"], "no_device": None,
           "destination_type": bdm["destination_type"], "source_type": bdm["source_type"],
           "image_id": str(bdm["image_id"]) if bdm["image_id"] else None, "snapshot_id": None, "volume_id": None}
    if snapshot_id is not None:
        out.update(source_type="snapshot", destination_type="volume", snapshot_id=snapshot_id, image_id=None)
    return out


async def create(state: ApiState, ctx: RequestContext, db: Any, row: asyncpg.Record, name: str,
                 properties: dict[str, str], kind: dict[str, str]) -> str:
    """The image's id. `properties`: the caller's metadata, over what the root volume's
    image had and over `kind` (image_type and the like), as Nova lets it."""
    inherited: dict[str, str] = {}
    disk_format, container_format, min_ram, min_disk = "raw", "bare", 0, 0
    mappings = []
    for bdm in await db.fetch(BQ.of_instance, row["uuid"]):
        if bdm["destination_type"] != "volume" or not bdm["volume_id"]:
            mappings.append(_mapping(bdm, None))
            continue
        volume_id = str(bdm["volume_id"])
        if bdm["boot_index"] == 0:
            meta = (await state.volumes.get(volume_id, row["project_id"], is_admin=True)).image_metadata
            inherited = {k: v for k, v in meta.items() if k not in _IMAGE_CORE}
            disk_format = meta.get("disk_format") or disk_format
            container_format = meta.get("container_format") or container_format
            min_ram, min_disk = int(meta.get("min_ram") or 0), int(meta.get("min_disk") or 0)
        snapshot = await state.volumes.snapshot(SnapshotVolume(
            volume_id=volume_id, project_id=row["project_id"], user_id=ctx.user_id,
            name=f"snapshot for {name}"), ctx)
        mappings.append(_mapping(bdm, snapshot.id))
    image = await state.images.create(CreateImage(
        name=name, project_id=row["project_id"], disk_format=disk_format, container_format=container_format,
        min_ram=min_ram, min_disk=min_disk,
        properties={**inherited, **kind, **properties, "block_device_mapping": json.dumps(mappings),
                    "bdm_v2": "True", "root_device_name": ROOT_DEVICE_NAME}))
    await state.images.upload_no_data(image.id)
    return image.id
