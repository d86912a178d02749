"""Allocations: a consumer's claim on providers' resources, written atomically.

The guarantee this module exists for: no provider is ever over-committed, however many
writers race. Every write runs in one transaction that locks the consumer row, then every
provider it touches (in id order, so writers never wait on each other in a cycle), then
measures usage under those locks, checks capacity, replaces the consumer's allocations and
bumps the generations of the consumer and of every provider whose allocations changed.
Usage is read after the locks are held, and READ COMMITTED gives each statement a fresh
snapshot, so the check always sees every claim committed before it."""

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


async def replace_allocations(pool: asyncpg.Pool, consumer_uuid: str,
                              allocations: dict[str, dict[str, int]], *, project_id: str,
                              user_id: str, consumer_type: str | None = None,
                              consumer_generation: object = ANY_GENERATION) -> int | None:
    """Make `allocations` (provider uuid -> class -> amount) the consumer's only allocations.

    All or nothing: raises ClaimRefused when any amount does not fit, UnknownProvider for a
    provider that does not exist, Conflict(placement.concurrent_update) when the consumer is
    not at `consumer_generation` (None: the caller expects a new consumer). Returns the
    consumer's new generation, or None when empty allocations removed the consumer."""
    try:
        allocations = {str(uuid.UUID(p)): res for p, res in allocations.items()}
    except ValueError:
        raise errors.InvalidInput(f"Malformed resource provider uuid in {sorted(allocations)}.") from None
    for provider, resources in allocations.items():
        for rc, amount in resources.items():
            if not isinstance(amount, int) or amount < 1:
                raise errors.InvalidInput(f"Allocation of {rc} on {provider} must be a positive "
                                          f"integer, got {amount!r}.")
    async with pool.acquire() as conn, conn.transaction():
        wanted = [p for p, res in allocations.items() if res]
        ids = {str(r["uuid"]): r["id"] for r in await conn.fetch(Q.providers_by_uuid, wanted)}
        missing = [p for p in wanted if p not in ids]
        if missing:
            raise UnknownProvider(f"Unable to allocate inventory: resource provider "
                                  f"{', '.join(missing)} could not be found.")

        consumer, is_new = await _lock_consumer(conn, consumer_uuid, project_id, user_id, consumer_type)
        _check_generation(consumer_uuid, consumer_generation, None if is_new else consumer["generation"])

        old_ids = [] if is_new else [r["resource_provider_id"]
                                     for r in await conn.fetch(Q.consumer_providers, consumer["id"])]
        locked = await conn.fetch(Q.lock_providers, sorted(set(ids.values()) | set(old_ids)))
        names = {r["id"]: f"{r['name']} ({r['uuid']})" for r in locked}
        gone = [p for p in wanted if ids[p] not in names]
        if gone:  # deleted while we waited for its lock
            raise UnknownProvider(f"Unable to allocate inventory: resource provider "
                                  f"{', '.join(gone)} could not be found.")

        pairs = [(ids[p], rc, amount) for p in wanted for rc, amount in allocations[p].items()]
        rows = await conn.fetch(Q.room_for_claim, [p[0] for p in pairs], [p[1] for p in pairs],
                                consumer["id"])
        amounts = {(p[0], p[1]): p[2] for p in pairs}
        problems = [_problem(r, amounts[(r["provider_id"], r["resource_class"])], names[r["provider_id"]])
                    for r in rows]
        problems = [p for p in problems if p]
        if problems:
            raise ClaimRefused("Unable to allocate inventory: " + "; ".join(problems))

        if old_ids:
            await conn.execute(Q.delete_allocations_of, consumer["id"])
        if pairs:
            await conn.execute(Q.insert_allocations, consumer["id"], [p[0] for p in pairs],
                               [p[1] for p in pairs], [p[2] for p in pairs])
        await conn.execute(Q.bump_providers, [r["id"] for r in locked])
        if not pairs:
            await conn.execute(Q.delete_consumer, consumer["id"])
            return None
        return await conn.fetchval(Q.update_consumer, consumer["id"], project_id, user_id, consumer_type)


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
