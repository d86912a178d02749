"""A namespace's objects, properties and tags: /v2/metadefs/namespaces/{ns}/objects,
…/properties and …/tags, each listed, made, shown, replaced (renamed) and deleted one by
one or all at once."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.common.web import context, dump, oslo_bool, read_json
from nova_async.image import metadef_schemas, metadef_views, metadefs
from nova_async.image.metadefs import OBJECT, PROPERTY, TAG
from nova_async.image.state import STATE


def _render(kind: str, namespace: str, row: Any) -> dict[str, Any]:
    if kind == OBJECT:
        return metadef_views.object_(namespace, row)
    if kind == PROPERTY:
        return metadef_views.property_(row)
    return metadef_views.tag(row)


def _kind(request: web.Request) -> str:
    return {"objects": OBJECT, "properties": PROPERTY, "tags": TAG}[request.match_info["kind"]]


_SCHEMAS = {OBJECT: metadef_schemas.OBJECT, PROPERTY: metadef_schemas.PROPERTY, TAG: metadef_schemas.TAG}


async def list_definitions(request: web.Request) -> web.Response:
    kind, namespace = _kind(request), request.match_info["namespace"]
    rows = await metadefs.list_items(request.app[STATE].pool, context(request), namespace, kind)
    if kind == OBJECT:
        return dump(metadef_views.objects(namespace, rows))
    return dump(metadef_views.properties(rows) if kind == PROPERTY else metadef_views.tags(rows))


async def create_definition(request: web.Request) -> web.Response:
    """POST …/objects or …/properties: one definition. POST …/tags: the namespace's tags."""
    ctx, kind, namespace = context(request), _kind(request), request.match_info["namespace"]
    pool = request.app[STATE].pool
    if kind == TAG:
        body = await read_json(request, metadef_schemas.TAGS)
        append = bool(oslo_bool(request.headers.get("X-Openstack-Append", "")))
        rows = await metadefs.replace_tags(pool, ctx, namespace, [t["name"] for t in body["tags"]], append=append)
        return dump({"tags": [{"name": r["name"]} for r in rows]}, status=201)
    body = await read_json(request, _SCHEMAS[kind])
    row = await metadefs.add_item(pool, ctx, namespace, kind, body["name"], body)
    return dump(_render(kind, namespace, row), status=201)


async def create_tag(request: web.Request) -> web.Response:
    """POST …/tags/{name}: one tag, named by the URL."""
    namespace = request.match_info["namespace"]
    row = await metadefs.add_item(request.app[STATE].pool, context(request), namespace, TAG,
                                  request.match_info["name"], {})
    return dump(metadef_views.tag(row), status=201)


async def show_definition(request: web.Request) -> web.Response:
    kind, namespace = _kind(request), request.match_info["namespace"]
    row = await metadefs.get_item(request.app[STATE].pool, context(request), namespace, kind,
                                  request.match_info["name"])
    return dump(_render(kind, namespace, row))


async def update_definition(request: web.Request) -> web.Response:
    ctx, kind, namespace = context(request), _kind(request), request.match_info["namespace"]
    body = await read_json(request, _SCHEMAS[kind])
    row = await metadefs.replace_item(request.app[STATE].pool, ctx, namespace, kind, request.match_info["name"], body)
    return dump(_render(kind, namespace, row))


async def delete_definition(request: web.Request) -> web.Response:
    await metadefs.delete_item(request.app[STATE].pool, context(request), request.match_info["namespace"],
                               _kind(request), request.match_info["name"])
    return web.Response(status=204)


async def delete_definitions(request: web.Request) -> web.Response:
    await metadefs.delete_all(request.app[STATE].pool, context(request), request.match_info["namespace"],
                              _kind(request))
    return web.Response(status=204)
