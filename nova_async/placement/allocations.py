"""Allocations: a consumer's claim on providers' resources, written atomically.

The guarantee this module exists for: no provider is ever over-committed, however many
writers race. Every write — one consumer's PUT or a POST naming several — is one statement
(the database function placement_write_allocations, sql/functions/), one transaction that locks the consumer rows (in uuid order), then every provider they touch (in
id order, so writers never wait on each other in a cycle), then per consumer measures usage
under those locks, checks capacity, replaces its allocations, and finally bumps the
generations of the consumers and of every provider whose allocations changed. Usage is read
after the locks are held, and READ COMMITTED gives each statement of the function a fresh
snapshot, so the check always sees every claim committed before it (and, in a batch, the consumers written
before it in the same transaction).

Also here: the reading side — a provider's allocations by consumer, a project's usage."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import asyncpg

from nova_async.common import errors
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("placement")

# "the caller does not care about the consumer's generation" (the bus claim, old microversions)
ANY_GENERATION = object()


class ClaimRefused(errors.Conflict):
    """No room for the claim (or it breaks min_unit/max_unit/step_size); nothing was written."""


class UnknownProvider(errors.InvalidInput):
    code = "placement.resource_provider.not_found"


class HolderGone(errors.Conflict):
    """The write was for someone who no longer holds the instance (placement_holders_present);
    nothing was written."""

    code = "placement.holder_gone"


# (PostgreSQL backend pid, session advisory lock key): a write made for whoever holds an
# instance stands only while that backend holds that lock (sql/functions/placement_holders_present.sql).
Holder = tuple[int, int]


@dataclass(frozen=True)
class ConsumerAllocations:
    project_id: str | None = None
    user_id: str | None = None
    generation: int | None = None
    consumer_type: str | None = None
    # provider uuid -> (provider generation, resource class -> amount)
    providers: dict[str, tuple[int, dict[str, int]]] = field(default_factory=dict)


async def get_allocations(pool: Pool, consumer_uuid: str) -> ConsumerAllocations:
    rows = await pool.fetch(Q.allocations_of, consumer_uuid)
    if not rows:
        return ConsumerAllocations()
    providers: dict[str, tuple[int, dict[str, int]]] = {}
    for r in rows:
        entry = providers.setdefault(str(r["provider_uuid"]), (r["provider_generation"], {}))
        entry[1][r["resource_class"]] = r["used"]
    first = rows[0]
    return ConsumerAllocations(project_id=first["project_id"], user_id=first["user_id"],
                               generation=first["consumer_generation"],
                               consumer_type=first["consumer_type"], providers=providers)


@dataclass(frozen=True)
class ConsumerWrite:
    """One consumer's wanted allocations (provider uuid -> class -> amount; empty: remove them)."""

    consumer_uuid: str
    allocations: dict[str, dict[str, int]]
    project_id: str
    user_id: str
    consumer_type: str | None = None
    consumer_generation: object = ANY_GENERATION


async def replace_allocations(pool: Pool, consumer_uuid: str,
                              allocations: dict[str, dict[str, int]], *, project_id: str,
                              user_id: str, consumer_type: str | None = None,
                              consumer_generation: object = ANY_GENERATION) -> int | None:
    """Make `allocations` (provider uuid -> class -> amount) the consumer's only allocations.

    All or nothing: raises ClaimRefused when any amount does not fit, UnknownProvider for a
    provider that does not exist, Conflict(placement.concurrent_update) when the consumer is
    not at `consumer_generation` (None: the caller expects a new consumer). Returns the
    consumer's new generation, or None when empty allocations removed the consumer."""
    write = ConsumerWrite(consumer_uuid, allocations, project_id, user_id, consumer_type,
                          consumer_generation)
    return (await replace_many(pool, [write]))[consumer_uuid]


async def replace_many(pool: Pool, writes: list[ConsumerWrite], *,
                       holders: Sequence[Holder] = ()) -> dict[str, int | None]:
    """Several consumers' allocations replaced in one transaction (`POST /allocations`): either
    every consumer gets what it asked for or nothing changes. Capacity is checked consumer by
    consumer after the earlier ones were written, so the batch as a whole must fit.

    The whole write is one statement, the function placement_write_allocations (sql/functions/): it
    locks consumers by uuid, then every provider involved by id — one global order, so batches
    and single claims never wait on each other in a cycle — checks, writes and bumps, all in
    one round trip. A refusal is an exception raised in the database, which undoes the lot.
    With `holders`, it is undone too (HolderGone) unless every one still holds its lock once
    the consumers are locked."""
    writes = [_normalised(w) for w in writes]
    rows: list[tuple[int, str, str, int]] = [
        (k, provider, rc, amount)
        for k, w in enumerate(writes, 1) for provider, res in w.allocations.items()
        for rc, amount in res.items()]
    args = [[w.consumer_uuid for w in writes], [w.project_id for w in writes],
            [w.user_id for w in writes], [w.consumer_type for w in writes],
            [w.consumer_generation is not ANY_GENERATION for w in writes],
            [None if w.consumer_generation is ANY_GENERATION else w.consumer_generation for w in writes],
            [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]]
    try:
        if holders:
            written = await pool.fetch(Q.write_allocations_held, *args,
                                       [pid for pid, _ in holders], [k for _, k in holders])
        else:
            written = await pool.fetch(Q.write_allocations, *args)
    except asyncpg.RaiseError as exc:
        raise _refusal(exc) from None
    return {str(r["written_consumer"]): r["new_generation"] for r in written}


def _refusal(exc: asyncpg.RaiseError) -> errors.NovaAsyncError:
    """The error a refusal raised by placement_write_allocations stands for (its DETAIL)."""
    kind = getattr(exc, "detail", None)
    if kind == "refused":
        return ClaimRefused(exc.message)
    if kind == UnknownProvider.code:
        return UnknownProvider(exc.message)
    if kind == HolderGone.code:
        return HolderGone(exc.message)
    if kind == "placement.concurrent_update":
        return errors.Conflict(exc.message, code=kind)
    return errors.NovaAsyncError(f"placement_write_allocations: {exc.message}")


def _normalised(w: ConsumerWrite) -> ConsumerWrite:
    try:
        allocations = {str(uuid.UUID(p)): res for p, res in w.allocations.items()}
    except ValueError:
        raise errors.InvalidInput(f"Malformed resource provider uuid in {sorted(w.allocations)}.") from None
    for provider, resources in allocations.items():
        for rc, amount in resources.items():
            if not isinstance(amount, int) or amount < 1:
                raise errors.InvalidInput(f"Allocation of {rc} on {provider} must be a positive "
                                          f"integer, got {amount!r}.")
    return ConsumerWrite(str(uuid.UUID(w.consumer_uuid)), allocations, w.project_id, w.user_id,
                         w.consumer_type, w.consumer_generation)


async def delete_allocations(pool: Pool, consumer_uuid: str, *, holder: Holder | None = None) -> bool:
    """Remove every allocation of the consumer, and the consumer; False if it had none. With
    `holder`, only while it holds its lock (else HolderGone, nothing removed): what it
    claimed may have been replaced by whoever took the instance over.

    One statement, the function placement_delete_allocations (sql/functions/): the providers
    are locked (a claim on them waits, then counts the freed room) but their generations stay,
    as upstream's DELETE leaves them: giving room back cannot make a writer's view of the
    provider wrong."""
    pids, keys = ([holder[0]], [holder[1]]) if holder is not None else ([], [])
    try:
        held_on = await pool.fetchval(Q.delete_allocations, consumer_uuid, pids, keys)
    except asyncpg.RaiseError as exc:
        raise _refusal(exc) from None
    return bool(held_on)


async def holding(pool: Pool, consumer_uuids: list[str]) -> list[str]:
    """Those of `consumer_uuids` that hold allocations (a consumer goes with its last one)."""
    return [str(r["uuid"]) for r in await pool.fetch(Q.consumers_among, consumer_uuids)]


# --- reading allocations from the other side ----------------------------------------------

QA = queries("placement_allocations")


async def provider_allocations(pool: Pool, provider_uuid: str) -> tuple[int, dict[str, dict[str, int]]]:
    """The provider's generation and, per consumer uuid, what that consumer holds on it; read in
    one snapshot so the generation matches the allocations."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        row = await conn.fetchrow(Q.get_provider, provider_uuid)
        if row is None:
            raise errors.NotFound(f"No resource provider with uuid {provider_uuid} found.",
                                  code="placement.resource_provider.not_found")
        found: dict[str, dict[str, int]] = {}
        for r in await conn.fetch(QA.provider_allocations, row["id"]):
            found.setdefault(str(r["consumer_uuid"]), {})[r["resource_class"]] = r["used"]
    return row["generation"], found


@dataclass(frozen=True)
class TypeUsage:
    consumers: int
    resources: dict[str, int]


async def project_usages(pool: Pool, project_id: str,
                         user_id: str | None = None) -> dict[str | None, TypeUsage]:
    """What a project (or one of its users) holds, per consumer type (None: untyped)."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        counts = {r["consumer_type"]: r["consumers"]
                  for r in await conn.fetch(QA.project_consumer_counts, project_id, user_id)}
        rows = await conn.fetch(QA.project_usages, project_id, user_id)
    usages = {t: TypeUsage(n, {}) for t, n in counts.items()}
    for r in rows:
        usages.setdefault(r["consumer_type"], TypeUsage(0, {})).resources[r["resource_class"]] = r["used"]
    return usages
