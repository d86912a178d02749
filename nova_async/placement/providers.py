"""Resource providers and what they hold: the domain behind the provider, inventory and usage
endpoints and behind a compute host's periodic EnsureProvider.

Every write locks the provider row first, so inventory updates serialise with claims on the
same provider (allocations.py takes the same lock) and clients holding a stale generation get
`placement.concurrent_update`. The generation counts what upstream counts: every inventory
write through the API bumps it (even one that changes nothing), a rename or a move does not,
and a host's periodic EnsureProvider only when its inventories really changed."""

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

    def refused(action: str, reason: str) -> errors.InvalidInput:
        return errors.InvalidInput(f"Unable to save resource provider {row['uuid']}: Object action "
                                   f"{action} failed because: {reason}")

    if parent_uuid is None:
        if current is not None and not may_reparent:
            raise refused("update", "un-parenting a provider is not currently allowed.")
        return None
    parent = await conn.fetchrow(Q.lock_provider, parent_uuid)
    if parent is None:  # upstream names the action "create" here too
        raise refused("create", "parent provider UUID does not exist.")
    if parent["id"] == current:
        return current
    if current is not None and not may_reparent:
        raise refused("update", "re-parenting a provider is not currently allowed.")
    below = {r["id"] for r in await conn.fetch(QA.subtree_ids, row["id"])}
    if parent["id"] in below:
        raise refused("update", "creating loop in the provider tree is not allowed.")
    return parent["id"]


async def get_provider(pool: Pool, uuid: str) -> Provider:
    row = await pool.fetchrow(Q.get_provider, uuid)
    if row is None:
        raise not_found(uuid)
    return _provider(row)


async def create_provider(pool: Pool, *, uuid: str, name: str,
                          parent_uuid: str | None = None) -> Provider:
    def refused(reason: str) -> errors.InvalidInput:
        return errors.InvalidInput(f'Unable to create resource provider "{name}", {uuid}: Object '
                                   f"action create failed because: {reason}")

    async with _transaction(pool) as conn:
        parent_id = None
        if parent_uuid is not None:
            if parent_uuid == uuid:
                raise refused("parent provider UUID cannot be same as UUID. Please set parent "
                              "provider UUID to None if there is no parent.")
            parent = await conn.fetchrow(Q.lock_provider, parent_uuid)
            if parent is None:
                raise refused("parent provider UUID does not exist.")
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
            raise errors.NotFound(f"No resource provider with uuid {uuid} found for delete",
                                  code="placement.resource_provider.not_found")
        use = await conn.fetchrow(Q.provider_in_use, row["id"])
        if use["allocated"]:
            raise errors.Conflict(f"Unable to delete resource provider {uuid}: Resource provider has "
                                  "allocations.", code="placement.resource_provider.inuse")
        if use["has_children"]:
            raise errors.Conflict(f"Unable to delete parent resource provider {uuid}: "
                                  "It has child resource providers.",
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


def check_inventory(provider_uuid: str, resource_class: str, inv: Inventory, *,
                    reserved_may_equal_total: bool = True) -> None:
    """Upstream measures capacity as int((total - reserved) * allocation_ratio): below
    microversion 1.26 it must be positive, from 1.26 (an inventory reserved whole, say a
    device taken out of service) it may be zero."""
    capacity = int((inv.total - inv.reserved) * inv.allocation_ratio)
    where = f"Invalid inventory for '{resource_class}' on resource provider '{provider_uuid}'."
    if capacity < 0 or (capacity == 0 and not reserved_may_equal_total):
        relation = "greater than" if reserved_may_equal_total else "greater than or equal to"
        raise errors.InvalidInput(f"{where} The reserved value is {relation} total.")
    if inv.min_unit > inv.max_unit:
        raise errors.InvalidInput(f"{where} min_unit ({inv.min_unit}) is greater than max_unit ({inv.max_unit}).")


def check_inventories(uuid: str, inventories: dict[str, Inventory], *, reserved_may_equal_total: bool,
                      action: str = "update") -> None:
    """check_inventory for each, refused as "Unable to <action> inventory …"."""
    try:
        for rc, inv in inventories.items():
            check_inventory(uuid, rc, inv, reserved_may_equal_total=reserved_may_equal_total)
    except errors.InvalidInput as exc:
        raise errors.InvalidInput(f"Unable to {action} inventory for resource provider {uuid}: "
                                  f"{exc.message}") from None


async def set_inventories(pool: Pool, uuid: str, inventories: dict[str, Inventory], *,
                          generation: int | None, reserved_may_equal_total: bool = True,
                          action: str = "update") -> tuple[int, dict[str, Inventory]]:
    """Replace the provider's inventories; `generation` is the one the caller last saw. The
    generation is bumped even when nothing changed, as upstream does on every write; a refused
    inventory is reported as "Unable to <action> inventory …"."""
    check_inventories(uuid, inventories, reserved_may_equal_total=reserved_may_equal_total, action=action)
    async with _transaction(pool) as conn:
        row = await conn.fetchrow(Q.lock_provider, uuid)
        if row is None:
            raise not_found(uuid)
        if generation is not None and generation != row["generation"]:
            raise errors.Conflict(
                f"resource provider generation conflict: expected {generation}, "
                f"but the provider is at {row['generation']}.", code="placement.concurrent_update")
        new_generation = await _replace_inventories(conn, row, inventories, always_bump=True)
    return new_generation, inventories


async def ensure_provider(pool: Pool, uuid: str, name: str,
                          inventories: dict[str, Inventory]) -> int:
    """Create the provider if missing and make its inventories these; a repeat changes nothing.
    Returns the provider's generation."""
    for rc, inv in inventories.items():
        check_inventory(uuid, rc, inv)
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
        return await _replace_inventories(conn, row, inventories, always_bump=False)


async def _replace_inventories(conn: asyncpg.Connection, row: asyncpg.Record,
                               inventories: dict[str, Inventory], *, always_bump: bool) -> int:
    """`always_bump` False: a repeat of what is there (a host's periodic refresh) leaves the
    generation alone, so it does not invalidate what clients read."""
    current = {r["resource_class"]: _inventory(r) for r in await conn.fetch(Q.inventories, row["id"])}
    if current == inventories and not always_bump:
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
