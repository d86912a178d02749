"""`GET /allocation_candidates` (1.10+): providers that could take a request, and a ready-made
allocation request for each, in the shape of the microversion asked for."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump, query_int
from nova_async.placement import candidates, microversion
from nova_async.placement.handlers.common import authorize, check_query, pool


def _allocation_request(request: web.Request, c: candidates.Candidate, wanted: dict[str, int]) -> dict:
    if not microversion.at_least(request, 12):
        return {"allocations": [{"resource_provider": {"uuid": c.uuid}, "resources": wanted}]}
    body: dict = {"allocations": {c.uuid: {"resources": wanted}}}
    if microversion.at_least(request, 34):
        body["mappings"] = {"": [c.uuid]}
    return body


def _summary(request: web.Request, c: candidates.Candidate, wanted: dict[str, int]) -> dict:
    # from 1.27 a summary covers every class of the provider, before only the requested ones
    classes = c.capacity if microversion.at_least(request, 27) else wanted
    body: dict = {"resources": {rc: {"capacity": c.capacity[rc], "used": c.used[rc]} for rc in classes}}
    if microversion.at_least(request, 17):
        body["traits"] = list(c.traits)
    if microversion.at_least(request, 29):
        body["parent_provider_uuid"] = None
        body["root_provider_uuid"] = c.uuid
    return body


async def list_allocation_candidates(request: web.Request) -> web.Response:
    authorize(request, "allocation_candidates:list")
    microversion.require(request, 10)
    check_query(request, {"resources": 10, "limit": 16})
    wanted = candidates.parse_resources(request.query.get("resources", ""))
    limit = query_int(request, "limit", minimum=1)
    found = await candidates.find(pool(request), wanted, limit)
    return dump({
        "allocation_requests": [_allocation_request(request, c, wanted) for c in found],
        "provider_summaries": {c.uuid: _summary(request, c, wanted) for c in found},
    })
