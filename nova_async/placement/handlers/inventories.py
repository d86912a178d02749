"""`/resource_providers/{uuid}/inventories`: what a provider holds, read and replaced whole,
added one class at a time (POST), or read and changed one class at a time
(`/inventories/{resource_class}`). Every write names the provider
generation it read, so two writers cannot both change a provider they read at once; a class
nobody knows (not standard, no custom class made) is refused."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump
from nova_async.placement import catalog, microversion, providers
from nova_async.placement.handlers import common
from nova_async.placement.handlers.common import authorize, path_uuid, pool
from nova_async.placement.media import json_body, schema

_INT = {"type": "integer", "maximum": providers.MAX_INT}

UPDATE = schema({
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {
            "type": "object",
            "patternProperties": {
                "^[A-Z0-9_]{1,255}$": {
                    "type": "object",
                    "properties": {
                        "total": {**_INT, "minimum": 1},
                        "reserved": {**_INT, "minimum": 0},
                        "min_unit": {**_INT, "minimum": 1},
                        "max_unit": {**_INT, "minimum": 1},
                        "step_size": {**_INT, "minimum": 1},
                        "allocation_ratio": {"type": "number", "exclusiveMinimum": 0,
                                             "maximum": 3.40282e38},
                    },
                    "required": ["total"],
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
})


def inventories_body(generation: int, inventories: dict[str, providers.Inventory]) -> dict:
    return {
        "resource_provider_generation": generation,
        "inventories": {rc: {"total": i.total, "reserved": i.reserved, "min_unit": i.min_unit,
                             "max_unit": i.max_unit, "step_size": i.step_size,
                             "allocation_ratio": float(i.allocation_ratio)}
                        for rc, i in inventories.items()},
    }


# From 1.26 an inventory may be reserved whole (capacity zero).
RESERVED_WHOLE = 26


async def list_inventories(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:inventories:list")
    generation, inventories = await providers.get_inventories(pool(request), path_uuid(request))
    return dump(inventories_body(generation, inventories))


async def _known(request: web.Request, classes: list[str]) -> None:
    unknown = await catalog.unknown_classes(pool(request), classes)
    if unknown:
        raise errors.InvalidInput(f"Unknown resource class in inventory for resource provider "
                                  f"{request.match_info['uuid']}: {', '.join(unknown)}.")


async def update_inventories(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:inventories:update")
    uuid, _, _ = await _current(request)
    body = await json_body(request, UPDATE)
    await _known(request, list(body["inventories"]))
    wanted = {rc: providers.Inventory(**fields) for rc, fields in body["inventories"].items()}
    generation, inventories = await providers.set_inventories(
        pool(request), uuid, wanted, generation=body["resource_provider_generation"],
        reserved_may_equal_total=microversion.at_least(request, RESERVED_WHOLE))
    return dump(inventories_body(generation, inventories))


def _one(generation: int, rc: str, inv: providers.Inventory) -> dict:
    return {"resource_provider_generation": generation, **inventories_body(generation, {rc: inv})["inventories"][rc]}


async def _current(request: web.Request) -> tuple[str, int, dict[str, providers.Inventory]]:
    """The provider's inventories as they are; the provider is looked up before the body
    is read, so an unknown one is a 404 whatever was sent (as upstream)."""
    uuid = path_uuid(request)
    generation, inventories = await providers.get_inventories(pool(request), uuid)
    return uuid, generation, inventories


async def show_inventory(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:inventories:show")
    rc = request.match_info["resource_class"]
    uuid, generation, inventories = await _current(request)
    if rc not in inventories:
        raise errors.NotFound(f"No inventory of class {rc} for {uuid}.")
    return dump(_one(generation, rc, inventories[rc]))


ONE = schema({
    "type": "object",
    "properties": {"resource_provider_generation": {"type": "integer"},
                   **UPDATE.schema["properties"]["inventories"]["patternProperties"]["^[A-Z0-9_]{1,255}$"]["properties"]},
    "required": ["resource_provider_generation", "total"],
    "additionalProperties": False,
})


async def update_inventory(request: web.Request) -> web.Response:
    """PUT one class the provider already has (a class it lacks is added by POST)."""
    authorize(request, "resource_providers:inventories:update")
    rc = request.match_info["resource_class"]
    uuid, generation, inventories = await _current(request)
    body = await json_body(request, ONE)
    expected = body.pop("resource_provider_generation")
    if expected != generation:
        raise errors.Conflict("resource provider generation conflict", code="placement.concurrent_update")
    wanted = providers.Inventory(**body)
    may_be_whole = microversion.at_least(request, RESERVED_WHOLE)
    providers.check_inventories(uuid, {rc: wanted}, reserved_may_equal_total=may_be_whole)
    if rc not in inventories:
        raise errors.InvalidInput(f"No inventory record with resource class for resource provider "
                                  f"{uuid}: No inventory of class {rc} found.")
    inventories[rc] = wanted
    generation, _ = await providers.set_inventories(
        pool(request), uuid, inventories, generation=expected, reserved_may_equal_total=may_be_whole)
    return dump(_one(generation, rc, inventories[rc]))


CREATE = schema({
    "type": "object",
    "properties": {"resource_class": {"type": "string", "pattern": "^[A-Z0-9_]{1,255}$"},
                   **ONE.schema["properties"]},
    "required": ["resource_class", "total"],
    "additionalProperties": False,
})


async def create_inventory(request: web.Request) -> web.Response:
    """POST: one more class on the provider; 201 with its URL in Location. Unlike the PUTs, the
    body need not name a generation; a class the provider already has is a conflict."""
    authorize(request, "resource_providers:inventories:create")
    uuid, generation, inventories = await _current(request)
    body = await json_body(request, CREATE)
    rc = body.pop("resource_class")
    body.pop("resource_provider_generation", None)
    if await catalog.unknown_classes(pool(request), [rc]):
        raise errors.InvalidInput(f"Unable to create inventory for resource provider {uuid}: "
                                  f"No such resource class {rc}.")
    if rc in inventories:
        raise errors.Conflict(f"Update conflict: resource provider {uuid} already has an inventory "
                              f"of {rc}.", code="placement.concurrent_update")
    inventories[rc] = providers.Inventory(**body)
    generation, _ = await providers.set_inventories(
        pool(request), uuid, inventories, generation=generation, action="create",
        reserved_may_equal_total=microversion.at_least(request, RESERVED_WHOLE))
    location = common.absolute(request, f"{common.PREFIX}/resource_providers/{uuid}/inventories/{rc}")
    return dump(_one(generation, rc, inventories[rc]), status=201, headers={"Location": location})


async def delete_inventory(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:inventories:delete")
    rc = request.match_info["resource_class"]
    uuid, generation, inventories = await _current(request)
    if rc not in inventories:
        raise errors.NotFound(f"No inventory of class {rc} found for delete.")
    del inventories[rc]
    await providers.set_inventories(pool(request), uuid, inventories, generation=generation)
    return web.Response(status=204)


async def delete_inventories(request: web.Request) -> web.Response:
    """1.5+: every inventory of the provider."""
    if not microversion.at_least(request, 5):
        raise errors.MethodNotAllowed("DELETE of all inventories arrived in placement 1.5.")
    authorize(request, "resource_providers:inventories:delete")
    uuid, generation, _ = await _current(request)
    await providers.set_inventories(pool(request), uuid, {}, generation=generation)
    return web.Response(status=204)
