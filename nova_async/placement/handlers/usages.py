"""Usage: `/resource_providers/{uuid}/usages` (what a provider has handed out) and `/usages`
(1.9+: what a project, or one of its users, holds across every provider — quota counting)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump
from nova_async.placement import allocations, microversion, providers
from nova_async.placement.handlers.common import authorize, path_uuid, pool
from nova_async.placement.media import schema, validate_query

_ID = {"type": "string", "minLength": 1, "maxLength": 255}
QUERY = schema({"type": "object", "properties": {"project_id": _ID, "user_id": _ID},
                "required": ["project_id"], "additionalProperties": False})
QUERY_1_38 = schema({**QUERY.schema, "properties": {
    **QUERY.schema["properties"],
    "consumer_type": {**_ID, "pattern": "^[A-Z0-9_]+$|^all$|^unknown$"}}})


async def show_usages(request: web.Request) -> web.Response:
    authorize(request, "resource_providers:usages")
    generation, usages = await providers.get_usages(pool(request), path_uuid(request))
    return dump({"resource_provider_generation": generation, "usages": usages})


async def show_project_usages(request: web.Request) -> web.Response:
    microversion.require(request, 9)
    authorize(request, "usages")
    validate_query(request, QUERY_1_38 if microversion.at_least(request, 38) else QUERY)
    project_id = request.query["project_id"]
    wanted_type = request.query.get("consumer_type")
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
