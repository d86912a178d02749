"""Names placement knows: resource classes and traits, standard and custom, and the
qualitative side of a provider (its traits and aggregates).

The standard names come from the `os-resource-classes` and `os-traits` packages, the same
lists OpenStack Placement serves. Standard traits are synced into the `traits` table when
placement starts (idempotent), so the candidate queries can join on them; standard resource
classes are checked in Python and never stored. Custom names must start with `CUSTOM_`.

Changing a provider's traits or aggregates locks the provider row, compares the generation
the caller read, replaces the set and bumps the generation — the same discipline as
inventories (providers.py), so concurrent writers get 409 placement.concurrent_update."""

from __future__ import annotations

import re
import uuid as uuidlib

import asyncpg
import os_resource_classes
import os_traits

from nova_async.common import errors
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.placement import providers

Q = queries("placement_catalog")
PQ = queries("placement")

STANDARD_CLASSES = tuple(os_resource_classes.STANDARDS)
STANDARD_TRAITS = tuple(os_traits.get_traits())
_CUSTOM = re.compile(r"^CUSTOM_[A-Z0-9_]{1,248}$")


def is_custom(name: str) -> bool:
    return bool(_CUSTOM.match(name))


async def sync_standard_traits(pool: Pool) -> None:
    await pool.execute(Q.sync_traits, list(STANDARD_TRAITS))


# --- resource classes ---------------------------------------------------------------------

async def list_classes(pool: Pool) -> list[str]:
    return [*STANDARD_CLASSES, *(r["name"] for r in await pool.fetch(Q.custom_classes))]


async def class_exists(db, name: str) -> bool:
    return name in STANDARD_CLASSES or await db.fetchval(Q.class_exists, name)


async def unknown_classes(db, names: list[str]) -> list[str]:
    custom = [n for n in names if n not in STANDARD_CLASSES]
    known = {r["name"] for r in await db.fetch(Q.known_custom_classes, custom)} if custom else set()
    return sorted(set(custom) - known)


def _check_custom_class(name: str) -> None:
    if name in STANDARD_CLASSES:
        raise errors.InvalidInput(f"Cannot change standard resource class {name}.")
    if not is_custom(name):
        raise errors.InvalidInput(f"Resource class {name!r} is not a custom class: custom classes are "
                                  "CUSTOM_ and capital letters, digits or underscores.")


def class_not_found(name: str) -> errors.NotFound:
    return errors.NotFound(f"No such resource class {name}.", code="placement.resource_class.not_found")


async def create_class(pool: Pool, name: str) -> bool:
    """True when it was made, False when it already existed."""
    _check_custom_class(name)
    return await pool.fetchval(Q.add_class, name) is not None


async def rename_class(pool: Pool, name: str, new_name: str) -> None:
    """Microversions 1.2-1.6 could rename a custom class. Upstream renames one in use too (its
    rows name classes by id); ours name them by text, so a class some inventory holds keeps
    its name (409) rather than be rewritten under every inventory and allocation."""
    async with pool.acquire() as conn, conn.transaction():
        if not await class_exists(conn, name):
            raise class_not_found(name)
        if name in STANDARD_CLASSES:
            raise errors.InvalidInput(f"Cannot update standard resource class {name}")
        if new_name in STANDARD_CLASSES or await conn.fetchval(Q.class_exists, new_name):
            raise errors.Conflict(f"Resource class already exists: {new_name}",
                                  code="placement.duplicate_name")
        if await conn.fetchval(Q.class_in_use, name):
            raise errors.Conflict(f"Cannot rename resource class {name}: it is in use in inventory.",
                                  code="placement.resource_class.inuse")
        await conn.execute(Q.rename_class, name, new_name)


async def delete_class(pool: Pool, name: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        if not await class_exists(conn, name):
            raise class_not_found(name)
        if name in STANDARD_CLASSES:
            raise errors.InvalidInput(f"Error in delete resource class: Cannot delete standard "
                                      f"resource class {name}.")
        if await conn.fetchval(Q.class_in_use, name):
            raise errors.Conflict(f"Error in delete resource class: Cannot delete resource class "
                                  f"{name}. Class is in use in inventory.",
                                  code="placement.resource_class.inuse")
        await conn.execute(Q.delete_class, name)


# --- traits -------------------------------------------------------------------------------

async def list_traits(pool: Pool, names: list[str] | None, prefix: str | None,
                      associated: bool | None) -> list[str]:
    return [r["name"] for r in await pool.fetch(Q.list_traits, names, prefix, associated)]


async def trait_exists(pool: Pool, name: str) -> bool:
    return await pool.fetchval(Q.trait_exists, name)


async def create_trait(pool: Pool, name: str) -> bool:
    if not is_custom(name):
        raise errors.InvalidInput('The trait is invalid. A valid trait must be no longer than 255 '
                                  'characters, start with the prefix "CUSTOM_" and use following '
                                  'characters: "A"-"Z", "0"-"9" and "_"')
    return await pool.fetchval(Q.add_trait, name) is not None


async def delete_trait(pool: Pool, name: str) -> None:
    if name in STANDARD_TRAITS:
        raise errors.InvalidInput(f"Cannot delete standard trait {name}.")
    async with pool.acquire() as conn, conn.transaction():
        if await conn.fetchval(Q.trait_in_use, name):
            raise errors.Conflict(f"The trait {name} is in use by a resource provider.",
                                  code="placement.trait.inuse")
        if await conn.fetchval(Q.delete_trait, name) is None:
            raise errors.NotFound(f"No such trait(s): {name}.")


# --- a provider's traits and aggregates ---------------------------------------------------

GENERATION_CHANGED = ("Resource provider's generation already changed. Please update the "
                      "generation and try again.")


async def _locked(conn: asyncpg.Connection, provider_uuid: str, generation: int | None) -> asyncpg.Record:
    row = await conn.fetchrow(PQ.lock_provider, provider_uuid)
    if row is None:
        raise providers.not_found(provider_uuid)
    if generation is not None and generation != row["generation"]:
        raise errors.Conflict(GENERATION_CHANGED, code="placement.concurrent_update")
    return row


async def provider_traits(pool: Pool, provider_uuid: str) -> tuple[int, list[str]]:
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(PQ.lock_provider, provider_uuid)
        if row is None:
            raise providers.not_found(provider_uuid)
        return row["generation"], [r["name"] for r in await conn.fetch(Q.provider_traits, row["id"])]


async def set_provider_traits(pool: Pool, provider_uuid: str, traits: list[str],
                              generation: int | None) -> int:
    """Replace the provider's traits; returns its generation, bumped only when the set
    changed (as upstream: a PUT of the traits it has already is no change)."""
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, provider_uuid, generation)
        known = {r["name"] for r in await conn.fetch(Q.known_traits, traits)}
        missing = sorted(set(traits) - known)
        if missing:
            raise errors.InvalidInput(f"No such trait(s): {', '.join(missing)}.")
        current = {r["name"] for r in await conn.fetch(Q.provider_traits, row["id"])}
        if current == set(traits):
            return row["generation"]
        await conn.execute(Q.clear_provider_traits, row["id"])
        await conn.execute(Q.set_provider_traits, row["id"], traits)
        return (await conn.fetchrow(PQ.bump_providers, [row["id"]]))["generation"]


async def provider_aggregates(pool: Pool, provider_uuid: str) -> tuple[int, list[str]]:
    async with pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(PQ.lock_provider, provider_uuid)
        if row is None:
            raise providers.not_found(provider_uuid)
        found = [str(r["aggregate_uuid"]) for r in await conn.fetch(Q.provider_aggregates, row["id"])]
        return row["generation"], found


async def set_provider_aggregates(pool: Pool, provider_uuid: str, aggregates: list[str],
                                  generation: int | None) -> int:
    """Replace the provider's aggregates. With a `generation` (microversion 1.19+) the write
    is checked against it and always bumps it, as upstream; without one (older clients,
    which cannot see generations here) it neither checks nor bumps."""
    try:
        wanted = sorted({str(uuidlib.UUID(a)) for a in aggregates})
    except ValueError:
        raise errors.InvalidInput("Aggregates must be UUIDs.") from None
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, provider_uuid, generation)
        await conn.execute(Q.clear_provider_aggregates, row["id"])
        await conn.execute(Q.set_provider_aggregates, row["id"], wanted)
        if generation is None:
            return row["generation"]
        return (await conn.fetchrow(PQ.bump_providers, [row["id"]]))["generation"]
