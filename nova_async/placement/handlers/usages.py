"""`/resource_providers/{uuid}/usages`: how much of each class a provider has handed out."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump
from nova_async.placement import providers
from nova_async.placement.handlers.common import authorize, path_uuid, pool


async def show_usages(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:usages")
    generation, usages = await providers.get_usages(pool(request), path_uuid(request))
    return dump({"resource_provider_generation": generation, "usages": usages})
