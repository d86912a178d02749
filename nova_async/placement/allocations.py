"""Allocations: a consumer's claim on providers' resources, written atomically.

The guarantee this module exists for: no provider is ever over-committed, however many
writers race. Every write — one consumer's PUT or a POST naming several — runs in one
transaction that locks the consumer rows (in uuid order), then every provider they touch (in
id order, so writers never wait on each other in a cycle), then per consumer measures usage
under those locks, checks capacity, replaces its allocations, and finally bumps the
generations of the consumers and of every provider whose allocations changed. Usage is read
after the locks are held, and READ COMMITTED gives each statement a fresh snapshot, so the
check always sees every claim committed before it (and, in a batch, the consumers written
before it in the same transaction).

Also here: the reading side — a provider's allocations by consumer, a project's usage."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import asyncpg

from nova_async.common import errors
from nova_async.db.queries import queries

Q = queries("placement")

# "the caller does not care about the consumer's generation" (the bus claim, old microversions)
ANY_GENERATION = object()


class ClaimRefused(errors.Conflict):
    """No room for the claim (or it breaks min_unit/max_unit/step_size); nothing was written."""


class UnknownProvider(errors.InvalidInput):
    code = "placement.resource_provider.not_found"


@dataclass(frozen=True)
class ConsumerAllocations:
    project_id: str | None = None
    user_id: str | None = None
    generation: int | None = None
    consumer_type: str | None = None
    # provider uuid -> (provider generation, resource class -> amount)
    providers: dict[str, tuple[int, dict[str, int]]] = field(default_factory=dict)


async def get_allocations(pool: asyncpg.Pool, consumer_uuid: str) -> ConsumerAllocations:
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


async def replace_allocations(pool: asyncpg.Pool, consumer_uuid: str,
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


async def replace_many(pool: asyncpg.Pool, writes: list[ConsumerWrite]) -> dict[str, int | None]:
    """Several consumers' allocations replaced in one transaction (`POST /allocations`): either
    every consumer gets what it asked for or nothing changes. Capacity is checked consumer by
    consumer after the earlier ones were written, so the batch as a whole must fit.

    Locks are taken in one global order — consumers by uuid, then every provider involved by
    id — so batches and single claims never wait on each other in a cycle."""
    writes = [_normalised(w) for w in writes]
    async with pool.acquire() as conn, conn.transaction():
        wanted = sorted({p for w in writes for p, res in w.allocations.items() if res})
        ids = {str(r["uuid"]): r["id"] for r in await conn.fetch(Q.providers_by_uuid, wanted)}
        _refuse_missing([p for p in wanted if p not in ids])

        consumers: dict[str, tuple[asyncpg.Record, bool]] = {}
        old_ids: set[int] = set()
        for w in sorted(writes, key=lambda w: w.consumer_uuid):
            consumer, is_new = await _lock_consumer(conn, w.consumer_uuid, w.project_id, w.user_id,
                                                    w.consumer_type)
            _check_generation(w.consumer_uuid, w.consumer_generation,
                              None if is_new else consumer["generation"])
            consumers[w.consumer_uuid] = (consumer, is_new)
            if not is_new:
                old_ids |= {r["resource_provider_id"]
                            for r in await conn.fetch(Q.consumer_providers, consumer["id"])}

        locked = await conn.fetch(Q.lock_providers, sorted(set(ids.values()) | old_ids))
        names = {r["id"]: f"{r['name']} ({r['uuid']})" for r in locked}
        _refuse_missing([p for p in wanted if ids[p] not in names])  # deleted while we waited

        generations = {w.consumer_uuid: await _write_one(conn, w, consumers[w.consumer_uuid][0],
                                                         ids, names)
                       for w in writes}
        await conn.execute(Q.bump_providers, [r["id"] for r in locked])
        return generations


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


def _refuse_missing(missing: list[str]) -> None:
    if missing:
        raise UnknownProvider(f"Unable to allocate inventory: resource provider "
                              f"{', '.join(missing)} could not be found.")


async def _write_one(conn: asyncpg.Connection, w: ConsumerWrite, consumer: asyncpg.Record,
                     ids: dict[str, int], names: dict[int, str]) -> int | None:
    """Replace one consumer's allocations; its providers are locked already."""
    pairs = [(ids[p], rc, amount) for p, res in w.allocations.items() for rc, amount in res.items()]
    rows = await conn.fetch(Q.room_for_claim, [p[0] for p in pairs], [p[1] for p in pairs],
                            consumer["id"])
    amounts = {(p[0], p[1]): p[2] for p in pairs}
    problems = [_problem(r, amounts[(r["provider_id"], r["resource_class"])], names[r["provider_id"]])
                for r in rows]
    problems = [p for p in problems if p]
    if problems:
        raise ClaimRefused("Unable to allocate inventory: " + "; ".join(problems))

    await conn.execute(Q.delete_allocations_of, consumer["id"])
    if not pairs:
        await conn.execute(Q.delete_consumer, consumer["id"])
        return None
    await conn.execute(Q.insert_allocations, consumer["id"], [p[0] for p in pairs],
                       [p[1] for p in pairs], [p[2] for p in pairs])
    return await conn.fetchval(Q.update_consumer, consumer["id"], w.project_id, w.user_id,
                               w.consumer_type)


async def delete_allocations(pool: asyncpg.Pool, consumer_uuid: str) -> bool:
    """Remove every allocation of the consumer, and the consumer; False if it had none."""
    async with pool.acquire() as conn, conn.transaction():
        consumer = await conn.fetchrow(Q.lock_consumer, consumer_uuid)
        if consumer is None:
            return False
        old_ids = [r["resource_provider_id"] for r in await conn.fetch(Q.consumer_providers, consumer["id"])]
        await conn.fetch(Q.lock_providers, sorted(old_ids))
        await conn.execute(Q.delete_allocations_of, consumer["id"])
        await conn.execute(Q.bump_providers, old_ids)
        await conn.execute(Q.delete_consumer, consumer["id"])
        return bool(old_ids)


async def _lock_consumer(conn: asyncpg.Connection, consumer_uuid: str, project_id: str, user_id: str,
                         consumer_type: str | None) -> tuple[asyncpg.Record, bool]:
    """The consumer's row, locked, created if need be; and whether it was created."""
    for _ in range(5):
        created = await conn.fetchrow(Q.insert_consumer, consumer_uuid, project_id, user_id, consumer_type)
        if created is not None:
            return created, True
        existing = await conn.fetchrow(Q.lock_consumer, consumer_uuid)
        if existing is not None:
            return existing, False
        # it existed, then a concurrent delete removed it while we waited for its lock:
        # the delete has committed, so inserting again goes through
    raise errors.Conflict(f"consumer {consumer_uuid} keeps changing under us; try again.",
                          code="placement.concurrent_update")


def _check_generation(consumer_uuid: str, expected: object, actual: int | None) -> None:
    if expected is ANY_GENERATION or expected == actual:
        return
    if expected is None:
        text = f"consumer {consumer_uuid} already exists (generation {actual}) but none was expected"
    elif actual is None:
        text = f"consumer {consumer_uuid} does not exist but generation {expected} was given"
    else:
        text = f"consumer {consumer_uuid} is at generation {actual}, not {expected}"
    raise errors.Conflict(f"consumer generation conflict: {text}.", code="placement.concurrent_update")


def _problem(row: asyncpg.Record, amount: int, provider: str) -> str | None:
    """Why `amount` of the row's class does not fit on its provider, or None when it does."""
    rc = row["resource_class"]
    if row["total"] is None:
        return f"resource provider {provider} has no inventory of {rc}"
    if amount < row["min_unit"] or amount > row["max_unit"] or amount % row["step_size"]:
        return (f"{rc} {amount} on resource provider {provider} violates min_unit {row['min_unit']}, "
                f"max_unit {row['max_unit']} or step_size {row['step_size']}")
    capacity = int((row["total"] - row["reserved"]) * row["allocation_ratio"])
    free = capacity - row["used"]
    if amount > free:
        return (f"{rc} {amount} requested on resource provider {provider} but only {max(free, 0)} "
                f"of {capacity} is free")
    return None


# --- reading allocations from the other side ----------------------------------------------

QA = queries("placement_allocations")


async def provider_allocations(pool: asyncpg.Pool, provider_uuid: str) -> tuple[int, dict[str, dict[str, int]]]:
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


async def project_usages(pool: asyncpg.Pool, project_id: str,
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
