"""Volumes, snapshots and the volume type as Cinder's v3 API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from nova_async.common.context import RequestContext
from nova_async.volume.volumes import DEFAULT_TYPE, DEFAULT_TYPE_ID

def ts(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def links(base: str, kind: str, project_id: str, item_id: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/volume/v3/{project_id}/{kind}/{item_id}"},
            {"rel": "bookmark", "href": f"{base}/volume/{project_id}/{kind}/{item_id}"}]


def volume_summary(base: str, row: asyncpg.Record) -> dict[str, Any]:
    return {"id": str(row["id"]), "name": row["name"], "links": links(base, "volumes", row["project_id"],
                                                                      str(row["id"]))}


def attachment(a: asyncpg.Record) -> dict[str, Any]:
    return {"id": str(a["volume_id"]), "attachment_id": str(a["id"]), "volume_id": str(a["volume_id"]),
            "server_id": str(a["instance_uuid"]), "host_name": a["attached_host"], "device": a["mountpoint"],
            "attached_at": ts(a["attached_at"])}


# Microversions that add a field to a volume's body (Cinder's view builder); the newer ones
# (shared_targets/service_uuid 3.48, cluster_name 3.61, volume_type_id 3.63, consumes_quota
# 3.65) are past this API's maximum, so they are never shown.
GROUP_ID_VERSION = (3, 13)
PROVIDER_ID_VERSION = (3, 21)


def volume(base: str, ctx: RequestContext, host: str, row: asyncpg.Record,
           attached: list[asyncpg.Record], version: tuple[int, int], *, extended: bool) -> dict[str, Any]:
    """A volume as Cinder shows it at `version`. `extended`: show and the detailed list, where
    Cinder's extensions add the owner, the image's metadata and (for admins) the host and
    migration fields; create and update answer without them."""
    view = {
        "id": str(row["id"]), "name": row["name"], "description": row["description"], "status": row["status"],
        "size": row["size"], "availability_zone": row["availability_zone"],
        "created_at": ts(row["created_at"]), "updated_at": ts(row["updated_at"]),
        "attachments": [attachment(a) for a in attached if a["status"] in ("attached", "detaching")],
        "bootable": "true" if row["bootable"] else "false", "encrypted": False,
        "multiattach": row["multiattach"], "volume_type": DEFAULT_TYPE,
        "snapshot_id": str(row["snapshot_id"]) if row["snapshot_id"] else None,
        "source_volid": str(row["source_volid"]) if row["source_volid"] else None,
        "metadata": dict(row["metadata"]), "user_id": row["user_id"],
        "links": links(base, "volumes", row["project_id"], str(row["id"])),
        "consistencygroup_id": None, "replication_status": "disabled", "migration_status": None,
    }
    if version >= GROUP_ID_VERSION:
        view["group_id"] = None
    if version >= PROVIDER_ID_VERSION and ctx.is_admin:
        view["provider_id"] = None
    if not extended:
        return view
    view["os-vol-tenant-attr:tenant_id"] = row["project_id"]
    if row["image_id"] or row["image_metadata"]:
        view["volume_image_metadata"] = dict(row["image_metadata"])
    if ctx.is_admin:
        view["os-vol-host-attr:host"] = host
        view["os-vol-mig-status-attr:migstat"] = None
        view["os-vol-mig-status-attr:name_id"] = None
    return view


# Microversions that add a field to a snapshot's body (Cinder's v3 view builder; the
# consumes_quota of 3.65 is past this API's maximum).
GROUP_SNAPSHOT_VERSION = (3, 14)
SNAPSHOT_USER_ID_VERSION = (3, 41)


def snapshot(row: asyncpg.Record, version: tuple[int, int], *, extended: bool) -> dict[str, Any]:
    """A snapshot as Cinder shows it at `version` in a create, update or detailed answer.
    `extended`: show and the detailed list, where Cinder's extension adds the owner and
    the progress."""
    view = snapshot_summary(row)
    if version >= GROUP_SNAPSHOT_VERSION:
        view["group_snapshot_id"] = None
    if version >= SNAPSHOT_USER_ID_VERSION:
        view["user_id"] = row["user_id"]
    if extended:
        view["os-extended-snapshot-attributes:project_id"] = row["project_id"]
        view["os-extended-snapshot-attributes:progress"] = "100%" if row["status"] == "available" else "0%"
    return view


def snapshot_summary(row: asyncpg.Record) -> dict[str, Any]:
    """A snapshot in the plain list, and the base of every other view."""
    return {"id": str(row["id"]), "name": row["name"], "description": row["description"],
            "volume_id": str(row["volume_id"]), "status": row["status"], "size": row["size"],
            "created_at": ts(row["created_at"]), "updated_at": ts(row["updated_at"]),
            "metadata": dict(row["metadata"])}


def volume_type() -> dict[str, Any]:
    return {"id": DEFAULT_TYPE_ID, "name": DEFAULT_TYPE, "description": "Default Volume Type",
            "is_public": True, "os-volume-type-access:is_public": True, "extra_specs": {},
            "qos_specs_id": None}
