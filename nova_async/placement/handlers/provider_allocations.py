"""`/resource_providers/{uuid}/allocations`: every consumer's claim on one provider, with the
provider generation they were read at (what a client needs to reason about a later write)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump
from nova_async.placement import allocations
from nova_async.placement.handlers.common import authorize, path_uuid, pool


async def list_provider_allocations(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:allocations:list")
    generation, found = await allocations.provider_allocations(pool(request), path_uuid(request))
    return dump({"resource_provider_generation": generation,
                 "allocations": {consumer: {"resources": res} for consumer, res in found.items()}})
