"""Flavors in the database: create, look up, list, delete, their extra specs, and who may
use a private one (flavor access: admins, and the projects an admin named)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.db.shared_read import SharedRead

Q = queries("flavors")
GET = SharedRead(Q.get)   # a burst of boots asks for the same flavor


async def create(pool: Pool, spec: dict[str, Any]) -> asyncpg.Record:
    flavor_id = spec.get("id")
    flavor_id = str(uuid.uuid4()) if flavor_id in (None, "") else str(flavor_id)
    try:
        return await pool.fetchrow(Q.create, flavor_id, spec["name"], spec["ram"], spec["vcpus"],
                                   spec["disk"], spec["ephemeral"], spec["swap"], spec["rxtx_factor"],
                                   spec["is_public"], spec.get("description"))
    except asyncpg.UniqueViolationError as exc:
        what = "name" if "name" in (exc.constraint_name or "") else "ID"
        value = spec["name"] if what == "name" else flavor_id
        raise errors.Conflict(f"Flavor with {what} {value} already exists.") from None


async def get(pool: Pool, flavor_id: str) -> asyncpg.Record:
    row = await GET(pool, str(flavor_id))
    if row is None:
        raise errors.NotFound(f"Flavor {flavor_id} could not be found.")
    return row


async def visible(pool: Pool, ctx: RequestContext, flavor_id: str) -> asyncpg.Record:
    """The flavor, when the caller may see and use it: a public one, or a private one for an
    admin or a project given access (one more read, for private flavors only); else 404."""
    row = await get(pool, flavor_id)
    if not row["is_public"] and not ctx.is_admin and not await pool.fetchval(Q.has_access, row["id"],
                                                                              ctx.project_id):
        raise errors.NotFound(f"Flavor {flavor_id} could not be found.")
    return row


async def access_list(pool: Pool, flavor_id: str) -> list[asyncpg.Record]:
    """The projects given access to a private flavor (404 for a public one, as Nova)."""
    row = await get(pool, flavor_id)
    if row["is_public"]:
        raise errors.NotFound("Access list not available for public flavors.")
    return await pool.fetch(Q.access_list, row["id"])


async def change_access(pool: Pool, flavor_id: str, project_id: str, *, add: bool) -> list[asyncpg.Record]:
    """Give a project access to a private flavor (409 when it has it, or the flavor is public)
    or take it away (404 when it has none); the access list afterwards."""
    row = await get(pool, flavor_id)
    if row["is_public"]:
        raise errors.Conflict("Can not add access to a public flavor.")
    if add and await pool.fetchval(Q.add_access, row["id"], project_id) is None:
        raise errors.Conflict(f"Flavor access already exists for flavor {flavor_id} and project {project_id} "
                              "combination.")
    if not add and await pool.fetchval(Q.remove_access, row["id"], project_id) is None:
        raise errors.NotFound(f"Flavor access not found for {flavor_id} / {project_id} combination.")
    return await pool.fetch(Q.access_list, row["id"])


async def set_description(pool: Pool, flavor_id: str, description: str | None) -> asyncpg.Record:
    row = await pool.fetchrow(Q.set_description, str(flavor_id), description)
    if row is None:
        raise errors.NotFound(f"Flavor {flavor_id} could not be found.")
    return row


# Nova's flavor sort keys (its flavors table's columns) → ours. Nova's `id` is its row id, the
# order flavors were made in; it keeps no vcpu_weight for us to have, so that sorts as flavorid.
SORT_KEYS = {"flavorid": "id", "id": "created_at", "name": "name", "memory_mb": "memory_mb",
             "vcpus": "vcpus", "root_gb": "root_gb", "ephemeral_gb": "ephemeral_gb", "swap": "swap",
             "rxtx_factor": "rxtx_factor", "is_public": "is_public", "disabled": "disabled",
             "description": "coalesce(description, '')", "created_at": "created_at",
             "updated_at": "coalesce(updated_at, created_at)", "vcpu_weight": "id"}


@dataclass(frozen=True)
class ListFilter:
    """A flavor list request, checked: is_public None means both."""
    is_public: bool | None
    min_ram: int
    min_disk: int
    sort_key: str = "flavorid"       # one of SORT_KEYS
    descending: bool = False
    marker: str | None = None        # a flavor id
    limit: int = 1000
    project_id: str | None = None    # a member's: its private flavors are listed too
    name: str | None = None          # a regular expression (2.102)


async def listing(pool: Pool, f: ListFilter) -> list[asyncpg.Record]:
    """A page of flavors in the order asked (Nova's default: flavor id, ascending); 400 for
    a marker that names no flavor."""
    if f.marker is not None and not await pool.fetchval(Q.exists, f.marker):
        raise errors.InvalidInput(f"marker [{f.marker}] not found")
    sql = Q.list.format(key=SORT_KEYS[f.sort_key], direction="DESC" if f.descending else "ASC",
                        after="<" if f.descending else ">")
    try:
        return await pool.fetch(sql, f.is_public, f.min_ram, f.min_disk, f.marker, f.limit, f.project_id, f.name)
    except asyncpg.InvalidRegularExpressionError:
        raise errors.InvalidInput(f"Invalid regular expression in the name filter: {f.name!r}") from None


async def internal_ids(pool: Pool, flavor_ids: set[str]) -> dict[str, int]:
    """flavorid → the flavor's number (Nova's integer id), for those that still exist."""
    return {r["id"]: r["internal_id"] for r in await pool.fetch(Q.internal_ids, sorted(flavor_ids))}


async def delete(pool: Pool, flavor_id: str) -> None:
    if await pool.fetchval(Q.delete, flavor_id) is None:
        raise errors.NotFound(f"Flavor {flavor_id} could not be found.")


async def merge_extra_specs(pool: Pool, flavor_id: str, specs: dict[str, str]) -> dict[str, str]:
    merged = await pool.fetchval(Q.merge_extra_specs, flavor_id, specs)
    if merged is None:
        raise errors.NotFound(f"Flavor {flavor_id} could not be found.")
    return merged


async def delete_extra_spec(pool: Pool, flavor_id: str, key: str) -> None:
    await get(pool, flavor_id)
    if await pool.fetchval(Q.delete_extra_spec, flavor_id, key) is None:
        raise errors.NotFound(f"Flavor {flavor_id} has no extra spec with key {key}.")
