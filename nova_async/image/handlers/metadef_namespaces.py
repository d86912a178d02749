"""/v2/metadefs/namespaces: the catalog's namespaces (metadefs.py says what they are)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import context, dump, read_json
from nova_async.image import metadef_schemas, metadef_views, metadefs
from nova_async.image.state import STATE


async def list_namespaces(request: web.Request) -> web.Response:
    visibility = request.query.get("visibility")
    if visibility is not None and visibility not in metadef_schemas.VISIBILITIES:
        raise errors.InvalidInput(f"Invalid visibility value: {visibility}")
    raw_types = request.query.get("resource_types")
    types = [t.strip() for t in raw_types.split(",") if t.strip()] if raw_types else None
    rows = await metadefs.list_namespaces(request.app[STATE].pool, context(request), visibility, types)
    return dump(metadef_views.namespaces(rows))


async def show_namespace(request: web.Request) -> web.Response:
    ns = await metadefs.get_namespace(request.app[STATE].pool, context(request), request.match_info["namespace"])
    return dump(metadef_views.namespace(ns))


async def create_namespace(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, metadef_schemas.NAMESPACE)
    ns = await metadefs.create_namespace(request.app[STATE].pool, ctx, body)
    return dump(metadef_views.namespace(ns), status=201)


async def update_namespace(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, metadef_schemas.NAMESPACE)
    ns = await metadefs.update_namespace(request.app[STATE].pool, ctx, request.match_info["namespace"], body)
    return dump(metadef_views.namespace(ns))


async def delete_namespace(request: web.Request) -> web.Response:
    await metadefs.delete_namespace(request.app[STATE].pool, context(request), request.match_info["namespace"])
    return web.Response(status=204)
