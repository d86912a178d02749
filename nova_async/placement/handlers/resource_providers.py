"""`/resource_providers` and `/resource_providers/{uuid}`: list, show, create, update, delete."""

from __future__ import annotations

import uuid as uuidlib

from aiohttp import web

from nova_async.common.web import dump
from nova_async.placement import microversion, providers
from nova_async.placement.handlers.common import PREFIX, absolute, authorize, path_uuid, pool
from nova_async.placement.handlers.provider_filters import provider_filter
from nova_async.placement.media import json_body, schema, validate

_UUID = {"type": "string", "format": "uuid"}
_NAME = {"type": "string", "minLength": 1, "maxLength": 200}

CREATE = schema({
    "type": "object",
    "properties": {"name": _NAME, "uuid": _UUID},
    "required": ["name"],
    "additionalProperties": False,
})
CREATE_1_14 = schema({
    "type": "object",
    "properties": {"name": _NAME, "uuid": _UUID, "parent_provider_uuid": {"anyOf": [_UUID, {"type": "null"}]}},
    "required": ["name"],
    "additionalProperties": False,
})

UPDATE = schema({
    "type": "object", "properties": {"name": _NAME}, "required": ["name"],
    "additionalProperties": False,
})
UPDATE_1_14 = schema({
    "type": "object",
    "properties": {"name": _NAME, "parent_provider_uuid": {"anyOf": [_UUID, {"type": "null"}]}},
    "required": ["name"],
    "additionalProperties": False,
})


def provider_body(request: web.Request, p: providers.Provider) -> dict:
    base = f"{PREFIX}/resource_providers/{p.uuid}"
    links = [{"rel": "self", "href": base},
             {"rel": "inventories", "href": f"{base}/inventories"},
             {"rel": "usages", "href": f"{base}/usages"}]
    for minor, rel in ((1, "aggregates"), (6, "traits"), (11, "allocations")):
        if microversion.at_least(request, minor):
            links.append({"rel": rel, "href": f"{base}/{rel}"})
    body = {"uuid": p.uuid, "name": p.name, "generation": p.generation, "links": links}
    if microversion.at_least(request, 14):
        body["parent_provider_uuid"] = p.parent_uuid
        body["root_provider_uuid"] = p.root_uuid
    return body


async def list_resource_providers(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:list")
    found = await providers.list_providers(pool(request), where=provider_filter(request))
    return dump({"resource_providers": [provider_body(request, p) for p in found]})


async def show_resource_provider(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:show")
    found = await providers.get_provider(pool(request), path_uuid(request))
    return dump(provider_body(request, found))


async def create_resource_provider(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:create")
    body = await json_body(request)
    validate(CREATE_1_14 if microversion.at_least(request, 14) else CREATE, body)
    new_uuid = str(uuidlib.UUID(body["uuid"])) if body.get("uuid") else str(uuidlib.uuid4())
    parent = body.get("parent_provider_uuid")
    created = await providers.create_provider(pool(request), uuid=new_uuid, name=body["name"],
                                              parent_uuid=str(uuidlib.UUID(parent)) if parent else None)
    location = {"Location": absolute(request, f"{PREFIX}/resource_providers/{created.uuid}")}
    if microversion.at_least(request, 20):
        return dump(provider_body(request, created), headers=location)
    return web.Response(status=201, headers=location)


async def update_resource_provider(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:update")
    uuid = path_uuid(request)
    body = await json_body(request)
    validate(UPDATE_1_14 if microversion.at_least(request, 14) else UPDATE, body)
    parent: object = providers.KEEP_PARENT
    if "parent_provider_uuid" in body:
        given = body["parent_provider_uuid"]
        parent = str(uuidlib.UUID(given)) if given else None
    updated = await providers.update_provider(pool(request), uuid, name=body["name"],
                                              parent_uuid=parent,
                                              may_reparent=microversion.at_least(request, 37))
    return dump(provider_body(request, updated))


async def delete_resource_provider(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:delete")
    await providers.delete_provider(pool(request), path_uuid(request))
    return web.Response(status=204)
