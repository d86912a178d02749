"""A server's metadata (`/servers/{id}/metadata`) and tags (`/servers/{id}/tags`, 2.26+).

Each handler parses, says how the metadata or tags change (a pure function) and leaves the
read-edit-write under the row's lock, the quota and the 404/409s to api/server_meta_store.py."""

from __future__ import annotations

from collections.abc import Callable

import asyncpg
from aiohttp import web

from nova_async.api import microversion, server_meta_store
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_KEY = {"type": "string", "minLength": 1, "maxLength": 255}
_VALUE = {"type": "string", "maxLength": 255}
METADATA = w.validator({"type": "object", "required": ["metadata"], "additionalProperties": False,
                        "properties": {"metadata": {"type": "object", "additionalProperties": _VALUE,
                                                    "propertyNames": _KEY}}})
META = w.validator({"type": "object", "required": ["meta"], "additionalProperties": False,
                    "properties": {"meta": {"type": "object", "minProperties": 1, "maxProperties": 1,
                                            "additionalProperties": _VALUE, "propertyNames": _KEY}}})
_TAG = {"type": "string", "minLength": 1, "maxLength": 60, "pattern": "^[^,/]*$"}
TAG = w.validator(_TAG)
TAGS = w.validator({"type": "object", "required": ["tags"], "additionalProperties": False,
                    "properties": {"tags": {"type": "array", "maxItems": 50, "items": _TAG}}})


async def _change_metadata(request: web.Request, change: Callable[[dict[str, str]], dict[str, str]]) -> dict:
    return await server_meta_store.change_metadata(request.app[STATE], w.context(request),
                                                   request.match_info["server_id"], change)


async def _read(request: web.Request) -> asyncpg.Record:
    return await server_meta_store.read(request.app[STATE], w.context(request), request.match_info["server_id"])


async def show_metadata(request: web.Request) -> web.Response:
    return w.dump({"metadata": dict((await _read(request))["metadata"])})


async def merge_metadata(request: web.Request) -> web.Response:
    body = (await w.read_json(request, METADATA))["metadata"]
    return w.dump({"metadata": await _change_metadata(request, lambda m: {**m, **body})})


async def replace_metadata(request: web.Request) -> web.Response:
    body = (await w.read_json(request, METADATA))["metadata"]
    return w.dump({"metadata": await _change_metadata(request, lambda _m: dict(body))})


async def show_metadata_item(request: web.Request) -> web.Response:
    key = request.match_info["key"]
    metadata = (await _read(request))["metadata"]
    if key not in metadata:
        raise errors.NotFound(f"Metadata item was not found: {key}")
    return w.dump({"meta": {key: metadata[key]}})


async def set_metadata_item(request: web.Request) -> web.Response:
    key = request.match_info["key"]
    body = (await w.read_json(request, META))["meta"]
    if list(body) != [key]:
        raise errors.InvalidInput("Request body and URI mismatch")
    await _change_metadata(request, lambda m: {**m, key: body[key]})
    return w.dump({"meta": body})


async def delete_metadata_item(request: web.Request) -> web.Response:
    key = request.match_info["key"]

    def without(metadata: dict[str, str]) -> dict[str, str]:
        if key not in metadata:
            raise errors.NotFound(f"Metadata item was not found: {key}")
        return {k: v for k, v in metadata.items() if k != key}

    await _change_metadata(request, without)
    return web.Response(status=204)


def _tags_api(request: web.Request) -> None:
    if microversion.of(request) < (2, 26):
        raise errors.NotFound("Server tags are available from microversion 2.26.")


async def _change_tags(request: web.Request, change: Callable[[list[str]], list[str]]) -> tuple[list[str], list[str]]:
    return await server_meta_store.change_tags(request.app[STATE], w.context(request),
                                               request.match_info["server_id"], change)


async def show_tags(request: web.Request) -> web.Response:
    _tags_api(request)
    return w.dump({"tags": list((await _read(request))["tags"])})


async def replace_tags(request: web.Request) -> web.Response:
    _tags_api(request)
    tags = (await w.read_json(request, TAGS))["tags"]
    _, after = await _change_tags(request, lambda _t: tags)
    return w.dump({"tags": after})


async def delete_tags(request: web.Request) -> web.Response:
    _tags_api(request)
    await _change_tags(request, lambda _t: [])
    return web.Response(status=204)


def _tag(request: web.Request) -> str:
    tag = request.match_info["tag"]
    w.check(TAG, tag)
    return tag


async def check_tag(request: web.Request) -> web.Response:
    _tags_api(request)
    tag = request.match_info["tag"]
    if tag not in (await _read(request))["tags"]:
        raise errors.NotFound(f"Tag {tag} could not be found.")
    return web.Response(status=204)


async def add_tag(request: web.Request) -> web.Response:
    _tags_api(request)
    tag = _tag(request)
    before, _ = await _change_tags(request, lambda t: [*t, tag])
    location = {"Location": str(request.url)}
    return web.Response(status=204 if tag in before else 201, headers=location)


async def delete_tag(request: web.Request) -> web.Response:
    _tags_api(request)
    tag = request.match_info["tag"]

    def without(tags: list[str]) -> list[str]:
        if tag not in tags:
            raise errors.NotFound(f"Tag {tag} could not be found.")
        return [t for t in tags if t != tag]

    await _change_tags(request, without)
    return web.Response(status=204)
