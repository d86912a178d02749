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
    db, instance = await _instance(request)
    rows = await db.fetch(Q.list_actions, instance["uuid"])
    version = microversion.of(request)
    return w.dump({"instanceActions": [_action(r, version) for r in rows]})


async def _action_and_events(request: web.Request):
    """The instance, its action and the action's events, read in one snapshot. A move between
    cells (a server that never got a host goes to cell0 right after its ERROR) copies the
    rows, then deletes them from the cell they left: read apart, the action could be found
    there and its events already gone. When the action is missing from the snapshot, the
    instance is looked up again, where its mapping now points."""
    request_id = request.match_info["request_id"]
    for _ in range(2):
        db, instance = await _instance(request)
        async with db.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            action = await conn.fetchrow(Q.get_action, instance["uuid"], request_id)
            if action is not None:
                return instance, action, await conn.fetch(Q.list_events, action["id"])
    raise errors.NotFound(f"Action for request {request_id} on instance {instance['uuid']} could not be found.")


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
