"""Usage: `/resource_providers/{uuid}/usages` (what a provider has handed out) and `/usages`
(1.9+: what a project, or one of its users, holds across every provider — quota counting)."""

from __future__ import annotations

import re

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump
from nova_async.placement import allocations, microversion, providers
from nova_async.placement.handlers.common import authorize, check_query, path_uuid, pool

_CONSUMER_TYPE = re.compile(r"^[A-Z0-9_]{1,255}$")


async def show_usages(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:usages")
    generation, usages = await providers.get_usages(pool(request), path_uuid(request))
    return dump({"resource_provider_generation": generation, "usages": usages})


async def show_project_usages(request: web.Request) -> web.Response:
    microversion.require(request, 9)
    authorize(request, "usages")
    check_query(request, {"project_id": 9, "user_id": 9, "consumer_type": 38})
    project_id = request.query.get("project_id")
    if not project_id:
        raise errors.InvalidInput("Invalid query string parameters: 'project_id' is a required property",
                                  code="placement.query.missing_value")
    wanted_type = request.query.get("consumer_type")
    if wanted_type is not None and wanted_type not in ("all", "unknown") \
            and not _CONSUMER_TYPE.match(wanted_type):
        raise errors.InvalidInput(f"Invalid query string parameters: consumer_type {wanted_type!r} "
                                  "is not a valid consumer type", code="placement.query.bad_value")
    found = await allocations.project_usages(pool(request), project_id, request.query.get("user_id"))
    if not microversion.at_least(request, 38):
        return dump({"usages": _summed(list(found.values()))})
    return dump({"usages": _by_type(found, wanted_type)})


def _summed(groups: list[allocations.TypeUsage]) -> dict[str, int]:
    total: dict[str, int] = {}
    for g in groups:
        for rc, used in g.resources.items():
            total[rc] = total.get(rc, 0) + used
    return total


def _by_type(found: dict[str | None, allocations.TypeUsage], wanted: str | None) -> dict:
    """1.38's shape: one entry per consumer type, each with its consumer_count. `all` folds
    every type into one entry; `unknown` is the consumers written before types existed."""
    if wanted == "all":
        groups = list(found.values())
        return {"all": {"consumer_count": sum(g.consumers for g in groups), **_summed(groups)}}
    named = {(t or "unknown"): g for t, g in found.items()}
    if wanted is not None:
        named = {t: g for t, g in named.items() if t == wanted}
    return {t: {"consumer_count": g.consumers, **g.resources} for t, g in named.items()}
