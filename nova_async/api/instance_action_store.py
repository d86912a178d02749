"""A server's recorded history apart from its HTTP resource (handlers/instance_actions.py):
its actions, and one action with its events, each read in one snapshot of the cell that
holds the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from nova_async.api import lookup
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.queries import queries

Q = queries("instances")


async def _instance(state: ApiState, ctx: RequestContext, server_id: str, with_deleted: bool):
    db, row = await lookup.visible_instance(state, ctx, server_id, Q.get_any)
    if row["deleted_at"] and not with_deleted:
        raise lookup.not_found(server_id)
    return db, row


async def _in_its_cell(state: ApiState, ctx: RequestContext, server_id: str, with_deleted: bool,
                       read: Callable[[asyncpg.Connection, Any], Awaitable[Any]]):
    """`read(conn, instance uuid)` in one snapshot of the cell that holds the instance. A move
    between cells (a server that never got a host goes to cell0 right after its ERROR) copies
    the rows, re-points the mapping, then deletes them from the cell they left: read apart
    from the instance row, its actions could be read there after they were gone. So the row
    is read again in the snapshot; when it has left, it is looked up where its mapping now
    points."""
    for _ in range(2):
        db, instance = await _instance(state, ctx, server_id, with_deleted)
        async with db.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            if await conn.fetchrow(Q.get_any, instance["uuid"]) is not None:
                return instance, await read(conn, instance["uuid"])
    raise lookup.not_found(server_id)


async def actions(state: ApiState, ctx: RequestContext, server_id: str, *,
                  with_deleted: bool) -> list[asyncpg.Record]:
    """The server's actions; a deleted server's only `with_deleted` (else 404)."""
    _, rows = await _in_its_cell(state, ctx, server_id, with_deleted,
                                 lambda conn, uuid: conn.fetch(Q.list_actions, uuid))
    return rows


async def action_and_events(state: ApiState, ctx: RequestContext, server_id: str, request_id: str, *,
                            with_deleted: bool) -> tuple[asyncpg.Record, asyncpg.Record, list[asyncpg.Record]]:
    """The instance, its action of `request_id` and the action's events, read in one snapshot
    of its cell."""
    async def read(conn, uuid):
        action = await conn.fetchrow(Q.get_action, uuid, request_id)
        return action, await conn.fetch(Q.list_events, action["id"]) if action else []

    instance, (action, events) = await _in_its_cell(state, ctx, server_id, with_deleted, read)
    if action is None:
        raise errors.NotFound(f"Action for request {request_id} on instance {instance['uuid']} could not be found.")
    return instance, action, events
