"""`os-instance-actions`: the recorded history of a server, with each step's events."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import lookup, microversion
from nova_async.api.server_views import host_id
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro
from nova_async.db.queries import queries

Q = queries("instances")


async def _instance(request: web.Request):
    state, ctx = request.app[STATE], w.context(request)
    server_id = request.match_info["server_id"]
    db, row = await lookup.visible_instance(state, ctx, server_id, Q.get_any)
    if row["deleted_at"] and microversion.of(request) < (2, 21):
        raise lookup.not_found(server_id)
    return db, row


def _action(row, version) -> dict:
    out = {"action": row["action"], "instance_uuid": str(row["instance_uuid"]), "message": row["message"],
           "project_id": row["project_id"], "request_id": row["request_id"],
           "start_time": iso_micro(row["start_time"]), "user_id": row["user_id"]}
    if version >= (2, 58):
        out["updated_at"] = iso_micro(row["updated_at"] or row["start_time"])
    return out


async def list_instance_actions(request: web.Request) -> web.Response:
    _, rows = await _in_its_cell(request, lambda conn, uuid: conn.fetch(Q.list_actions, uuid))
    version = microversion.of(request)
    return w.dump({"instanceActions": [_action(r, version) for r in rows]})


async def _in_its_cell(request: web.Request, read):
    """`read(conn, instance uuid)` in one snapshot of the cell that holds the instance. A move
    between cells (a server that never got a host goes to cell0 right after its ERROR) copies
    the rows, re-points the mapping, then deletes them from the cell they left: read apart
    from the instance row, its actions could be read there after they were gone. So the row
    is read again in the snapshot; when it has left, it is looked up where its mapping now
    points."""
    for _ in range(2):
        db, instance = await _instance(request)
        async with db.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            if await conn.fetchrow(Q.get_any, instance["uuid"]) is not None:
                return instance, await read(conn, instance["uuid"])
    raise lookup.not_found(request.match_info["server_id"])


async def _action_and_events(request: web.Request):
    """The instance, its action and the action's events, read in one snapshot of its cell."""
    request_id = request.match_info["request_id"]

    async def read(conn, uuid):
        action = await conn.fetchrow(Q.get_action, uuid, request_id)
        return action, await conn.fetch(Q.list_events, action["id"]) if action else []

    instance, (action, events) = await _in_its_cell(request, read)
    if action is None:
        raise errors.NotFound(f"Action for request {request_id} on instance {instance['uuid']} could not be found.")
    return instance, action, events


async def show_instance_action(request: web.Request) -> web.Response:
    instance, action, rows = await _action_and_events(request)
    ctx, version = w.context(request), microversion.of(request)
    events = []
    for e in rows:
        event = {"event": e["event"], "start_time": iso_micro(e["start_time"]),
                 "finish_time": iso_micro(e["finish_time"]), "result": e["result"]}
        if ctx.is_admin:
            event["traceback"] = e["traceback"]
        if version >= (2, 62):
            event["hostId"] = host_id(instance["project_id"], e["host"])
            if ctx.is_admin:
                event["host"] = e["host"] or ""
        if version >= (2, 84):
            event["details"] = e["details"] or (e["traceback"] or "").split("\n", 1)[0] or None
        events.append(event)
    body = _action(action, version)
    body["events"] = events
    return w.dump({"instanceAction": body})
