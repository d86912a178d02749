"""`/images` and their metadata: the compute API's image proxy, until microversion 2.35 (404
from 2.36, as Nova). What each call may do is the image service's rule (image_proxy.py)."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import image_proxy, microversion
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_MAX_LIMIT = 1000
_KEY = {"type": "string", "minLength": 1, "maxLength": 255}
_METADATA = {"type": "object", "propertyNames": _KEY,
             "additionalProperties": {"type": "string", "maxLength": 255}}
METADATA = w.validator({"type": "object", "required": ["metadata"], "additionalProperties": False,
                        "properties": {"metadata": _METADATA}})
META = w.validator({"type": "object", "required": ["meta"], "additionalProperties": False,
                    "properties": {"meta": {**_METADATA, "minProperties": 1, "maxProperties": 1}}})


def _proxied(request: web.Request):
    """(state, caller), or 404 from 2.36 on."""
    if microversion.of(request) > image_proxy.LAST_VERSION:
        raise errors.NotFound("The compute API's images are gone from microversion 2.36; use the image API.")
    return request.app[STATE], w.context(request)


async def _list(request: web.Request, detail: bool) -> web.Response:
    state, ctx = _proxied(request)
    limit = w.query_int(request, "limit", _MAX_LIMIT)
    ask = image_proxy.listing(ctx, dict(request.query), min(limit, _MAX_LIMIT) if limit is not None else None)
    images = await image_proxy.list_images(state, ask)
    return w.dump({"images": [image_proxy.view(i, state.base_url, detail) for i in images]})


async def list_images(request: web.Request) -> web.Response:
    return await _list(request, detail=False)


async def list_images_detail(request: web.Request) -> web.Response:
    return await _list(request, detail=True)


async def show_image(request: web.Request) -> web.Response:
    state, ctx = _proxied(request)
    image = await image_proxy.get(state, ctx, request.match_info["image_id"])
    return w.dump({"image": image_proxy.view(image, state.base_url, detail=True)})


async def delete_image(request: web.Request) -> web.Response:
    state, ctx = _proxied(request)
    await image_proxy.delete(state, ctx, request.match_info["image_id"])
    return web.Response(status=204)


async def show_metadata(request: web.Request) -> web.Response:
    state, ctx = _proxied(request)
    image = await image_proxy.get(state, ctx, request.match_info["image_id"])
    return w.dump({"metadata": dict(image.properties)})


async def add_metadata(request: web.Request) -> web.Response:
    """POST: the body's keys are added or replaced, the others kept; all are answered."""
    state, ctx = _proxied(request)
    body = await w.read_json(request, METADATA)
    image = await image_proxy.change_metadata(state, ctx, request.match_info["image_id"], set=body["metadata"])
    return w.dump({"metadata": dict(image.properties)})


async def replace_metadata(request: web.Request) -> web.Response:
    """PUT: the body's keys become all of them."""
    state, ctx = _proxied(request)
    body = await w.read_json(request, METADATA)
    image = await image_proxy.change_metadata(state, ctx, request.match_info["image_id"], set=body["metadata"],
                                              replace=True)
    return w.dump({"metadata": dict(image.properties)})


async def show_metadata_item(request: web.Request) -> web.Response:
    state, ctx = _proxied(request)
    key = request.match_info["key"]
    image = await image_proxy.get(state, ctx, request.match_info["image_id"])
    if key not in image.properties:
        raise errors.NotFound("Invalid metadata key")
    return w.dump({"meta": {key: image.properties[key]}})


async def set_metadata_item(request: web.Request) -> web.Response:
    state, ctx = _proxied(request)
    key = request.match_info["key"]
    body = await w.read_json(request, META)
    if list(body["meta"]) != [key]:
        raise errors.InvalidInput("Request body and URI mismatch")
    await image_proxy.change_metadata(state, ctx, request.match_info["image_id"], set=body["meta"])
    return w.dump({"meta": body["meta"]})


async def delete_metadata_item(request: web.Request) -> web.Response:
    state, ctx = _proxied(request)
    await image_proxy.change_metadata(state, ctx, request.match_info["image_id"], remove=[request.match_info["key"]])
    return web.Response(status=204)
