"""Server groups apart from their HTTP resource (handlers/server_groups.py): creating one
within the project's quota, listing, finding (a member sees the project's groups, an admin
every project's) and deleting them, who is in a group, and joining one at boot
(server_create.py), under the group's row lock."""

from __future__ import annotations

import uuid as uuidlib
from typing import Any, NamedTuple

import asyncpg

from nova_async.api import quotas
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.context import RequestContext
from nova_async.config import QuotaSettings
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.scheduler.messages import GroupPolicy

Q = queries("server_groups")


async def members_of(db, uuids: list) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {str(u): [] for u in uuids}
    for r in await db.fetch(Q.members, uuids):
        found[str(r["group_uuid"])].append(str(r["instance_uuid"]))
    return found


class Group(NamedTuple):
    row: asyncpg.Record
    members: list[str]


async def create(pool: Pool, defaults: QuotaSettings, ctx: RequestContext, name: str, policy: str,
                 per_host: int | None) -> asyncpg.Record:
    """A new group of the caller's project, or 403 over the project's server group quota:
    counted under the project's server group counting lock, which boots do not take."""
    async with pool.acquire() as conn, conn.transaction():
        limits, counting = await quotas.lock_to_count(conn, defaults, ctx.project_id, "server_groups")
        limit = limits["server_groups"]
        if counting and limit <= await conn.fetchval(Q.count_in_project, ctx.project_id):
            raise quotas.QuotaExceeded(f"Quota exceeded, too many server groups (limit {limit}).")
        return await conn.fetchrow(Q.insert, uuidlib.uuid4(), name, ctx.project_id, ctx.user_id, policy, per_host)


async def listing(pool: Pool, project_id: str | None, limit: int | None, offset: int) -> list[Group]:
    """A page of the project's groups (every project's when `project_id` is None)."""
    rows = await pool.fetch(Q.list, project_id, limit, offset)
    members = await members_of(pool, [r["uuid"] for r in rows])
    return [Group(r, members[str(r["uuid"])]) for r in rows]


async def _visible(db, ctx: RequestContext, raw: str) -> asyncpg.Record:
    group_id = w.parse_uuid(raw)
    row = await db.fetchrow(Q.get, group_id, None if ctx.is_admin else ctx.project_id) if group_id else None
    if row is None:
        raise errors.NotFound(f"Instance group {raw} could not be found.")
    return row


async def get(pool: Pool, ctx: RequestContext, raw: str) -> Group:
    """The group `raw` names, if the caller may see it, with its members; else a 404."""
    row = await _visible(pool, ctx, raw)
    return Group(row, (await members_of(pool, [row["uuid"]]))[str(row["uuid"])])


async def delete(pool: Pool, ctx: RequestContext, raw: str) -> None:
    row = await _visible(pool, ctx, raw)
    await pool.execute(Q.delete, row["uuid"])


async def join(conn: asyncpg.Connection, ctx: RequestContext, hints: dict[str, Any], instance_uuids: list[str],
               limit: dict[str, int]) -> GroupPolicy | None:
    """At boot: put the new instances in the group the hints name, in the caller's
    transaction, under the group's row lock (boots joining one group count its members one at a
    time, whatever quota locks they hold); the policy goes into the request spec."""
    raw = hints.get("group")
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise errors.InvalidInput("The scheduler hint 'group' must be a server group's id.")
    group_id = w.parse_uuid(raw)
    row = await conn.fetchrow(Q.get_for_update, group_id) if group_id else None
    if row is None or not (ctx.is_admin or row["project_id"] == ctx.project_id):
        raise errors.InvalidInput(f"Invalid server group: {raw} could not be found.")
    members = (await members_of(conn, [row["uuid"]]))[str(row["uuid"])]
    allowed = limit["server_group_members"]
    if 0 <= allowed < len(members) + len(instance_uuids):
        raise quotas.QuotaExceeded(f"Quota exceeded, too many servers in group {raw} (limit {allowed}).")
    for instance_uuid in instance_uuids:
        await conn.execute(Q.add_member, instance_uuid, row["uuid"])
    return GroupPolicy(uuid=str(row["uuid"]), policy=row["policy"],
                       max_server_per_host=row["max_server_per_host"] or 1)
