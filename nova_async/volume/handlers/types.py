"""/types: the one volume type, __DEFAULT__ (what Cinder makes at install)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump
from nova_async.volume import views
from nova_async.volume.handlers.common import caller
from nova_async.volume.volumes import DEFAULT_TYPE, DEFAULT_TYPE_ID


async def list_types(request: web.Request) -> web.Response:
    caller(request)
    return dump({"volume_types": [views.volume_type()]})


async def show_type(request: web.Request) -> web.Response:
    caller(request)
    wanted = request.match_info["type_id"]
    if wanted not in (DEFAULT_TYPE, DEFAULT_TYPE_ID, "default"):
        raise errors.NotFound(f"Volume type {wanted} could not be found.", code="volume_type_not_found")
    return dump({"volume_type": views.volume_type()})
