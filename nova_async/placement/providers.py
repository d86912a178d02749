"""Resource providers and what they hold: the domain behind the provider, inventory and usage
endpoints and behind a compute host's periodic EnsureProvider.

Every write locks the provider row first and bumps its generation when something changed, so
inventory updates serialise with claims on the same provider (allocations.py takes the same
lock) and clients holding a stale generation get `placement.concurrent_update`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg

from nova_async.common import errors
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("placement")
QA = queries("placement_allocations")  # provider filters and tree moves

MAX_INT = 2**31 - 1


@dataclass(frozen=True)
class Provider:
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str


@dataclass(frozen=True)
class Inventory:
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0


def _provider(row: asyncpg.Record) -> Provider:
    parent = row["parent_uuid"]
    return Provider(uuid=str(row["uuid"]), name=row["name"], generation=row["generation"],
                    parent_uuid=str(parent) if parent else None, root_uuid=str(row["root_uuid"]))


def _inventory(row: asyncpg.Record) -> Inventory:
    return Inventory(total=row["total"], reserved=row["reserved"], min_unit=row["min_unit"],
                     max_unit=row["max_unit"], step_size=row["step_size"],
                     allocation_ratio=row["allocation_ratio"])


def not_found(uuid: str) -> errors.NotFound:
    return errors.NotFound(f"No resource provider with uuid {uuid} found.",
                           code="placement.resource_provider.not_found")


@contextlib.asynccontextmanager
async def _transaction(pool: Pool) -> AsyncIterator[asyncpg.Connection]:
    """A transaction that turns constraint violations into our errors."""
    try:
        async with pool.acquire() as conn, conn.transaction():
            yield conn
    except asyncpg.UniqueViolationError as exc:
        raise errors.Conflict(f"Conflicting resource provider: {exc.detail or exc}",
                              code="placement.duplicate_name") from None
    except asyncpg.CheckViolationError as exc:
        raise errors.InvalidInput(f"Invalid value: {exc.constraint_name} does not hold.") from None


# --- providers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderFilter:
    """What `GET /resource_providers` may ask for; every empty field means "any"."""

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: tuple[tuple[str, ...], ...] = ()   # in one aggregate of each group
    not_member_of: tuple[str, ...] = ()           # in none of these
    resources: tuple[tuple[str, int], ...] = ()   # room for each (class, amount)
    required: tuple[tuple[str, ...], ...] = ()    # one trait of each group
    forbidden: tuple[str, ...] = ()               # none of these traits


async def list_providers(pool: Pool, *, name: str | None = None, uuid: str | None = None,
                         in_tree: str | None = None,
                         where: ProviderFilter | None = None) -> list[Provider]:
    f = where or ProviderFilter(name=name, uuid=uuid, in_tree=in_tree)
    traits = {t for group in f.required for t in group} | set(f.forbidden)
    if traits:
        known = {r["name"] for r in await pool.fetch(QA.known_traits, sorted(traits))}
        if unknown := sorted(traits - known):
            raise errors.InvalidInput(f"Invalid query string parameters: No such trait(s): "
                                      f"{', '.join(unknown)}.", code="placement.query.bad_value")
    rows = await pool.fetch(
        QA.filter_providers, f.name, f.uuid, f.in_tree,
        [list(g) for g in f.member_of], list(f.not_member_of),
        [rc for rc, _ in f.resources], [n for _, n in f.resources],
        [list(g) for g in f.required], list(f.forbidden))
    return [_provider(r) for r in rows]


# PUT may leave the parent as it is: "not given" differs from "no parent" (None)
KEEP_PARENT = object()


async def update_provider(pool: Pool, uuid: str, *, name: str,
                          parent_uuid: object = KEEP_PARENT, may_reparent: bool = False) -> Provider:
    """Rename the provider and perhaps move it. A root may always be given a parent; taking a
    parent away or changing it needs `may_reparent` (microversion 1.37). Its whole subtree
    moves with it, and no provider may end up below itself.

    Two moves that would make a cycle together (A under B while B goes under A) lock the same
    two rows in opposite orders; PostgreSQL aborts one of them, which we report as a conflict
    to retry — the retry then sees the other move and refuses the loop."""
    try:
        return await _update_provider(pool, uuid, name, parent_uuid, may_reparent)
    except asyncpg.DeadlockDetectedError:
        raise errors.Conflict(f"Resource provider {uuid} was moved concurrently; try again.",
                              code="placement.concurrent_update") from None


async def _update_provider(pool: Pool, uuid: str, name: str, parent_uuid: object,
                           may_reparent: bool) -> Provider:
    async with _transaction(pool) as conn:
        row = await conn.fetchrow(Q.lock_provider, uuid)
        if row is None:
            raise not_found(uuid)
        parent_id = row["parent_provider_id"]
        if parent_uuid is not KEEP_PARENT:
            parent_id = await _new_parent(conn, row, parent_uuid, may_reparent)
        if parent_id is None:
            root_id = row["id"]
        else:
            root_id = (await conn.fetchrow(QA.lock_provider_by_id, parent_id))["root_provider_id"]
        await conn.execute(QA.move_provider, row["id"], name, parent_id, root_id)
        return _provider(await conn.fetchrow(Q.get_provider, uuid))


async def _new_parent(conn: asyncpg.Connection, row: asyncpg.Record, parent_uuid: object,
                      may_reparent: bool) -> int | None:
    current = row["parent_provider_id"]
    if parent_uuid is None:
        if current is not None and not may_reparent:
            raise errors.InvalidInput("Un-parenting a provider is not allowed before microversion 1.37.")
        return None
    parent = await conn.fetchrow(Q.lock_provider, parent_uuid)
    if parent is None:
        raise errors.InvalidInput(f"The parent provider {parent_uuid} does not exist.",
                                  code="placement.resource_provider.not_found")
    if parent["id"] == current:
        return current
    if current is not None and not may_reparent:
        raise errors.InvalidInput("Re-parenting a provider is not allowed before microversion 1.37.")
    below = {r["id"] for r in await conn.fetch(QA.subtree_ids, row["id"])}
    if parent["id"] in below:
        raise errors.InvalidInput(f"Creating a loop in the provider tree is not allowed: "
                                  f"{parent_uuid} is {row['uuid']} or one of its descendants.")
    return parent["id"]


async def get_provider(pool: Pool, uuid: str) -> Provider:
    row = await pool.fetchrow(Q.get_provider, uuid)
    if row is None:
        raise not_found(uuid)
    return _provider(row)


async def create_provider(pool: Pool, *, uuid: str, name: str,
                          parent_uuid: str | None = None) -> Provider:
    async with _transaction(pool) as conn:
        parent_id = None
        if parent_uuid is not None:
            parent = await conn.fetchrow(Q.lock_provider, parent_uuid)
            if parent is None:
                raise errors.InvalidInput(f"The parent provider {parent_uuid} does not exist.",
                                          code="placement.resource_provider.not_found")
            parent_id = parent["id"]
        if await conn.fetchval(Q.create_provider, uuid, name, parent_id) is None:
            if await conn.fetchrow(Q.get_provider, uuid) is not None:
                raise errors.Conflict(f"Conflicting resource provider uuid: {uuid} already exists.",
                                      code="placement.duplicate_uuid")
            raise errors.Conflict(f"Conflicting resource provider name: {name} already exists.",
                                  code="placement.duplicate_name")
        return _provider(await conn.fetchrow(Q.get_provider, uuid))


async def delete_provider(pool: Pool, uuid: str) -> None:
    async with _transaction(pool) as conn:
        row = await conn.fetchrow(Q.lock_provider, uuid)
        if row is None:
            raise not_found(uuid)
        use = await conn.fetchrow(Q.provider_in_use, row["id"])
        if use["allocated"]:
            raise errors.Conflict(f"Unable to delete resource provider {uuid}: it has allocations.",
                                  code="placement.resource_provider.inuse")
        if use["has_children"]:
            raise errors.Conflict(f"Unable to delete parent resource provider {uuid}: "
                                  "it has child resource providers.",
                                  code="placement.resource_provider.cannot_delete_parent")
        await conn.execute(Q.delete_provider, row["id"])


# --- inventories and usages --------------------------------------------------------------


async def get_inventories(pool: Pool, uuid: str) -> tuple[int, dict[str, Inventory]]:
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        row = await conn.fetchrow(Q.get_provider, uuid)
        if row is None:
            raise not_found(uuid)
        rows = await conn.fetch(Q.inventories, row["id"])
    return row["generation"], {r["resource_class"]: _inventory(r) for r in rows}


async def get_usages(pool: Pool, uuid: str) -> tuple[int, dict[str, int]]:
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        row = await conn.fetchrow(Q.get_provider, uuid)
        if row is None:
            raise not_found(uuid)
        rows = await conn.fetch(Q.usages, row["id"])
    return row["generation"], {r["resource_class"]: r["used"] for r in rows}


def check_inventory(resource_class: str, inv: Inventory) -> None:
    if inv.reserved > inv.total:
        raise errors.InvalidInput(f"Invalid inventory for {resource_class}: reserved ({inv.reserved}) "
                                  f"is greater than total ({inv.total}).")
    if inv.min_unit > inv.max_unit:
        raise errors.InvalidInput(f"Invalid inventory for {resource_class}: min_unit ({inv.min_unit}) "
                                  f"is greater than max_unit ({inv.max_unit}).")


async def set_inventories(pool: Pool, uuid: str, inventories: dict[str, Inventory], *,
                          generation: int | None) -> tuple[int, dict[str, Inventory]]:
    """Replace the provider's inventories; `generation` is the one the caller last saw."""
    for rc, inv in inventories.items():
        check_inventory(rc, inv)
    async with _transaction(pool) as conn:
        row = await conn.fetchrow(Q.lock_provider, uuid)
        if row is None:
            raise not_found(uuid)
        if generation is not None and generation != row["generation"]:
            raise errors.Conflict(
                f"resource provider generation conflict: expected {generation}, "
                f"but the provider is at {row['generation']}.", code="placement.concurrent_update")
        new_generation = await _replace_inventories(conn, row, inventories)
    return new_generation, inventories


async def ensure_provider(pool: Pool, uuid: str, name: str,
                          inventories: dict[str, Inventory]) -> int:
    """Create the provider if missing and make its inventories these; a repeat changes nothing.
    Returns the provider's generation."""
    for rc, inv in inventories.items():
        check_inventory(rc, inv)
    async with _transaction(pool) as conn:
        row = await conn.fetchrow(Q.lock_provider, uuid)
        if row is None:
            await conn.fetchval(Q.create_provider, uuid, name, None)
            row = await conn.fetchrow(Q.lock_provider, uuid)
        if row is None:
            other = await conn.fetchval(Q.find_provider_by_name, name)
            raise errors.Conflict(f"Resource provider name {name} is taken by provider {other}; "
                                  f"cannot register {uuid} under it.", code="placement.duplicate_name")
        if row["name"] != name:
            await conn.execute(Q.rename_provider, row["id"], name)
            row = await conn.fetchrow(Q.lock_provider, uuid)
        return await _replace_inventories(conn, row, inventories)


async def _replace_inventories(conn: asyncpg.Connection, row: asyncpg.Record,
                               inventories: dict[str, Inventory]) -> int:
    current = {r["resource_class"]: _inventory(r) for r in await conn.fetch(Q.inventories, row["id"])}
    if current == inventories:
        return row["generation"]
    classes = list(inventories)
    in_use = [r["resource_class"] for r in await conn.fetch(Q.classes_in_use_outside, row["id"], classes)]
    if in_use:
        raise errors.Conflict(f"Inventory for {', '.join(in_use)} on resource provider {row['uuid']} "
                              "is in use: its allocations must go first.",
                              code="placement.inventory.inuse")
    await conn.execute(Q.delete_inventories_outside, row["id"], classes)
    if inventories:
        invs = list(inventories.values())
        await conn.execute(Q.upsert_inventories, row["id"], classes,
                           [i.total for i in invs], [i.reserved for i in invs],
                           [i.min_unit for i in invs], [i.max_unit for i in invs],
                           [i.step_size for i in invs], [float(i.allocation_ratio) for i in invs])
    bumped = await conn.fetchrow(Q.bump_providers, [row["id"]])
    return bumped["generation"]
