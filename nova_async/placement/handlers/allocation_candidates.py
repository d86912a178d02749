"""`GET /allocation_candidates` (1.10+): the ways a request could be allocated right now, as
ready-made allocation requests, and a summary of every provider they involve, in the shape
of the microversion asked for. Parsing lives in request_groups; the search in flat_candidates
(the common case, the body built by the database) or else in tree_candidates."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump
from nova_async.placement import (
    flat_candidates,
    microversion,
    request_groups,
    tree_candidates,
)
from nova_async.placement.flat_candidates import Shape
from nova_async.placement.handlers.common import authorize, pool
from nova_async.placement.tree_candidates import (
    AllocationRequest,
    CandidateResult,
    Provider,
)


def _shape(request: web.Request) -> Shape:
    """What the microversion asked for decides the shape; decided once, not per provider
    (a response can hold thousands)."""
    return Shape(dict_allocations=microversion.at_least(request, 12),
                 traits=microversion.at_least(request, 17),
                 all_classes=microversion.at_least(request, 27),  # before: requested classes only
                 # nested trees in candidates, tree fields and every provider of the tree in summaries
                 tree=microversion.at_least(request, 29),
                 mappings=microversion.at_least(request, 34))


def _allocation_request(shape: Shape, areq: AllocationRequest) -> dict:
    if not shape.dict_allocations:
        return {"allocations": [{"resource_provider": {"uuid": uuid}, "resources": res}
                                for uuid, res in areq.allocations.items()]}
    body: dict = {"allocations": {uuid: {"resources": res} for uuid, res in areq.allocations.items()}}
    if shape.mappings:
        body["mappings"] = areq.mappings
    return body


def _summary(shape: Shape, p: Provider, requested: set[str]) -> dict:
    body: dict = {"resources": {rc: {"capacity": inv.capacity, "used": inv.used}
                                for rc, inv in p.inventory.items() if shape.all_classes or rc in requested}}
    if shape.traits:
        body["traits"] = sorted(p.traits)
    if shape.tree:
        body["parent_provider_uuid"] = p.parent_uuid
        body["root_provider_uuid"] = p.root_uuid
    return body


def _summaries(shape: Shape, found: CandidateResult) -> dict:
    if shape.tree:
        shown = list(found.providers)
    else:
        used = {uuid for areq in found.requests for uuid in areq.allocations}
        shown = [uuid for uuid in found.providers if uuid in used]
    return {uuid: _summary(shape, found.providers[uuid], found.requested_classes) for uuid in shown}


async def list_allocation_candidates(request: web.Request) -> web.Response:
    authorize(request, "allocation_candidates:list")
    microversion.require(request, 10)
    query = {name: request.query.getall(name) for name in request.query}
    wanted = request_groups.parse(query, microversion.version(request).minor)
    shape = _shape(request)
    body = await flat_candidates.answer(pool(request), wanted, shape)
    if body is not None:
        return web.Response(body=body, content_type="application/json")
    found = await tree_candidates.find(pool(request), wanted, distinct_mappings=shape.mappings,
                                       nested_aware=shape.tree)
    return dump({
        "allocation_requests": [_allocation_request(shape, areq) for areq in found.requests],
        "provider_summaries": _summaries(shape, found),
    })
