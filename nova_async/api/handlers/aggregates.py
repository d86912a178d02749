"""`os-aggregates`: host aggregates, admin only. An aggregate groups compute hosts under
metadata; its `availability_zone` puts those hosts in that zone (else they are in the
default zone, `nova`). A host may be in several aggregates but in one zone only, so a
change that would give a host two zones is refused, as in Nova.

Metadata also feeds two scheduler filters: `filter_tenant_id` (hosts only for those
projects) and keys matched by flavors' `aggregate_instance_extra_specs:` extra specs."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
from aiohttp import web

from nova_async.api import microversion
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro
from nova_async.db.queries import queries

Q = queries("aggregates")
DEFAULT_ZONE = "nova"

_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*$"}
_ZONE = {"anyOf": [_NAME, {"type": "null"}]}
CREATE = w.validator({"type": "object", "required": ["aggregate"], "additionalProperties": False,
                      "properties": {"aggregate": {
                          "type": "object", "required": ["name"], "additionalProperties": False,
                          "properties": {"name": _NAME, "availability_zone": _ZONE}}}})
UPDATE = w.validator({"type": "object", "required": ["aggregate"], "additionalProperties": False,
                      "properties": {"aggregate": {
                          "type": "object", "minProperties": 1, "additionalProperties": False,
                          "properties": {"name": _NAME, "availability_zone": _ZONE}}}})
_HOST = {"type": "object", "required": ["host"], "additionalProperties": False,
         "properties": {"host": {"type": "string", "minLength": 1, "maxLength": 255}}}
ACTION = w.validator({"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                      "properties": {
                          "add_host": _HOST, "remove_host": _HOST,
                          "set_metadata": {"type": "object", "required": ["metadata"], "additionalProperties": False,
                                           "properties": {"metadata": {
                                               "type": "object",
                                               "propertyNames": {"minLength": 1, "maxLength": 255},
                                               "additionalProperties": {"anyOf": [
                                                   {"type": "string", "maxLength": 255}, {"type": "null"}]}}}}}})


def _view(row: asyncpg.Record, hosts: list[str], version) -> dict[str, Any]:
    metadata = dict(row["metadata"])
    if row["availability_zone"]:
        metadata["availability_zone"] = row["availability_zone"]
    out = {"id": row["id"], "name": row["name"], "availability_zone": row["availability_zone"],
           "hosts": hosts, "metadata": metadata, "created_at": iso_micro(row["created_at"]),
           "updated_at": iso_micro(row["updated_at"]) if row["updated_at"] else None,
           "deleted_at": None, "deleted": False}
    if version >= (2, 41):
        out["uuid"] = str(row["uuid"])
    return out


async def _hosts(db, ids: list[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {i: [] for i in ids}
    for r in await db.fetch(Q.hosts, ids):
        found[r["aggregate_id"]].append(r["host"])
    return found


def _id(request: web.Request) -> int:
    raw = request.match_info["aggregate_id"]
    number = w.ascii_int(raw)
    if number is None or number > 2**31 - 1:
        raise errors.NotFound(f"Aggregate {raw} could not be found.")
    return number


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


async def _respond(request: web.Request, conn, row: asyncpg.Record) -> web.Response:
    hosts = (await _hosts(conn, [row["id"]]))[row["id"]]
    return w.dump({"aggregate": _view(row, hosts, microversion.of(request))})


async def list_aggregates(request: web.Request) -> web.Response:
    require_admin(request)
    pool = request.app[STATE].pool
    rows = await pool.fetch(Q.list)
    hosts = await _hosts(pool, [r["id"] for r in rows])
    version = microversion.of(request)
    return w.dump({"aggregates": [_view(r, hosts[r["id"]], version) for r in rows]})


async def show_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    pool = request.app[STATE].pool
    row = await pool.fetchrow(Q.get, _id(request))
    if row is None:
        raise errors.NotFound(f"Aggregate {request.match_info['aggregate_id']} could not be found.")
    return await _respond(request, pool, row)


async def create_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    body = (await w.read_json(request, CREATE))["aggregate"]
    try:
        row = await request.app[STATE].pool.fetchrow(Q.insert, uuid.uuid4(), body["name"],
                                                     body.get("availability_zone"), {})
    except asyncpg.UniqueViolationError:
        raise errors.Conflict(f"Aggregate {body['name']} already exists.") from None
    return w.dump({"aggregate": _view(row, [], microversion.of(request))})


async def update_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    body = (await w.read_json(request, UPDATE))["aggregate"]
    state = request.app[STATE]
    async with state.pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, _id(request))
        zone = body.get("availability_zone", row["availability_zone"])
        hosts = (await _hosts(conn, [row["id"]]))[row["id"]]
        await _check_zone(conn, row["id"], zone, hosts)
        try:
            row = await conn.fetchrow(Q.update, row["id"], body.get("name", row["name"]), zone, row["metadata"])
        except asyncpg.UniqueViolationError:
            raise errors.Conflict(f"Aggregate {body['name']} already exists.") from None
        await conn.execute(Q.refresh_zones, hosts, DEFAULT_ZONE)
        return await _respond(request, conn, row)


async def delete_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    async with request.app[STATE].pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, _id(request))
        if (await _hosts(conn, [row["id"]]))[row["id"]]:
            raise errors.InvalidInput(f"Cannot remove aggregate {row['id']}: it still has hosts.")
        await conn.execute(Q.delete, row["id"])
    return web.Response(status=200)


async def aggregate_action(request: web.Request) -> web.Response:
    require_admin(request)
    body = await w.read_json(request, ACTION)
    (action, args), = body.items()
    async with request.app[STATE].pool.acquire() as conn, conn.transaction():
        row = await _locked(conn, _id(request))
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
        return await _respond(request, conn, row)
