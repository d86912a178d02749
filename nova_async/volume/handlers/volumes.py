"""/volumes: create, list (summary and detail), show, update, delete, and a volume's metadata."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import check, dump, query_flag, read_body, read_json
from nova_async.volume import schemas, views, volumes
from nova_async.volume.microversion import VERSION_KEY
from nova_async.volume.handlers.common import (VOLUME_SORT_KEYS, all_projects, api, base, caller,
                                               metadata_filter, next_link, page)


async def create_volume(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_json(request, schemas.create_volume)
    req = schemas.renamed(body["volume"])
    if req.get("size") is not None:
        req["size"] = int(req["size"])
        if req["size"] < 1:
            raise errors.InvalidInput(f"Invalid input received: Volume size '{req['size']}' must be an integer "
                                      "and greater than 0.")
    row = await volumes.create(api(request), ctx, req)
    return dump({"volume": views.volume(base(request), ctx, api(request).host, row, [], request[VERSION_KEY],
                                        extended=False)}, status=202)


async def _listed(request: web.Request):
    ctx = caller(request)
    name = request.query.get("name") or request.query.get("display_name")
    rows = await volumes.find(api(request), ctx, all_projects=all_projects(request, ctx), name=name,
                              status=request.query.get("status"), metadata=metadata_filter(request),
                              bootable=query_flag(request, "bootable"))
    rows, marker = page(request, rows, VOLUME_SORT_KEYS)
    return ctx, rows, next_link(request, marker)


async def list_volumes(request: web.Request) -> web.Response:
    _, rows, more = await _listed(request)
    body: dict = {"volumes": [views.volume_summary(base(request), r) for r in rows]}
    if more:
        body["volumes_links"] = more
    return dump(body)


async def list_volumes_detail(request: web.Request) -> web.Response:
    ctx, rows, more = await _listed(request)
    attached = await volumes.attachments(api(request), rows)
    body: dict = {"volumes": [views.volume(base(request), ctx, api(request).host, r, attached.get(str(r["id"]), []),
                                           request[VERSION_KEY], extended=True) for r in rows]}
    if more:
        body["volumes_links"] = more
    return dump(body)


async def _render(request: web.Request, ctx, row, *, extended: bool) -> web.Response:
    attached = await volumes.attachments(api(request), [row])
    return dump({"volume": views.volume(base(request), ctx, api(request).host, row,
                                        attached.get(str(row["id"]), []), request[VERSION_KEY],
                                        extended=extended)})


async def show_volume(request: web.Request) -> web.Response:
    ctx = caller(request)
    row = await volumes.get(api(request), ctx, request.match_info["volume_id"])
    return await _render(request, ctx, row, extended=True)


async def update_volume(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_json(request, schemas.update_volume)
    row = await volumes.update(api(request), ctx, request.match_info["volume_id"], schemas.renamed(body["volume"]))
    return await _render(request, ctx, row, extended=False)


async def delete_volume(request: web.Request) -> web.Response:
    ctx = caller(request)
    await volumes.delete(api(request), ctx, request.match_info["volume_id"],
                         cascade=bool(query_flag(request, "cascade")))
    return web.Response(status=202)


async def show_volume_metadata(request: web.Request) -> web.Response:
    ctx = caller(request)
    row = await volumes.get(api(request), ctx, request.match_info["volume_id"])
    return dump({"metadata": dict(row["metadata"])})


async def create_volume_metadata(request: web.Request) -> web.Response:
    """POST merges into what is there; PUT (update_volume_metadata) replaces it."""
    ctx = caller(request)
    body = await read_json(request, schemas.metadata_body)
    found = await volumes.set_metadata(api(request), ctx, request.match_info["volume_id"], body["metadata"],
                                       replace=False)
    return dump({"metadata": found})


async def update_volume_metadata(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_json(request, schemas.metadata_body)
    found = await volumes.set_metadata(api(request), ctx, request.match_info["volume_id"], body["metadata"],
                                       replace=True)
    return dump({"metadata": found})


async def show_volume_metadata_item(request: web.Request) -> web.Response:
    ctx = caller(request)
    row = await volumes.get(api(request), ctx, request.match_info["volume_id"])
    key = request.match_info["key"]
    if key not in row["metadata"]:
        raise errors.NotFound(f"Volume {row['id']} has no metadata with key {key}.")
    return dump({"meta": {key: row["metadata"][key]}})


async def update_volume_metadata_item(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_body(request)
    check(schemas.metadata_item, body)
    key = request.match_info["key"]
    if key not in body["meta"]:
        raise errors.InvalidInput("Request body and URI mismatch")
    await volumes.set_metadata(api(request), ctx, request.match_info["volume_id"], body["meta"], replace=False)
    return dump({"meta": body["meta"]})


async def delete_volume_metadata_item(request: web.Request) -> web.Response:
    ctx = caller(request)
    await volumes.delete_metadata_key(api(request), ctx, request.match_info["volume_id"], request.match_info["key"])
    return web.Response(status=200)
