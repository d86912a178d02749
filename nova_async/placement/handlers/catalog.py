"""`/resource_classes` (1.2+), `/traits` (1.6+), and a provider's `/traits` (1.6+) and
`/aggregates` (1.1+; with generations from 1.19)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump, query_flag, validator
from nova_async.placement import catalog, microversion
from nova_async.placement.handlers.common import PREFIX, absolute, authorize, check_query, path_uuid, pool
from nova_async.placement.media import json_body

_NAME = {"type": "string", "pattern": "^[A-Z0-9_]{1,255}$"}
_UUID = {"type": "string", "pattern": "^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$"}
CLASS = validator({"type": "object", "required": ["name"], "additionalProperties": False,
                   "properties": {"name": _NAME}})
PROVIDER_TRAITS = validator({"type": "object", "required": ["traits", "resource_provider_generation"],
                             "additionalProperties": False,
                             "properties": {"traits": {"type": "array", "items": _NAME, "uniqueItems": True},
                                            "resource_provider_generation": {"type": "integer"}}})
AGGREGATES_OLD = validator({"type": "array", "items": _UUID, "uniqueItems": True})
AGGREGATES = validator({"type": "object", "required": ["aggregates", "resource_provider_generation"],
                        "additionalProperties": False,
                        "properties": {"aggregates": {"type": "array", "items": _UUID, "uniqueItems": True},
                                       "resource_provider_generation": {"type": "integer"}}})


def _since(request: web.Request, minor: int) -> None:
    if not microversion.at_least(request, minor):
        raise errors.NotFound("The resource could not be found.")


def _class_body(name: str) -> dict:
    return {"name": name, "links": [{"rel": "self", "href": f"{PREFIX}/resource_classes/{name}"}]}


async def list_resource_classes(request: web.Request) -> web.Response:
    _since(request, 2)
    authorize(request, "resource_classes:list")
    return dump({"resource_classes": [_class_body(n) for n in await catalog.list_classes(pool(request))]})


async def show_resource_class(request: web.Request) -> web.Response:
    _since(request, 2)
    authorize(request, "resource_classes:show")
    name = request.match_info["name"]
    if not await catalog.class_exists(pool(request), name):
        raise errors.NotFound(f"No such resource class {name}.", code="placement.resource_class.not_found")
    return dump(_class_body(name))


async def create_resource_class(request: web.Request) -> web.Response:
    _since(request, 2)
    authorize(request, "resource_classes:create")
    name = (await json_body(request, CLASS))["name"]
    if not await catalog.create_class(pool(request), name):
        raise errors.Conflict(f"Conflicting resource class already exists: {name}",
                              code="placement.duplicate_name")
    return web.Response(status=201, headers={"Location": absolute(request, f"{PREFIX}/resource_classes/{name}")})


async def put_resource_class(request: web.Request) -> web.Response:
    """1.7+: make the custom class if it is missing (201), else nothing to do (204)."""
    _since(request, 7)
    authorize(request, "resource_classes:update")
    name = request.match_info["name"]
    made = await catalog.create_class(pool(request), name)
    return web.Response(status=201 if made else 204,
                        headers={"Location": absolute(request, f"{PREFIX}/resource_classes/{name}")})


async def delete_resource_class(request: web.Request) -> web.Response:
    _since(request, 2)
    authorize(request, "resource_classes:delete")
    await catalog.delete_class(pool(request), request.match_info["name"])
    return web.Response(status=204)


async def list_traits(request: web.Request) -> web.Response:
    _since(request, 6)
    authorize(request, "traits:list")
    check_query(request, {"name": 6, "associated": 6})
    names = prefix = None
    raw = request.query.get("name")
    if raw is not None:
        if raw.startswith("in:"):
            names = [n for n in raw[3:].split(",") if n]
        elif raw.startswith("startswith:"):
            prefix = raw[len("startswith:"):]
        else:
            raise errors.InvalidInput(f"Badly formatted name parameter. Expected name query string parameter "
                                      f"in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: \"{raw}\"",
                                      code="placement.query.bad_value")
    associated = None
    if "associated" in request.query:
        associated = query_flag(request, "associated")
        if associated is None:
            raise errors.InvalidInput("The 'associated' parameter must be true or false.",
                                      code="placement.query.bad_value")
    return dump({"traits": await catalog.list_traits(pool(request), names, prefix, associated)})


async def show_trait(request: web.Request) -> web.Response:
    _since(request, 6)
    authorize(request, "traits:show")
    name = request.match_info["name"]
    if not await catalog.trait_exists(pool(request), name):
        raise errors.NotFound(f"No such trait(s): {name}.", code="placement.trait.not_found")
    return web.Response(status=204)


async def put_trait(request: web.Request) -> web.Response:
    _since(request, 6)
    authorize(request, "traits:update")
    name = request.match_info["name"]
    made = await catalog.create_trait(pool(request), name)
    return web.Response(status=201 if made else 204,
                        headers={"Location": absolute(request, f"{PREFIX}/traits/{name}")})


async def delete_trait(request: web.Request) -> web.Response:
    _since(request, 6)
    authorize(request, "traits:delete")
    await catalog.delete_trait(pool(request), request.match_info["name"])
    return web.Response(status=204)


async def list_provider_traits(request: web.Request) -> web.Response:
    _since(request, 6)
    authorize(request, "resource_providers:traits:list")
    generation, traits = await catalog.provider_traits(pool(request), path_uuid(request))
    return dump({"traits": traits, "resource_provider_generation": generation})


async def update_provider_traits(request: web.Request) -> web.Response:
    _since(request, 6)
    authorize(request, "resource_providers:traits:update")
    body = await json_body(request, PROVIDER_TRAITS)
    generation = await catalog.set_provider_traits(pool(request), path_uuid(request), body["traits"],
                                                   body["resource_provider_generation"])
    return dump({"traits": sorted(body["traits"]), "resource_provider_generation": generation})


async def delete_provider_traits(request: web.Request) -> web.Response:
    _since(request, 6)
    authorize(request, "resource_providers:traits:delete")
    await catalog.set_provider_traits(pool(request), path_uuid(request), [], None)
    return web.Response(status=204)


def _aggregates_body(request: web.Request, generation: int, aggregates: list[str]) -> dict:
    body: dict = {"aggregates": aggregates}
    if microversion.at_least(request, 19):
        body["resource_provider_generation"] = generation
    return body


async def list_provider_aggregates(request: web.Request) -> web.Response:
    _since(request, 1)
    authorize(request, "resource_providers:aggregates:list")
    generation, aggregates = await catalog.provider_aggregates(pool(request), path_uuid(request))
    return dump(_aggregates_body(request, generation, aggregates))


async def update_provider_aggregates(request: web.Request) -> web.Response:
    _since(request, 1)
    authorize(request, "resource_providers:aggregates:update")
    if microversion.at_least(request, 19):
        body = await json_body(request, AGGREGATES)
        wanted, expected = body["aggregates"], body["resource_provider_generation"]
    else:
        wanted, expected = await json_body(request, AGGREGATES_OLD), None
    generation = await catalog.set_provider_aggregates(pool(request), path_uuid(request), wanted, expected)
    _, aggregates = await catalog.provider_aggregates(pool(request), path_uuid(request))
    return dump(_aggregates_body(request, generation, aggregates))
