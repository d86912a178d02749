"""Volumes and volume snapshots as Nova's deprecated proxy shows them (`/os-volumes`,
`/os-snapshots`, microversions 2.1–2.35; 404 from 2.36 on, as Nova). The volume service
does the work with the caller's context (volume/proxy.py); this module checks what Nova's
schema checks, renames Nova's fields to Cinder's and back, and pages as Nova does
(`offset` and `limit` over the whole list)."""

from __future__ import annotations

from typing import Any

from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.microversion import Version
from nova_async.volume.messages import ProxiedSnapshot, ProxiedVolume

PROXY_MAX = (2, 35)
# Nova's max_limit: no page of a proxied list is longer.
MAX_LIMIT = 1000

_TEXT = {"type": "string"}
_BOOL = {"enum": [True, False, "True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes",
                  "False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no"]}
_TRUE = {True, "true", "1", "on", "yes"}
# Nova's schemas; the metadata's values as Cinder then checks them (strings up to 255).
VOLUME_SCHEMA = {
    "type": "object", "required": ["volume"], "additionalProperties": False,
    "properties": {"volume": {
        "type": "object", "required": ["size"], "additionalProperties": False,
        "properties": {
            "volume_type": _TEXT, "snapshot_id": _TEXT, "availability_zone": _TEXT,
            "display_name": _TEXT, "display_description": _TEXT,
            "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 255},
                         "propertyNames": {"minLength": 1, "maxLength": 255}},
            "size": {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 1}}}}}
SNAPSHOT_SCHEMA = {
    "type": "object", "required": ["snapshot"], "additionalProperties": False,
    "properties": {"snapshot": {
        "type": "object", "required": ["volume_id"], "additionalProperties": False,
        "properties": {"volume_id": _TEXT, "force": _BOOL, "display_name": _TEXT, "display_description": _TEXT}}}}


def check_proxy_version(version: Version) -> None:
    if version > PROXY_MAX:
        raise errors.NotFound("The resource could not be found.")


def page(items: list[Any], offset: int | None, limit: int | None) -> list[Any]:
    """Nova's common.limited: from `offset`, at most `limit` (0 or none: MAX_LIMIT)."""
    start = offset or 0
    return items[start:start + min(MAX_LIMIT, limit or MAX_LIMIT)]


def volume_view(v: ProxiedVolume) -> dict[str, Any]:
    attachments: list[dict[str, Any]] = [{}]   # Nova's "not attached"
    if v.attachments:   # Nova shows the first attachment only
        first = v.attachments[0]
        attachments = [{"id": v.id, "volumeId": v.id, "serverId": first.server_id,
                        **({"device": first.device} if first.device else {})}]
    return {"id": v.id, "status": v.status, "size": v.size, "availabilityZone": v.availability_zone,
            "createdAt": v.created_at, "attachments": attachments, "displayName": v.name,
            "displayDescription": v.description, "volumeType": v.volume_type, "snapshotId": v.snapshot_id,
            "metadata": v.metadata}


def snapshot_view(s: ProxiedSnapshot) -> dict[str, Any]:
    return {"id": s.id, "volumeId": s.volume_id, "status": s.status, "size": s.size, "createdAt": s.created_at,
            "displayName": s.name, "displayDescription": s.description}


async def list_volumes(state: ApiState, ctx: RequestContext) -> list[dict[str, Any]]:
    return [volume_view(v) for v in (await state.volumes.proxy(ctx, "volume", "list")).volumes]


async def show_volume(state: ApiState, ctx: RequestContext, volume_id: str) -> dict[str, Any]:
    [found] = (await state.volumes.proxy(ctx, "volume", "show", id=volume_id)).volumes
    return volume_view(found)


async def create_volume(state: ApiState, ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    size = int(body["size"])
    if size < 1:   # "0" passes Nova's schema (minimum applies to numbers); Cinder refuses it
        raise errors.InvalidInput(f"Invalid input received: Volume size '{size}' must be an integer and greater "
                                  "than 0.")
    req = {"size": size, "name": body.get("display_name"), "description": body.get("display_description"),
           "snapshot_id": body.get("snapshot_id"), "volume_type": body.get("volume_type"),
           "metadata": body.get("metadata") or {}, "availability_zone": body.get("availability_zone")}
    [made] = (await state.volumes.proxy(ctx, "volume", "create", body=req)).volumes
    return volume_view(made)


async def delete_volume(state: ApiState, ctx: RequestContext, volume_id: str) -> None:
    await state.volumes.proxy(ctx, "volume", "delete", id=volume_id)


async def list_snapshots(state: ApiState, ctx: RequestContext) -> list[dict[str, Any]]:
    return [snapshot_view(s) for s in (await state.volumes.proxy(ctx, "snapshot", "list")).snapshots]


async def show_snapshot(state: ApiState, ctx: RequestContext, snapshot_id: str) -> dict[str, Any]:
    [found] = (await state.volumes.proxy(ctx, "snapshot", "show", id=snapshot_id)).snapshots
    return snapshot_view(found)


async def create_snapshot(state: ApiState, ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    force = body.get("force", False)
    req = {"volume_id": body["volume_id"], "name": body.get("display_name"),
           "description": body.get("display_description"),
           "force": (force.lower() if isinstance(force, str) else force) in _TRUE}
    [made] = (await state.volumes.proxy(ctx, "snapshot", "create", body=req)).snapshots
    return snapshot_view(made)


async def delete_snapshot(state: ApiState, ctx: RequestContext, snapshot_id: str) -> None:
    await state.volumes.proxy(ctx, "snapshot", "delete", id=snapshot_id)
