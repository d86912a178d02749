"""`GET /allocation_candidates` for the common case, answered in one statement.

Most clouds have flat providers (a compute node is one provider, no children, nothing shared)
and most requests are one unnumbered group. Then a candidate is simply a provider with room
for every requested class, every allocation request has the same shape with only the
provider's uuid changing, and the response body's two lists can be built inside PostgreSQL
(the function placement_flat_candidates of sql/0028, which placement_candidates.sql
`flat_candidates` calls) and passed to the client as bytes, joined here in one copy: no rows
decoded, no Python objects per provider, one round trip. Each provider's summary is kept ready
as text by triggers (provider_summaries, sql/0025), so a request without limit mostly
concatenates stored strings.

Whether the world is flat is decided by the same statement, in the same snapshot; when it is
not (or the request needs more than this path speaks), `answer` returns None and the caller
runs the general tree search (tree_candidates), which gives the same answers, only slower."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import msgspec

from nova_async.common import errors
from nova_async.db.queries import queries
from nova_async.placement.request_groups import CandidateRequest

Q = queries("placement_candidates")
_HOLE = "\x00"  # where the provider's uuid goes in the allocation request template


@dataclass(frozen=True)
class Shape:
    """What the microversion puts in the response."""

    dict_allocations: bool   # 1.12+: allocations keyed by provider, not a list
    traits: bool             # 1.17+: summaries list the provider's traits
    all_classes: bool        # 1.27+: summaries show every class, not only the requested ones
    tree: bool               # 1.29+: summaries name parent and root
    mappings: bool           # 1.34+: which group each provider satisfied


def _template(shape: Shape, resources: dict[str, int]) -> list[str]:
    """One allocation request as text, cut where the provider's uuid goes: two pieces, or three
    when it names the provider twice (1.34+, in mappings), which is all the function speaks."""
    if shape.dict_allocations:
        body: dict = {"allocations": {_HOLE: {"resources": resources}}}
        if shape.mappings:
            body["mappings"] = {"": [_HOLE]}
    else:
        body = {"allocations": [{"resource_provider": {"uuid": _HOLE}, "resources": resources}]}
    pieces = msgspec.json.encode(body).decode().split("\\u0000")
    assert len(pieces) in (2, 3), pieces
    return pieces


async def answer(pool: asyncpg.Pool, req: CandidateRequest, shape: Shape) -> bytes | None:
    """The response body, or None when this path cannot answer the request (the caller then
    asks tree_candidates)."""
    if len(req.groups) != 1 or req.same_subtree:
        return None
    g = req.groups[0]
    if (g.suffix or not g.resources or g.in_tree is not None or len(g.member_of) > 1
            or any(len(s) != 1 for s in g.required)):
        return None
    required = sorted({next(iter(s)) for s in g.required} | req.root_required)
    forbidden = sorted(g.forbidden | req.root_forbidden)
    member_of = sorted(next(iter(g.member_of), frozenset()))
    classes = list(g.resources)
    template = _template(shape, g.resources)
    rows = await pool.fetch(
        Q.flat_candidates, classes, [g.resources[rc] for rc in classes], shape.all_classes,
        required, forbidden, bool(required or forbidden or member_of or g.not_member_of), member_of,
        sorted(g.not_member_of), req.limit, template, shape.traits, shape.tree)
    first = rows[0]
    if first["unknown"]:
        raise errors.InvalidInput(f"No such trait(s): {', '.join(sorted(set(first['unknown'])))}.",
                                  code="placement.query.bad_value")
    if not first["flat"]:
        return None
    if first["part"] is None:
        return b'{"allocation_requests":[],"provider_summaries":{}}'
    # the two lists come in pieces, the requests less the first one's head and the last one's
    # tail: the body is put together in one copy
    requests = [r["piece"] for r in rows if r["part"] == 1]
    summaries = [r["piece"] for r in rows if r["part"] == 2]
    return b"".join((b'{"allocation_requests":[', template[0].encode(), *requests, template[-1].encode(),
                     b'],"provider_summaries":{', *summaries, b"}}"))
