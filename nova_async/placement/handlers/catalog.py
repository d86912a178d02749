"""`/resource_classes` (1.2+), `/traits` (1.6+), and a provider's `/traits` (1.6+) and
`/aggregates` (1.1+; with generations from 1.19)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump
from nova_async.placement import catalog, microversion, providers
from nova_async.placement.handlers.common import PREFIX, absolute, authorize, check_query, path_uuid, pool
from nova_async.placement.media import bodiless, json_body, schema, validate

# Upstream's bounds: a custom class's name is checked by the schema; a provider's traits
# only for length, an unknown name is then refused by the lookup ("No such trait(s)").
_CUSTOM_CLASS = {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255}
_TRAIT = {"type": "string", "minLength": 1, "maxLength": 255}
_AGGREGATE_LIST = {"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": True}
CLASS = schema({"type": "object", "required": ["name"], "additionalProperties": False,
                "properties": {"name": _CUSTOM_CLASS}})
PROVIDER_TRAITS = schema({"type": "object", "required": ["traits", "resource_provider_generation"],
                          "additionalProperties": False,
                          "properties": {"traits": {"type": "array", "items": _TRAIT},
                                         "resource_provider_generation": {"type": "integer"}}})
AGGREGATES_OLD = schema(_AGGREGATE_LIST)
AGGREGATES = schema({"type": "object", "required": ["aggregates", "resource_provider_generation"],
                     "additionalProperties": False,
                     "properties": {"aggregates": _AGGREGATE_LIST,
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
        raise catalog.class_not_found(name)
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
    """1.2-1.6: rename a custom class (the body names it anew). 1.7+: make the custom class in
    the path if it is missing (201), else nothing to do (204); the name is checked as a
    POST's body would be."""
    _since(request, 2)
    authorize(request, "resource_classes:update")
    name = request.match_info["name"]
    if not microversion.at_least(request, 7):
        new_name = (await json_body(request, CLASS))["name"]
        await catalog.rename_class(pool(request), name, new_name)
        return dump(_class_body(new_name))
    validate(CLASS, {"name": name})
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
        word = request.query["associated"].lower()
        if word not in ("true", "false"):
            raise errors.InvalidInput('The query parameter "associated" only accepts "true" or "false"',
                                      code="placement.query.bad_value")
        associated = word == "true"
    return dump({"traits": await catalog.list_traits(pool(request), names, prefix, associated)})


@bodiless
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
    microversion.mark_representation(request)  # upstream sends the cache headers here too
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
    return dump({"traits": sorted(set(body["traits"])), "resource_provider_generation": generation})


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
    """The answer lists the aggregates in the order the body gave them, as upstream's does.
    An unknown provider is a 404 whatever the body (upstream looks it up first)."""
    _since(request, 1)
    authorize(request, "resource_providers:aggregates:update")
    uuid = path_uuid(request)
    await providers.get_provider(pool(request), uuid)
    if microversion.at_least(request, 19):
        body = await json_body(request, AGGREGATES)
        wanted, expected = body["aggregates"], body["resource_provider_generation"]
    else:
        wanted, expected = await json_body(request, AGGREGATES_OLD), None
    generation = await catalog.set_provider_aggregates(pool(request), uuid, wanted, expected)
    return dump(_aggregates_body(request, generation, wanted))
