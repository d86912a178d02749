"""GET /v2/schemas/{image,images,member,members,task,tasks} and /v2/schemas/metadefs/*: the schema
documents clients fetch."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump
from nova_async.image import metadef_schemas, schema_documents


async def show_schema(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    build = schema_documents.DOCUMENTS.get(name)
    if build is None:
        raise errors.NotFound(f"No schema named {name}.")
    return dump(build())


async def show_metadef_schema(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    build = metadef_schemas.DOCUMENTS.get(name)
    if build is None:
        raise errors.NotFound(f"No schema named metadefs/{name}.")
    return dump(build())
