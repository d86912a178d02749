"""`os-instance-actions`: the recorded history of a server, with each step's events."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import instance_action_store, microversion
from nova_async.api.server_views import host_id
from nova_async.api.state import STATE
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro


def _action(row, version) -> dict:
    out = {"action": row["action"], "instance_uuid": str(row["instance_uuid"]), "message": row["message"],
           "project_id": row["project_id"], "request_id": row["request_id"],
           "start_time": iso_micro(row["start_time"]), "user_id": row["user_id"]}
    if version >= (2, 58):
        out["updated_at"] = iso_micro(row["updated_at"] or row["start_time"])
    return out


async def list_instance_actions(request: web.Request) -> web.Response:
    version = microversion.of(request)
    rows = await instance_action_store.actions(request.app[STATE], w.context(request), request.match_info["server_id"],
                                               with_deleted=version >= (2, 21))
    return w.dump({"instanceActions": [_action(r, version) for r in rows]})


async def show_instance_action(request: web.Request) -> web.Response:
    ctx, version = w.context(request), microversion.of(request)
    instance, action, rows = await instance_action_store.action_and_events(
        request.app[STATE], ctx, request.match_info["server_id"], request.match_info["request_id"],
        with_deleted=version >= (2, 21))
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
