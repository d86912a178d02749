"""`GET /v2.1/events`: the server event stream as Server-Sent Events (event_stream.py has how
it works, README "Live events" what a client sees). Ours, not Nova's: the same at every
microversion. Who sees what is GET /servers' rule: the caller's project, every project for
an admin asking `all_tenants`, the host for admins only."""

from __future__ import annotations

import contextlib

import structlog
from aiohttp import web

from nova_async.api import microversion, policy
from nova_async.api.event_views import Audience
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

log = structlog.get_logger("api.events")


async def list_events(request: web.Request) -> web.StreamResponse:
    state, ctx = request.app[STATE], w.context(request)
    everyone = policy.all_tenants(request)
    server_id = None
    if "server" in request.query:
        server_id = w.parse_uuid(request.query["server"])
        if server_id is None:
            raise errors.InvalidInput(f"Invalid server {request.query['server']!r}: a server's id (a UUID).")
    notifications = request.query.get("notifications", "0")
    if notifications not in ("0", "1", "true", "false"):
        raise errors.InvalidInput(f"Invalid notifications {notifications!r}: 1 or 0.")
    audience = Audience(project_id=None if everyone else ctx.project_id, server_id=server_id,
                        is_admin=ctx.is_admin, notifications=notifications in ("1", "true"))
    # The header wins: it is what a reconnecting EventSource sends.
    since = request.headers.get("Last-Event-ID") or request.query.get("since") or None
    stream = await state.events.open(audience, since)
    version = microversion.of(request)
    response = web.StreamResponse(headers={
        "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",   # a proxy in front (nginx) must not hold events back
        "OpenStack-API-Version": f"compute {version}", "X-OpenStack-Nova-API-Version": str(version),
        "x-openstack-request-id": request[w.REQUEST_ID], "X-Compute-Request-Id": request[w.REQUEST_ID]})
    try:
        await response.prepare(request)
        if request.method == "HEAD":
            return response
        async with contextlib.aclosing(stream.frames()) as frames:
            async for frame in frames:
                await response.write(frame.encode())
    except ConnectionError:
        pass   # the client went away
    except errors.Unavailable as exc:
        # Too late for a fault: the stream ends, and the client comes back with its last id.
        log.warning("event stream ended: the database is unreachable", error=exc.message)
    except Exception:
        # Likewise: the status line is sent; the log says why, the client reconnects.
        log.exception("event stream ended by an unexpected error")
    finally:
        stream.close()
    return response
