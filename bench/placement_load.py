"""Bulk loading for `placement_vs_upstream.py`: the same providers written straight into each
side's own schema with COPY, in seconds instead of the tens of minutes that ~6 HTTP requests
per provider take on a busy 2-core machine (upstream's 4 sync workers manage a few providers a
second there). Loading is not what the benchmark times; both sides are ANALYZEd afterwards.

What each side is given is exactly what the HTTP loader (`--load http`) would have written:
providers, VCPU/MEMORY_MB/DISK_GB inventories, traits, aggregates, and two consumers per
provider holding allocations. Names that both services create for themselves at start-up
(standard resource classes and traits) are looked up, never invented here; the custom trait
is created over HTTP first, on both sides, by the caller."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import asyncpg

Spec = Any  # the bench module: rp_uuid(), inventories(), traits(), aggregates(), constants
PRELOADED = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 4}


def _consumers(spec: Spec, i: int) -> list[uuid.UUID]:
    return [uuid.uuid5(spec.NS, f"consumer-{i}-{n}") for n in range(spec.PRELOADED_PER_PROVIDER)]


async def _next_ids(conn: asyncpg.Connection, sequence: str, count: int) -> list[int]:
    return [r[0] for r in await conn.fetch("SELECT nextval($1) FROM generate_series(1, $2)", sequence, count)]


async def load_ours(conn: asyncpg.Connection, spec: Spec, start: int, stop: int) -> None:
    """nova-async's schema (sql/0004_placement.sql): inventories.used is kept by the
    allocations trigger, which COPY fires like any insert."""
    rng = range(start, stop)
    trait_id = {r["name"]: r["id"] for r in await conn.fetch("SELECT id, name FROM traits")}
    ids = dict(zip(rng, await _next_ids(conn, "resource_providers_id_seq", len(rng))))
    async with conn.transaction():
        await conn.copy_records_to_table(
            "resource_providers", columns=["id", "uuid", "name", "root_provider_id"],
            records=[(ids[i], uuid.UUID(spec.rp_uuid(i)), f"bench-{i:05d}", ids[i]) for i in rng])
        await conn.copy_records_to_table(
            "inventories", columns=["resource_provider_id", "resource_class", "total", "reserved",
                                    "min_unit", "max_unit", "step_size", "allocation_ratio"],
            records=[(ids[i], rc, v["total"], v["reserved"], v["min_unit"], v["max_unit"], v["step_size"],
                      v["allocation_ratio"]) for i in rng for rc, v in spec.inventories(i).items()])
        await conn.copy_records_to_table(
            "provider_traits", columns=["resource_provider_id", "trait_id"],
            records=[(ids[i], trait_id[t]) for i in rng for t in spec.traits(i)])
        await conn.copy_records_to_table(
            "provider_aggregates", columns=["resource_provider_id", "aggregate_uuid"],
            records=[(ids[i], uuid.UUID(a)) for i in rng for a in spec.aggregates(i)])
        consumers = [(i, c) for i in rng for c in _consumers(spec, i)]
        cids = await _next_ids(conn, "consumers_id_seq", len(consumers))
        await conn.copy_records_to_table(
            "consumers", columns=["id", "uuid", "project_id", "user_id", "generation", "consumer_type"],
            records=[(cid, c, spec.PROJECT, spec.USER, 1, "INSTANCE") for cid, (_, c) in zip(cids, consumers)])
        await conn.copy_records_to_table(
            "allocations", columns=["consumer_id", "resource_provider_id", "resource_class", "used"],
            records=[(cid, ids[i], rc, n) for cid, (i, _) in zip(cids, consumers) for rc, n in PRELOADED.items()])


async def _id_of(conn: asyncpg.Connection, table: str, column: str, value: str) -> int:
    """The id of the row naming `value`, inserted if it is not there yet."""
    found = await conn.fetchval(f"SELECT id FROM {table} WHERE {column} = $1", value)
    if found is None:
        found = await conn.fetchval(f"INSERT INTO {table} ({column}, created_at) VALUES ($1, now()) "
                                    "RETURNING id", value)
    return found


async def load_upstream(conn: asyncpg.Connection, spec: Spec, start: int, stop: int) -> None:
    """OpenStack Placement's schema (placement/db/sqlalchemy/models.py): integer ids for
    classes, traits, aggregates, projects and users; allocations name their consumer by uuid;
    usage is always summed from allocations, so there is nothing else to keep."""
    rng = range(start, stop)
    rc_id = {r["name"]: r["id"] for r in await conn.fetch("SELECT id, name FROM resource_classes")}
    trait_id = {r["name"]: r["id"] for r in await conn.fetch("SELECT id, name FROM traits")}
    missing = sorted({rc for rc in PRELOADED if rc not in rc_id}
                     | {t for i in rng[:10] for t in spec.traits(i) if t not in trait_id})
    if missing:
        raise SystemExit(f"upstream placement has not synced {missing} yet; is it running?")
    async with conn.transaction():
        agg_id = {a: await _id_of(conn, "placement_aggregates", "uuid", a) for a in spec.AGGREGATES}
        project = await _id_of(conn, "projects", "external_id", spec.PROJECT)
        user = await _id_of(conn, "users", "external_id", spec.USER)
        instance = await _id_of(conn, "consumer_types", "name", "INSTANCE")
        ids = dict(zip(rng, await _next_ids(conn, "resource_providers_id_seq", len(rng))))
        stamp = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)  # timestamp without time zone
        await conn.copy_records_to_table(
            "resource_providers", columns=["created_at", "id", "uuid", "name", "generation", "root_provider_id"],
            records=[(stamp, ids[i], spec.rp_uuid(i), f"bench-{i:05d}", 1, ids[i]) for i in rng])
        await conn.copy_records_to_table(
            "inventories", columns=["created_at", "resource_provider_id", "resource_class_id", "total",
                                    "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio"],
            records=[(stamp, ids[i], rc_id[rc], v["total"], v["reserved"], v["min_unit"], v["max_unit"],
                      v["step_size"], v["allocation_ratio"])
                     for i in rng for rc, v in spec.inventories(i).items()])
        await conn.copy_records_to_table(
            "resource_provider_traits", columns=["created_at", "trait_id", "resource_provider_id"],
            records=[(stamp, trait_id[t], ids[i]) for i in rng for t in spec.traits(i)])
        await conn.copy_records_to_table(
            "resource_provider_aggregates", columns=["created_at", "resource_provider_id", "aggregate_id"],
            records=[(stamp, ids[i], agg_id[a]) for i in rng for a in spec.aggregates(i)])
        consumers = [(i, c) for i in rng for c in _consumers(spec, i)]
        await conn.copy_records_to_table(
            "consumers", columns=["created_at", "uuid", "project_id", "user_id", "generation", "consumer_type_id"],
            records=[(stamp, str(c), project, user, 1, instance) for _, c in consumers])
        await conn.copy_records_to_table(
            "allocations", columns=["created_at", "resource_provider_id", "consumer_id", "resource_class_id", "used"],
            records=[(stamp, ids[i], str(c), rc_id[rc], n) for i, c in consumers for rc, n in PRELOADED.items()])
