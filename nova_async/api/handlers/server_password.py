"""`os-server-password`: the encrypted password a guest agent posted for its server. This
metadata service takes no posted passwords, so there is never one to show: the answer is
Nova's for a server without one (an empty string), and clearing it has nothing to do."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import server_store
from nova_async.api.state import STATE
from nova_async.common import web as w


async def show_password(request: web.Request) -> web.Response:
    await server_store.show(request.app[STATE], w.context(request), request.match_info["server_id"])   # 404s
    return w.dump({"password": ""})


async def clear_password(request: web.Request) -> web.Response:
    await server_store.show(request.app[STATE], w.context(request), request.match_info["server_id"])
    return web.Response(status=204)
