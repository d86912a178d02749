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
from nova_async.db.queries import queries

Q = queries("placement")

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
async def _transaction(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
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


async def list_providers(pool: asyncpg.Pool, *, name: str | None = None, uuid: str | None = None,
                         in_tree: str | None = None) -> list[Provider]:
    rows = await pool.fetch(Q.list_providers, name, uuid, in_tree)
    return [_provider(r) for r in rows]


async def get_provider(pool: asyncpg.Pool, uuid: str) -> Provider:
    row = await pool.fetchrow(Q.get_provider, uuid)
    if row is None:
        raise not_found(uuid)
    return _provider(row)


async def create_provider(pool: asyncpg.Pool, *, uuid: str, name: str,
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


async def delete_provider(pool: asyncpg.Pool, uuid: str) -> None:
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


async def get_inventories(pool: asyncpg.Pool, uuid: str) -> tuple[int, dict[str, Inventory]]:
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        row = await conn.fetchrow(Q.get_provider, uuid)
        if row is None:
            raise not_found(uuid)
        rows = await conn.fetch(Q.inventories, row["id"])
    return row["generation"], {r["resource_class"]: _inventory(r) for r in rows}


async def get_usages(pool: asyncpg.Pool, uuid: str) -> tuple[int, dict[str, int]]:
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


async def set_inventories(pool: asyncpg.Pool, uuid: str, inventories: dict[str, Inventory], *,
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


async def ensure_provider(pool: asyncpg.Pool, uuid: str, name: str,
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
