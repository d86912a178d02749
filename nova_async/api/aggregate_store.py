"""Host aggregates in the database, apart from their HTTP resource (handlers/aggregates.py):
list, look up, create, change and delete aggregates and their hosts, each returning the
aggregate's row with its hosts. A host may be in several aggregates but in one zone only, so
every change is made under one lock for all aggregates (zone checks look across them) and a
change that would give a host two zones is refused, as in Nova."""

from __future__ import annotations

import uuid
from typing import Any, NamedTuple

import asyncpg

from nova_async.common import errors
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("aggregates")
DEFAULT_ZONE = "nova"


class Aggregate(NamedTuple):
    row: asyncpg.Record
    hosts: list[str]


async def _hosts(db, ids: list[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {i: [] for i in ids}
    for r in await db.fetch(Q.hosts, ids):
        found[r["aggregate_id"]].append(r["host"])
    return found


async def _with_hosts(db, row: asyncpg.Record) -> Aggregate:
    return Aggregate(row, (await _hosts(db, [row["id"]]))[row["id"]])


async def _locked(conn: asyncpg.Connection, aggregate_id: int) -> asyncpg.Record:
    # One writer at a time for every aggregate: zone checks look across aggregates.
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('aggregates', 0))")
    row = await conn.fetchrow(Q.get_for_update, aggregate_id)
    if row is None:
        raise errors.NotFound(f"Aggregate {aggregate_id} could not be found.")
    return row


async def _check_zone(conn: asyncpg.Connection, aggregate_id: int, zone: str | None, hosts: list[str]) -> None:
    if zone is None:
        return
    for host in hosts:
        others = [z for z in await conn.fetch(Q.other_zones, host, aggregate_id) if z[0] != zone]
        if others:
            raise errors.InvalidInput(f"Cannot put host {host} in availability zone {zone}: it is already in "
                                      f"availability zone(s) {', '.join(sorted(z[0] for z in others))}.")


async def listing(pool: Pool) -> list[Aggregate]:
    rows = await pool.fetch(Q.list)
    hosts = await _hosts(pool, [r["id"] for r in rows])
    return [Aggregate(r, hosts[r["id"]]) for r in rows]


async def get(pool: Pool, aggregate_id: int, shown: str) -> Aggregate:
    """The aggregate; `shown` is the id as the caller wrote it, for the 404's message."""
    row = await pool.fetchrow(Q.get, aggregate_id)
    if row is None:
        raise errors.NotFound(f"Aggregate {shown} could not be found.")
    return await _with_hosts(pool, row)


async def create(pool: Pool, name: str, zone: str | None) -> asyncpg.Record:
    try:
        return await pool.fetchrow(Q.insert, uuid.uuid4(), name, zone, {})
    except asyncpg.UniqueViolationError:
        raise errors.Conflict(f"Aggregate {name} already exists.") from None


async def update(pool: Pool, aggregate_id: int, changes: dict[str, Any]) -> Aggregate:
    """Rename the aggregate and/or move it (and so its hosts) to another zone."""
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, aggregate_id)
        zone = changes.get("availability_zone", row["availability_zone"])
        hosts = (await _hosts(conn, [row["id"]]))[row["id"]]
        await _check_zone(conn, row["id"], zone, hosts)
        try:
            row = await conn.fetchrow(Q.update, row["id"], changes.get("name", row["name"]), zone, row["metadata"])
        except asyncpg.UniqueViolationError:
            raise errors.Conflict(f"Aggregate {changes['name']} already exists.") from None
        await conn.execute(Q.refresh_zones, hosts, DEFAULT_ZONE)
        return await _with_hosts(conn, row)


async def delete(pool: Pool, aggregate_id: int) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, aggregate_id)
        if (await _hosts(conn, [row["id"]]))[row["id"]]:
            raise errors.InvalidInput(f"Cannot remove aggregate {row['id']}: it still has hosts.")
        await conn.execute(Q.delete, row["id"])


async def act(pool: Pool, aggregate_id: int, action: str, args: dict[str, Any]) -> Aggregate:
    """One of the aggregate's actions (`add_host`, `remove_host`, `set_metadata`) with its
    arguments; the aggregate as it is afterwards."""
    async with pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, aggregate_id)
        hosts = (await _hosts(conn, [row["id"]]))[row["id"]]
        if action == "add_host":
            host = args["host"]
            if not await conn.fetchval(Q.compute_host_exists, host):
                raise errors.NotFound(f"Compute host {host} could not be found.")
            if host in hosts:
                raise errors.Conflict(f"Aggregate {row['id']} already has host {host}.")
            await _check_zone(conn, row["id"], row["availability_zone"], [host])
            await conn.execute(Q.add_host, row["id"], host)
            await conn.execute(Q.refresh_zones, [host], DEFAULT_ZONE)
        elif action == "remove_host":
            host = args["host"]
            if await conn.fetchval(Q.remove_host, row["id"], host) is None:
                raise errors.NotFound(f"Aggregate {row['id']} has no host {host}.")
            await conn.execute(Q.refresh_zones, [host], DEFAULT_ZONE)
        else:
            metadata = dict(row["metadata"])
            zone = row["availability_zone"]
            for key, value in args["metadata"].items():
                if key == "availability_zone":
                    zone = value
                elif value is None:
                    metadata.pop(key, None)
                else:
                    metadata[key] = value
            await _check_zone(conn, row["id"], zone, hosts)
            row = await conn.fetchrow(Q.update, row["id"], row["name"], zone, metadata)
            await conn.execute(Q.refresh_zones, hosts, DEFAULT_ZONE)
        row = await conn.fetchrow(Q.get, row["id"])
        return await _with_hosts(conn, row)
