"""The /v2/images resource: create, list, show, update (JSON patch) and delete."""

from __future__ import annotations

from urllib.parse import urlencode

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import check, context, dump, query_flag, query_int, read_body
from nova_async.image import schemas, store, views
from nova_async.image.state import STATE

# Query parameters that are not property filters. Those we do not act on are accepted and
# ignored.
_CONTROL = {"limit", "marker", "id", "name", "status", "visibility", "os_hidden", "owner", "tag",
            "disk_format", "container_format", "sort", "sort_key", "sort_dir", "size_min",
            "size_max", "member_status", *store.EXACT_COLUMNS}
_IGNORED = {"created_at", "updated_at"}
_MAX_LIMIT = 1000


def _many(request: web.Request, name: str) -> list[str] | None:
    """Glance's `name=in:a,b` operator, or a plain single value."""
    raw = request.query.get(name)
    if raw is None:
        return None
    if raw.startswith("in:"):
        return [v.strip() for v in raw[3:].split(",") if v.strip()]
    return [raw]


def _filters(request: web.Request) -> store.ImageFilters:
    q = request.query
    visibility = q.get("visibility")
    if visibility is not None and visibility not in (*schemas.VISIBILITIES, "all"):
        raise errors.InvalidInput(f"Invalid visibility value: {visibility}")
    member_status = q.get("member_status", "accepted")
    if member_status not in schemas.MEMBER_STATUS_FILTERS:
        raise errors.InvalidInput(f"Invalid member_status value: {member_status}")
    hidden = query_flag(request, "os_hidden")
    limit = query_int(request, "limit", minimum=1)
    exact = {}
    for column, kind in store.EXACT_COLUMNS.items():
        value = (query_flag(request, column) if kind is bool
                 else query_int(request, column) if kind is int else q.get(column))
        if value is not None:
            exact[column] = value
    return store.ImageFilters(
        ids=_many(request, "id"), names=_many(request, "name"), statuses=_many(request, "status"),
        visibility=visibility, os_hidden=bool(hidden), owner=q.get("owner"),
        tags=q.getall("tag", None), disk_formats=_many(request, "disk_format"),
        container_formats=_many(request, "container_format"),
        size_min=query_int(request, "size_min"), size_max=query_int(request, "size_max"),
        sort=schemas.sort_order(q.get("sort"), q.getall("sort_key", []), q.getall("sort_dir", [])),
        marker=q.get("marker"), member_status=member_status, exact=exact,
        limit=None if limit is None else min(limit, _MAX_LIMIT),
        properties={k: v for k, v in q.items() if k not in _CONTROL and k not in _IGNORED})


def _next_link(request: web.Request, rows: list, limit: int | None) -> str | None:
    if limit is None or len(rows) < limit:
        return None
    params = [(k, v) for k, v in request.query.items() if k != "marker"]
    params.append(("marker", str(rows[-1]["id"])))
    return f"/v2/images?{urlencode(params)}"


async def list_images(request: web.Request) -> web.Response:
    filters = _filters(request)
    rows = await store.list_images(request.app[STATE].pool, context(request), filters)
    return dump(views.image_list(rows, _next_link(request, rows, filters.limit)))


async def show_image(request: web.Request) -> web.Response:
    row = await store.get(request.app[STATE].pool, context(request), request.match_info["image_id"])
    return dump(views.image(row))


async def create_image(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_body(request)
    if isinstance(body, dict):
        schemas.check_writable(body)
    check(schemas.IMAGE, body)
    core, props = schemas.split(body)
    state = request.app[STATE]
    row = await store.create(state.pool, ctx, core, props)
    return dump(views.image(row), status=201,
                headers={"Location": f"{state.base_url}/image/v2/images/{row['id']}"})


async def update_image(request: web.Request) -> web.Response:
    ctx = context(request)
    schemas.check_patch_media_type(request.content_type)
    body = schemas.patch_ops(request.content_type, await read_body(request))
    row = await store.update(request.app[STATE].pool, ctx, request.match_info["image_id"], body)
    return dump(views.image(row))


async def delete_image(request: web.Request) -> web.Response:
    state = request.app[STATE]
    await store.delete(state.pool, context(request), request.match_info["image_id"], state.files)
    return web.Response(status=204)
