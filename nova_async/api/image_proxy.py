"""The compute API's images (`/images`, microversions 2.1–2.35): the image service's images
as Nova showed them before clients were sent to Glance itself. Every call goes to the image
role over the bus as the caller, so what a project may see, change or delete is the image
service's rule; this module maps filters, statuses and metadata to and from its terms."""

from __future__ import annotations

from typing import Any

from nova_async.api import quotas
from nova_async.api.links import links
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.image import messages as im

LAST_VERSION = (2, 35)   # from 2.36 the proxy answers 404, as Nova's

# Image service status -> the compute API's (any other, deactivated say, is UNKNOWN, as
# Nova's), and how far along Nova says it is.
STATUS = {"active": "ACTIVE", "queued": "SAVING", "saving": "SAVING", "uploading": "SAVING",
          "importing": "SAVING", "deleted": "DELETED", "pending_delete": "DELETED", "killed": "ERROR"}
PROGRESS = {"ACTIVE": 100, "SAVING": 25}
# The compute API's status filter -> the image service's statuses.
STATUS_FILTER = {"ACTIVE": ["active"], "SAVING": ["queued", "saving", "uploading", "importing"],
                 "DELETED": ["deleted", "pending_delete"], "ERROR": ["killed"]}


def _not_found() -> errors.NotFound:
    return errors.NotFound("Image not found.")


async def _call(coro):
    """The image service's answer; its 404 (the image, or a property it lacks) in Nova's words."""
    try:
        return await coro
    except errors.NotFound:
        raise _not_found() from None


def listing(ctx: RequestContext, query: dict[str, str], limit: int | None) -> im.ListImages:
    """The image service's question for the compute API's list filters."""
    properties: dict[str, str] = {}
    if query.get("server"):
        # A server's id, or its URL (Nova takes the last part of the path).
        properties["instance_uuid"] = query["server"].rstrip("/").rsplit("/", 1)[-1]
    if query.get("type"):
        properties["image_type"] = query["type"]
    status = query.get("status", "").upper()
    return im.ListImages(project_id=ctx.project_id, is_admin=ctx.is_admin, name=query.get("name", ""),
                         status=STATUS_FILTER.get(status, [status.lower()]) if status else [],
                         min_ram=_int(query, "minRam"), min_disk=_int(query, "minDisk"), properties=properties,
                         changed_since=query.get("changes-since", ""), marker=query.get("marker", ""), limit=limit)


def _int(query: dict[str, str], name: str) -> int:
    raw = query.get(name, "0").strip() or "0"
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
        raise errors.InvalidInput(f"Invalid {name} filter [{raw}]")
    return int(raw)


async def list_images(state: ApiState, ask: im.ListImages) -> list[im.ImageInfo]:
    return await state.images.list(ask)


async def get(state: ApiState, ctx: RequestContext, image_id: str) -> im.ImageInfo:
    return await _call(state.images.get(image_id, ctx.project_id, ctx.is_admin))


async def delete(state: ApiState, ctx: RequestContext, image_id: str) -> None:
    await _call(state.images.delete_as(image_id, ctx.project_id, ctx.is_admin))


async def change_metadata(state: ApiState, ctx: RequestContext, image_id: str, *, set: dict[str, str] | None = None,
                          remove: list[str] | None = None, replace: bool = False) -> im.ImageInfo:
    """Set, replace or remove properties of an image the caller owns; over the project's
    metadata_items quota, 403 as Nova; removing a key it lacks, 404."""
    image = await get(state, ctx, image_id)
    if remove and not all(key in image.properties for key in remove):
        raise errors.NotFound("Invalid metadata key")
    if set:
        after = (dict(set) if replace else {**image.properties, **set})
        quotas.check_metadata(await quotas.limits(state.pool, state.settings.quota, ctx.project_id), after)
    return await _call(state.images.set_properties(im.SetImageProperties(
        image_id=image_id, project_id=ctx.project_id, is_admin=ctx.is_admin, set=set or {}, remove=remove or [],
        replace=replace)))


def view(image: im.ImageInfo, base: str, detail: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": image.id, "name": image.name, "links": [
        *links(base, "images", image.id),
        {"rel": "alternate", "type": "application/vnd.openstack.image", "href": f"{base}/image/images/{image.id}"}]}
    if not detail:
        return out
    status = STATUS.get(image.status, "UNKNOWN")
    out.update({"status": status, "progress": PROGRESS.get(status, 0), "minRam": image.min_ram,
                "minDisk": image.min_disk, "created": image.created_at, "updated": image.updated_at,
                "metadata": dict(image.properties), "OS-EXT-IMG-SIZE:size": image.size})
    server = image.properties.get("instance_uuid")
    if server:
        out["server"] = {"id": server, "links": links(base, "servers", server)}
    return out
