"""Allocation candidates over nested provider trees, for every request group at once.

One SQL statement (sql/queries/placement_candidates.sql `candidate_trees`) keeps only the
trees that have room, somewhere, for every requested class and pass the tree-wide filters;
for the common request (one unnumbered group of resources) that test is exact, so the limit
is applied there too and only `limit` trees ever reach Python. For each surviving tree we
then pick providers per group:

- the unnumbered group: each of its classes from one provider of the tree (different
  classes may come from different providers); `required`/forbidden traits are judged on the
  union of the traits of the providers used;
- each suffixed group: all of its classes from one provider, which has its traits itself;
  a resourceless group (1.36+) names a provider only for `same_subtree`;

and keep the combinations whose summed amounts fit each provider, that honour
`group_policy=isolate` and `same_subtree`. A provider is a member of an aggregate when it or
its root is. A sharing provider (trait MISC_SHARES_VIA_AGGREGATE) lends its inventory to
every tree with a provider in one of its aggregates: for those trees it is one more provider
any group may take resources from (it is outside the tree for `same_subtree`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NamedTuple

import asyncpg

from nova_async.common import errors
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.placement.request_groups import CandidateRequest, RequestGroup

Q = queries("placement_candidates")

# Enough for any real tree; it bounds the work a pathological wide tree can cause (placement
# has max_allocation_candidates for the same reason).
MAX_COMBINATIONS_PER_TREE = 10_000


class Inventory(NamedTuple):  # a tuple: thousands are built per request
    capacity: int
    used: int
    min_unit: int
    max_unit: int
    step_size: int

    def fits(self, amount: int) -> bool:
        return (self.min_unit <= amount <= self.max_unit and amount % self.step_size == 0
                and self.capacity - self.used >= amount)


@dataclass(slots=True)
class Provider:
    id: int
    uuid: str
    name: str
    generation: int
    parent_id: int | None
    root_id: int
    inventory: dict[str, Inventory]
    traits: frozenset[str]
    aggregates: frozenset[str]
    parent_uuid: str | None = None
    root_uuid: str = ""


@dataclass(frozen=True, slots=True)
class AllocationRequest:
    allocations: dict[str, dict[str, int]]   # provider uuid -> class -> amount
    mappings: dict[str, list[str]]            # group suffix -> provider uuids


@dataclass
class CandidateResult:
    requests: list[AllocationRequest]
    # the providers of every tree that gave at least one request, in tree order
    providers: dict[str, Provider]
    requested_classes: set[str]


def _provider(row: asyncpg.Record) -> Provider:
    inventory = {rc: Inventory(*vals) for rc, *vals in zip(row["classes"], row["capacity"], row["used"],
                                                            row["min_unit"], row["max_unit"],
                                                            row["step_size"])}
    return Provider(row["id"], row["uuid"], row["name"], row["generation"], row["parent_id"],
                    row["root_id"], inventory, frozenset(row["traits"]), frozenset(row["aggregates"]))


def _is_simple(req: CandidateRequest) -> bool:
    """Whether the SQL tree filter alone decides the answer (so the limit can go there)."""
    g = req.unnumbered
    return (len(req.groups) == 1 and g is not None and not g.required and not g.forbidden
            and not g.member_of and not g.not_member_of)


async def check_traits(conn: asyncpg.Connection, req: CandidateRequest) -> None:
    names = req.trait_names
    if not names:
        return
    known = {r["name"] for r in await conn.fetch(Q.known_traits, sorted(names))}
    if unknown := sorted(names - known):
        raise errors.InvalidInput(f"No such trait(s): {', '.join(unknown)}.",
                                  code="placement.query.bad_value")


async def find(pool: Pool, req: CandidateRequest, *, distinct_mappings: bool = True,
               nested_aware: bool = True) -> CandidateResult:
    """`distinct_mappings`: two requests that allocate the same but map groups differently
    are two candidates (1.34+, where clients see mappings), else one. Without `nested_aware`
    (before 1.29) a request may only use root providers, as clients of then expect.

    One connection, one read-only snapshot for every statement. JIT is off: the tree query's
    cost estimate crosses PostgreSQL's JIT threshold at a few thousand providers, and
    compiling costs more than the query (~25 ms of ~55 at 5,000). Plans are made for the
    actual parameters: asyncpg's prepared statements would otherwise switch to a generic plan
    after five runs, which cannot know whether there is a limit to stop early at."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        await conn.execute("SET LOCAL jit = off; SET LOCAL plan_cache_mode = force_custom_plan")
        return await _find(conn, req, distinct_mappings, nested_aware)


async def _find(conn: asyncpg.Connection, req: CandidateRequest, distinct_mappings: bool,
                nested_aware: bool) -> CandidateResult:
    await check_traits(conn, req)
    sharing = await _sharing_providers(conn)
    smallest: dict[str, int] = {}
    askers: dict[str, int] = {}
    for g in req.groups:
        for rc, amount in g.resources.items():
            smallest[rc] = min(amount, smallest.get(rc, amount))
            askers[rc] = askers.get(rc, 0) + 1
    classes = sorted(smallest)
    unnumbered = req.unnumbered
    args = (classes, [smallest[rc] for rc in classes], [askers[rc] == 1 for rc in classes],
            unnumbered.in_tree if unnumbered else None,
            sorted(req.root_required), sorted(req.root_forbidden))
    # a sharing provider may bring the trait or aggregate, so then the tree cannot be judged alone
    somewhere_traits = [] if sharing else sorted(
        {t for g in req.groups for s in g.required if len(s) == 1 for t in s})
    somewhere_aggs = [] if sharing else sorted(
        {a for g in req.groups for s in g.member_of if len(s) == 1 for a in s})
    need_aggs = any(g.member_of or g.not_member_of for g in req.groups)

    async def fetch(tree_limit: int | None) -> list[asyncpg.Record]:
        return await conn.fetch(Q.candidate_trees, *args, tree_limit, somewhere_traits,
                                somewhere_aggs, need_aggs, [sp.id for sp, _ in sharing])

    # SQL decides the simple request exactly, so its limit is exact; otherwise over-fetch and
    # fall back to every tree only when Python rejected too many of them
    tree_limit = None
    if req.limit is not None:
        tree_limit = req.limit if _is_simple(req) and nested_aware else max(4 * req.limit, 100)
    rows = await fetch(tree_limit)
    result = _assemble(rows, sharing, req, classes, distinct_mappings, nested_aware)
    if (tree_limit is not None and len(result.requests) < req.limit
            and len({r["root_id"] for r in rows}) >= tree_limit):
        result = _assemble(await fetch(None), sharing, req, classes, distinct_mappings, nested_aware)
    return result


async def _sharing_providers(conn: asyncpg.Connection) -> list[tuple[Provider, set[int]]]:
    """Each sharing provider with the roots of the trees it lends to."""
    ids = [r["id"] for r in await conn.fetch(Q.sharing_provider_ids)]
    if not ids:
        return []
    found = []
    for row in await conn.fetch(Q.sharing_providers, ids):
        p = _provider(row)
        p.root_uuid, p.parent_uuid = row["root_uuid"], row["parent_uuid"]
        found.append((p, set(row["anchors"])))
    return found


def _assemble(rows: list[asyncpg.Record], sharing: list[tuple[Provider, set[int]]],
              req: CandidateRequest, classes: list[str], distinct_mappings: bool,
              nested_aware: bool) -> CandidateResult:
    trees: dict[int, list[Provider]] = {}
    for row in rows:
        trees.setdefault(row["root_id"], []).append(_provider(row))
    result = CandidateResult([], {}, set(classes))
    seen: set[tuple] = set()  # a request of sharing providers alone may come from several trees
    for root_id, tree in trees.items():
        extras = [sp for sp, anchors in sharing if root_id in anchors]
        found = _tree_requests(tree, extras, req, distinct_mappings)
        if not nested_aware and (len(tree) > 1 or extras):
            roots = {p.uuid for p in (*tree, *extras) if p.parent_id is None}
            found = [a for a in found if roots.issuperset(a.allocations)]
        if sharing:
            found = [a for a in found if _key(a, distinct_mappings) not in seen]
            seen.update(_key(a, distinct_mappings) for a in found)
        if not found:
            continue
        if req.limit is not None:
            found = found[:req.limit - len(result.requests)]
        result.requests.extend(found)
        for p in tree:
            result.providers[p.uuid] = p
        for p in extras:
            if any(p.uuid in a.allocations for a in found):
                result.providers[p.uuid] = p
        if req.limit is not None and len(result.requests) >= req.limit:
            break
    return result


def _link(tree: list[Provider]) -> dict[int, Provider]:
    by_id = {p.id: p for p in tree}
    root = by_id[tree[0].root_id]
    for p in tree:
        p.parent_uuid = by_id[p.parent_id].uuid if p.parent_id is not None else None
        p.root_uuid = root.uuid
    return by_id


def _in_aggregates(p: Provider, root: Provider, g: RequestGroup) -> bool:
    if not (g.member_of or g.not_member_of):
        return True
    aggs = p.aggregates | root.aggregates
    return all(s & aggs for s in g.member_of) and not (g.not_member_of & aggs)


def _is_bare(g: RequestGroup) -> bool:
    """An unnumbered group that only says `in_tree` (its resources all in numbered groups):
    it narrows the trees but names no provider of its own."""
    return not (g.suffix or g.resources or g.required or g.forbidden or g.member_of or g.not_member_of)


def _has_traits(traits: frozenset[str], g: RequestGroup) -> bool:
    return all(s & traits for s in g.required) and not (g.forbidden & traits)


def _key(a: AllocationRequest, distinct_mappings: bool) -> tuple:
    return (tuple(sorted((u, tuple(sorted(r.items()))) for u, r in a.allocations.items())),
            tuple(sorted((s, tuple(v)) for s, v in a.mappings.items())) if distinct_mappings else ())


def _group_options(tree: list[Provider], root: Provider, g: RequestGroup) -> list[dict[str, Provider]]:
    """Ways to satisfy one group in this tree: each maps a class (or "" for a resourceless
    group) to the provider that supplies it."""
    if g.in_tree is not None and not any(p.uuid == g.in_tree for p in tree):
        return []
    if _is_bare(g):
        return [{}]
    # a provider from outside the tree (a sharing one) is its own root for member_of
    eligible = [p for p in tree if _in_aggregates(p, root if p.root_id == root.id else p, g)]
    if not g.resources:
        return [{"": p} for p in eligible if _has_traits(p.traits, g)]
    if g.suffix:
        return [{rc: p for rc in g.resources} for p in eligible
                if _has_traits(p.traits, g)
                and all(rc in p.inventory and p.inventory[rc].fits(n) for rc, n in g.resources.items())]
    per_class = [[p for p in eligible if rc in p.inventory and p.inventory[rc].fits(n)]
                 for rc, n in g.resources.items()]
    options = []
    for chosen in itertools.islice(itertools.product(*per_class), MAX_COMBINATIONS_PER_TREE):
        traits = frozenset().union(*(p.traits for p in chosen))
        if _has_traits(traits, g):
            options.append(dict(zip(g.resources, chosen)))
    return options


def _within_subtree(providers: list[Provider], by_id: dict[int, Provider]) -> bool:
    """Whether one of `providers` is an ancestor (or itself) of all the others."""
    def ancestors(p: Provider) -> set[int]:
        seen = {p.id}
        while p.parent_id in by_id:
            p = by_id[p.parent_id]
            seen.add(p.id)
        return seen
    lines = [ancestors(p) for p in providers]
    return any(all(top.id in line for line in lines) for top in providers)


def _lone_provider_requests(p: Provider, req: CandidateRequest) -> list[AllocationRequest]:
    """The common flat case, a tree of one provider: every group must take it, so there is
    one request or none, found without enumerating anything."""
    p.root_uuid = p.uuid
    totals: dict[str, int] = {}
    resourceful_suffixed = 0
    for g in req.groups:
        if (g.in_tree is not None and g.in_tree != p.uuid) or not _has_traits(p.traits, g) \
                or not _in_aggregates(p, p, g):
            return []
        resourceful_suffixed += bool(g.suffix and g.resources)
        for rc, n in g.resources.items():
            inv = p.inventory.get(rc)
            if inv is None or not inv.fits(n):
                return []
            totals[rc] = totals.get(rc, 0) + n
    if req.group_policy == "isolate" and resourceful_suffixed > 1:
        return []
    if any(free(p, rc) < n for rc, n in totals.items()):
        return []
    return [AllocationRequest({p.uuid: totals}, {g.suffix: [p.uuid] for g in req.groups if not _is_bare(g)})]


def _tree_requests(tree: list[Provider], extras: list[Provider], req: CandidateRequest,
                   distinct_mappings: bool) -> list[AllocationRequest]:
    """Allocation requests from `tree`, with the sharing providers `extras` lending to it."""
    if len(tree) == 1 and not extras:
        return _lone_provider_requests(tree[0], req)
    by_id = _link(tree)
    root = by_id[tree[0].root_id]
    everyone = tree + extras
    by_id.update((p.id, p) for p in extras)
    by_uuid = {p.uuid: p for p in everyone}
    options = [_group_options(everyone, root, g) for g in req.groups]
    if not all(options):
        return []
    found: dict[tuple, AllocationRequest] = {}
    for combo in itertools.islice(itertools.product(*options), MAX_COMBINATIONS_PER_TREE):
        chosen = dict(zip((g.suffix for g in req.groups), combo))
        if req.group_policy == "isolate":
            used = [next(iter(c.values())).id for g, c in zip(req.groups, combo) if g.suffix and g.resources]
            if len(used) != len(set(used)):
                continue
        if any(not _within_subtree([next(iter(chosen[s].values())) for s in subtree], by_id)
               for subtree in req.same_subtree):
            continue
        allocations: dict[str, dict[str, int]] = {}
        for g, c in zip(req.groups, combo):
            for rc, amount in g.resources.items():
                per = allocations.setdefault(c[rc].uuid, {})
                per[rc] = per.get(rc, 0) + amount
        if any(free(by_uuid[uuid], rc) < n for uuid, res in allocations.items() for rc, n in res.items()):
            continue
        allocations = {u: allocations[u] for u in sorted(allocations, key=lambda u: by_uuid[u].id)}
        mappings = {g.suffix: sorted({p.uuid for p in c.values()}) for g, c in zip(req.groups, combo) if c}
        areq = AllocationRequest(allocations, mappings)
        found.setdefault(_key(areq, distinct_mappings), areq)
    return list(found.values())


def free(p: Provider, rc: str) -> int:
    inv = p.inventory[rc]
    return inv.capacity - inv.used
