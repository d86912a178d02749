"""`/servers/{id}/shares` (2.97): the shared file systems (Manila shares) attached to a server.

This cloud has no shared file system service, so no share can exist to attach: a server's
list is empty, and attaching, showing or detaching a share answers Nova's 404 for a share it
cannot find. The routes exist so that clients of 2.97 and later get those answers rather
than a missing resource; before 2.97 they are missing, as in Nova.
"""

from __future__ import annotations

from aiohttp import web

from nova_async.api import lookup, microversion
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.microversion import Version

_ATTACH = w.validator({
    "type": "object", "required": ["share"], "additionalProperties": False,
    "properties": {"share": {
        "type": "object", "required": ["share_id"], "additionalProperties": False,
        "properties": {"share_id": {"type": "string", "format": "uuid"},
                       "tag": {"type": "string", "minLength": 1, "maxLength": 255,
                               "pattern": "^[^\\x00-\\x1f/]*$"}}}}})


async def _server(request: web.Request) -> None:
    """The server named, visible to the caller (404s otherwise, and before 2.97)."""
    if microversion.of(request) < Version(2, 97):
        raise errors.NotFound("The resource could not be found.")
    await lookup.visible_instance(request.app[STATE], w.context(request), request.match_info["server_id"])


def _no_share(share_id: str) -> errors.NotFound:
    return errors.NotFound(f"Share {share_id} could not be found: this cloud has no shared file system service.")


async def list_shares(request: web.Request) -> web.Response:
    await _server(request)
    return w.dump({"shares": []})


async def attach_share(request: web.Request) -> web.Response:
    await _server(request)
    body = await w.read_json(request, _ATTACH)
    raise _no_share(body["share"]["share_id"])


async def show_share(request: web.Request) -> web.Response:
    await _server(request)
    raise _no_share(request.match_info["share_id"])


async def detach_share(request: web.Request) -> web.Response:
    await _server(request)
    raise _no_share(request.match_info["share_id"])
