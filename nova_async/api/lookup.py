"""Finding the server a request names: in the cell its mapping points to, and only if the
caller may see it. Everything else answers Nova's 404, so that a server of another project
looks exactly like one that does not exist. And a found server as show, update and rebuild
answer it (handlers/servers.py, handlers/server_actions.py)."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

IQ = queries("instances")
Q = queries("servers")
GQ = queries("server_groups")


def not_found(server_id: str) -> errors.NotFound:
    return errors.NotFound(f"Instance {server_id} could not be found.")


def refusal(row, action: str, uuid: str) -> errors.NovaAsyncError:
    """Nova's answer to `action` on a server not in a state for it: 404 when it is gone, else
    409 naming its task_state, or its vm_state."""
    if row is None:
        return not_found(uuid)
    if row["task_state"] is not None:
        return errors.Conflict(f"Cannot '{action}' instance {uuid} while it is in task_state {row['task_state']}")
    return errors.Conflict(f"Cannot '{action}' instance {uuid} while it is in vm_state {row['vm_state']}")


async def visible_instance(state: ApiState, ctx: RequestContext, server_id: str, query: str = IQ.get,
                           ) -> tuple[Pool, asyncpg.Record]:
    """(its cell's pool, its row by `query`) for the server `server_id`, or a 404."""
    uuid = parse_uuid(server_id)
    found = await _find(state, uuid, query) if uuid else None
    if found is None or not ctx.can_see(found[1]["project_id"]):
        raise not_found(server_id)
    return found


async def _find(state: ApiState, uuid: str, query: str) -> tuple[Pool, asyncpg.Record] | None:
    # Twice at most: a move between cells (copy, re-map, delete) that ends between reading
    # the mapping and reading the row leaves the row where the mapping now points.
    for _ in range(2):
        cell = await state.cells.of_instance(uuid)
        if cell is None:
            return None
        row = await cell.pool.fetchrow(query, uuid)
        if row is not None:
            return cell.pool, row
    return None


async def shown(state: ApiState, pool: Pool, uuid: str) -> dict[str, Any] | None:
    """A server as show, update and rebuild answer it: its row, latest fault and groups."""
    row = await pool.fetchrow(Q.get_with_fault, uuid)
    return None if row is None else await with_groups(state, row)


async def with_groups(state: ApiState, row: asyncpg.Record) -> dict[str, Any]:
    """The row with (2.71) the server groups it belongs to, which the API database keeps."""
    return {**row, "server_groups": await state.pool.fetchval(GQ.groups_of_array, row["uuid"])}
