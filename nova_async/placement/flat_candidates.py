"""`GET /allocation_candidates` for the common case, answered in one statement.

Most clouds have flat providers (a compute node is one provider, no children, nothing shared)
and most requests are one unnumbered group. Then a candidate is simply a provider with room
for every requested class, and every allocation request has the same shape with only the
provider's uuid changing. PostgreSQL finds them (the function placement_flat_candidate_rows in
sql/functions/, which placement_candidates.sql `flat_candidates` calls: per provider, one
comparison against the room its summary row keeps and one against its trait ids) and sends
one row per candidate, its uuid and its provider_summaries entry as bytes, kept ready by
triggers (provider_summaries, sql/functions/placement_summary_*.sql); the body is joined here from those, one join per list.

Whether the world is flat is decided by the same call, in the same snapshot; when it is
not (or the request needs more than this path speaks), `answer` returns None and the caller
runs the general tree search (tree_candidates), which gives the same answers, only slower."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from nova_async.common import errors
from nova_async.db.pool import Pool
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
    when it names the provider twice (1.34+, in mappings)."""
    if shape.dict_allocations:
        body: dict = {"allocations": {_HOLE: {"resources": resources}}}
        if shape.mappings:
            body["mappings"] = {"": [_HOLE]}
    else:
        body = {"allocations": [{"resource_provider": {"uuid": _HOLE}, "resources": resources}]}
    pieces = msgspec.json.encode(body).decode().split("\\u0000")
    assert len(pieces) in (2, 3), pieces
    return pieces


async def answer(pool: Pool, req: CandidateRequest, shape: Shape) -> bytes | None:
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
    rows = await pool.fetch(
        Q.flat_candidates, classes, [g.resources[rc] for rc in classes], shape.all_classes,
        required, forbidden, bool(required or forbidden or member_of or g.not_member_of), member_of,
        sorted(g.not_member_of), req.limit, shape.traits, shape.tree)
    first = rows[0]
    if first["unknown"]:
        raise errors.InvalidInput(f"No such trait(s): {', '.join(sorted(set(first['unknown'])))}.",
                                  code="placement.query.bad_value")
    if not first["flat"]:
        return None
    # each candidate's row is (flat, unknown, uuid, entry): every allocation request is the
    # template around the uuid, and the summary entries come ready as bytes
    candidates = rows[1:]
    uuids = [r[2] for r in candidates]
    pieces = _template(shape, g.resources)
    if len(pieces) == 2:
        head, tail = pieces
        requests = ",".join([head + u + tail for u in uuids])
    else:
        head, middle, tail = pieces
        requests = ",".join([head + u + middle + u + tail for u in uuids])
    return b"".join((b'{"allocation_requests":[', requests.encode(), b'],"provider_summaries":{',
                     b",".join([r[3] for r in candidates]), b"}}"))
