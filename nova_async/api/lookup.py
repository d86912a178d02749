"""Finding the server a request names: in the cell its mapping points to, and only if the
caller may see it. Everything else answers Nova's 404, so that a server of another project
looks exactly like one that does not exist."""

from __future__ import annotations

import asyncpg

from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.queries import queries

IQ = queries("instances")


def not_found(server_id: str) -> errors.NotFound:
    return errors.NotFound(f"Instance {server_id} could not be found.")


async def visible_instance(state: ApiState, ctx: RequestContext, server_id: str, query: str = IQ.get,
                           ) -> tuple[asyncpg.Pool, asyncpg.Record]:
    """(its cell's pool, its row by `query`) for the server `server_id`, or a 404."""
    uuid = parse_uuid(server_id)
    cell = await state.cells.of_instance(uuid) if uuid else None
    row = await cell.pool.fetchrow(query, uuid) if cell else None
    if row is None or not ctx.can_see(row["project_id"]):
        raise not_found(server_id)
    return cell.pool, row
