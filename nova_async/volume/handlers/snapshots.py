"""/snapshots: create, list (summary and detail), show, update, delete."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, read_json
from nova_async.volume import schemas, snapshots, views
from nova_async.volume.microversion import VERSION_KEY
from nova_async.volume.handlers.common import (SNAPSHOT_SORT_KEYS, all_projects, api, caller, metadata_filter,
                                               next_link, page)


async def create_snapshot(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_json(request, schemas.create_snapshot)
    req = schemas.renamed(body["snapshot"])
    req["force"] = schemas.truthy(req.get("force", False))
    row = await snapshots.create(api(request), ctx, req)
    return dump({"snapshot": views.snapshot(row, request[VERSION_KEY], extended=False)}, status=202)


async def _listed(request: web.Request):
    ctx = caller(request)
    rows = await snapshots.find(api(request), ctx, all_projects=all_projects(request, ctx),
                                name=request.query.get("name") or request.query.get("display_name"),
                                status=request.query.get("status"), volume_id=request.query.get("volume_id"),
                                metadata=metadata_filter(request))
    rows, marker = page(request, rows, SNAPSHOT_SORT_KEYS)
    return rows, next_link(request, marker)


async def list_snapshots(request: web.Request) -> web.Response:
    rows, more = await _listed(request)
    body: dict = {"snapshots": [views.snapshot_summary(r) for r in rows]}
    if more:
        body["snapshots_links"] = more
    return dump(body)


async def list_snapshots_detail(request: web.Request) -> web.Response:
    rows, more = await _listed(request)
    body: dict = {"snapshots": [views.snapshot(r, request[VERSION_KEY], extended=True) for r in rows]}
    if more:
        body["snapshots_links"] = more
    return dump(body)


async def show_snapshot(request: web.Request) -> web.Response:
    ctx = caller(request)
    row = await snapshots.get(api(request), ctx, request.match_info["snapshot_id"])
    return dump({"snapshot": views.snapshot(row, request[VERSION_KEY], extended=True)})


async def update_snapshot(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_json(request, schemas.update_snapshot)
    row = await snapshots.update(api(request), ctx, request.match_info["snapshot_id"],
                                 schemas.renamed(body["snapshot"]))
    return dump({"snapshot": views.snapshot(row, request[VERSION_KEY], extended=False)})


async def delete_snapshot(request: web.Request) -> web.Response:
    ctx = caller(request)
    await snapshots.delete(api(request), ctx, request.match_info["snapshot_id"])
    return web.Response(status=202)
