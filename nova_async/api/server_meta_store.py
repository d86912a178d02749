"""A server's metadata and tags apart from their HTTP resource (handlers/server_meta.py).

Each change reads, edits (with the caller's pure `change` function) and writes the row under
its lock, so two users adding keys at once both keep theirs; the metadata_items quota is
checked on the result. Members reach only their project's servers (others are 404, as if
they did not exist)."""

from __future__ import annotations

from collections.abc import Callable

import asyncpg

from nova_async.api import lookup, quotas
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState
from nova_async.common.web import parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("server_meta")
MAX_TAGS = 50


async def _cell(state: ApiState, raw: str) -> Pool:
    """The database of the cell that holds the server `raw` names (404 when none does)."""
    uuid = parse_uuid(raw)
    cell = await state.cells.of_instance(uuid) if uuid else None
    if cell is None:
        raise lookup.not_found(raw)
    return cell.pool


async def _visible(conn: asyncpg.Connection, ctx: RequestContext, raw: str, *, writing: bool = True) -> asyncpg.Record:
    uuid = parse_uuid(raw)
    row = await conn.fetchrow(Q.lock, uuid) if uuid else None
    if row is None or not ctx.can_see(row["project_id"]):
        raise lookup.not_found(raw)
    if not writing:
        return row
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {raw} is locked.")
    if row["task_state"] == TaskState.DELETING:
        raise errors.Conflict(f"Cannot change instance {raw} while it is being deleted.")
    return row


async def read(state: ApiState, ctx: RequestContext, raw: str) -> asyncpg.Record:
    """The row (with `metadata` and `tags`) of the server `raw` names, if the caller sees it."""
    async with (await _cell(state, raw)).acquire() as conn, conn.transaction():
        return await _visible(conn, ctx, raw, writing=False)


async def change_metadata(state: ApiState, ctx: RequestContext, raw: str,
                          change: Callable[[dict[str, str]], dict[str, str]]) -> dict:
    """Replace the server's metadata by `change(metadata)`; the metadata stored. 409 when
    the server is locked (for a member) or being deleted; 403 over the quota."""
    uuid = parse_uuid(raw)
    found = await state.cells.of_instance_with_project(uuid) if uuid else None
    if found is None:
        raise lookup.not_found(raw)
    cell, project_id = found
    # Read before the cell's connection is taken (db/pool_order.py): a project's limits.
    limit = await quotas.limits(state.pool, state.settings.quota, project_id)
    async with cell.pool.acquire() as conn, conn.transaction():
        row = await _visible(conn, ctx, raw)
        updated = change(dict(row["metadata"]))
        quotas.check_metadata(limit, updated)
        return await conn.fetchval(Q.set_metadata, row["uuid"], updated)


async def change_tags(state: ApiState, ctx: RequestContext, raw: str,
                      change: Callable[[list[str]], list[str]]) -> tuple[list[str], list[str]]:
    """Replace the server's tags by `change(tags)` (duplicates dropped); (before, after).
    400 above MAX_TAGS."""
    async with (await _cell(state, raw)).acquire() as conn, conn.transaction():
        row = await _visible(conn, ctx, raw)
        before = list(row["tags"])
        after = list(dict.fromkeys(change(before)))
        if len(after) > MAX_TAGS:
            raise errors.InvalidInput(f"The number of tags exceeds the per-server limit {MAX_TAGS}.")
        await conn.execute(Q.set_tags, row["uuid"], after)
        return before, after
