"""Server groups apart from their HTTP resource: who is in a group, and joining one at boot
(server_create.py), under the group's row lock."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.api import quotas
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.context import RequestContext
from nova_async.db.queries import queries
from nova_async.scheduler.messages import GroupPolicy

Q = queries("server_groups")


async def members_of(db, uuids: list) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {str(u): [] for u in uuids}
    for r in await db.fetch(Q.members, uuids):
        found[str(r["group_uuid"])].append(str(r["instance_uuid"]))
    return found


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
