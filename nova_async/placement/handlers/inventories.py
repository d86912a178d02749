"""`/resource_providers/{uuid}/inventories`: what a provider holds, read and replaced whole."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, read_json, validator
from nova_async.placement import providers
from nova_async.placement.handlers.common import authorize, path_uuid, pool

_INT = {"type": "integer", "maximum": providers.MAX_INT}

UPDATE = validator({
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


async def list_inventories(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:inventories:list")
    generation, inventories = await providers.get_inventories(pool(request), path_uuid(request))
    return dump(inventories_body(generation, inventories))


async def update_inventories(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:inventories:update")
    uuid = path_uuid(request)
    body = await read_json(request, UPDATE)
    wanted = {rc: providers.Inventory(**fields) for rc, fields in body["inventories"].items()}
    generation, inventories = await providers.set_inventories(
        pool(request), uuid, wanted, generation=body["resource_provider_generation"])
    return dump(inventories_body(generation, inventories))
