"""`POST /servers/{id}/remote-consoles` (2.6+): a protocol and a type in, a console URL out.
What is served and Nova's checks before a URL is made: remote_consoles.py beside handlers/."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import microversion, remote_consoles
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.microversion import Version


def _schema(protocols: list[str], types: list[str]):
    return w.validator({
        "type": "object", "required": ["remote_console"], "additionalProperties": False,
        "properties": {"remote_console": {
            "type": "object", "required": ["protocol", "type"], "additionalProperties": False,
            "properties": {"protocol": {"enum": protocols}, "type": {"enum": types}}}}})


_SCHEMA_26 = _schema(["vnc", "spice", "rdp", "serial"], ["novnc", "xvpvnc", "rdp-html5", "spice-html5", "serial"])
_SCHEMA_28 = _schema(["vnc", "spice", "rdp", "serial", "mks"],
                     ["novnc", "xvpvnc", "rdp-html5", "spice-html5", "serial", "webmks"])
_SCHEMA_299 = _schema(["vnc", "spice", "rdp", "serial", "mks"],
                      ["novnc", "xvpvnc", "rdp-html5", "spice-html5", "spice-direct", "serial", "webmks"])


async def create_remote_console(request: web.Request) -> web.Response:
    version = microversion.of(request)
    if version < Version(2, 6):
        raise errors.NotFound("The resource could not be found.")
    body = await w.read_json(request, _SCHEMA_299 if version >= Version(2, 99)
                             else _SCHEMA_28 if version >= Version(2, 8) else _SCHEMA_26)
    wanted = body["remote_console"]
    url = await remote_consoles.open_console(request.app[STATE], w.context(request), request.match_info["server_id"],
                                             wanted["protocol"], wanted["type"])
    return w.dump({"remote_console": {"protocol": wanted["protocol"], "type": wanted["type"], "url": url}})
