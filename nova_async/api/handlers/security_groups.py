"""Nova's security group APIs: a server's groups (`/servers/{id}/os-security-groups`) and
the deprecated proxy to the network service (`/os-security-groups`,
`/os-security-group-rules`, microversions 2.1–2.35). The work is in api/security_groups.py."""

from __future__ import annotations

from aiohttp import web

from nova_async.api import microversion
from nova_async.api import security_groups as groups
from nova_async.api.state import STATE
from nova_async.common import web as w

_TEXT = {"type": "string", "maxLength": 255}
_GROUP = w.validator({
    "type": "object", "required": ["security_group"], "additionalProperties": False,
    "properties": {"security_group": {
        "type": "object", "required": ["name", "description"], "additionalProperties": False,
        "properties": {"name": _TEXT, "description": _TEXT}}}})
_PORT = {"type": ["integer", "string", "null"]}
_RULE = w.validator({
    "type": "object", "required": ["security_group_rule"], "additionalProperties": False,
    "properties": {"security_group_rule": {
        "type": "object", "required": ["parent_group_id"], "additionalProperties": False,
        "properties": {"parent_group_id": {"type": "string", "format": "uuid"},
                       "group_id": {"type": ["string", "null"], "format": "uuid"},
                       "ip_protocol": {"type": ["string", "null"]}, "from_port": _PORT, "to_port": _PORT,
                       "cidr": {"type": ["string", "null"]}}}}})


def _checked(request: web.Request) -> None:
    groups.check_proxy_version(microversion.of(request))


async def list_server_security_groups(request: web.Request) -> web.Response:
    found = await groups.of_server(request.app[STATE], w.context(request), request.match_info["server_id"])
    return w.dump({"security_groups": found})


async def list_security_groups(request: web.Request) -> web.Response:
    _checked(request)
    return w.dump({"security_groups": await groups.list_groups(request.app[STATE], w.context(request))})


async def show_security_group(request: web.Request) -> web.Response:
    _checked(request)
    group = await groups.show_group(request.app[STATE], w.context(request), request.match_info["group_id"])
    return w.dump({"security_group": group})


async def create_security_group(request: web.Request) -> web.Response:
    _checked(request)
    body = await w.read_json(request, _GROUP)
    group = await groups.create_group(request.app[STATE], w.context(request), body["security_group"])
    return w.dump({"security_group": group})


async def update_security_group(request: web.Request) -> web.Response:
    _checked(request)
    body = await w.read_json(request, _GROUP)
    group = await groups.update_group(request.app[STATE], w.context(request), request.match_info["group_id"],
                                      body["security_group"])
    return w.dump({"security_group": group})


async def delete_security_group(request: web.Request) -> web.Response:
    _checked(request)
    await groups.delete_group(request.app[STATE], w.context(request), request.match_info["group_id"])
    return web.Response(status=202)


async def create_security_group_rule(request: web.Request) -> web.Response:
    _checked(request)
    body = await w.read_json(request, _RULE)
    rule = await groups.create_rule(request.app[STATE], w.context(request), body["security_group_rule"])
    return w.dump({"security_group_rule": rule})


async def delete_security_group_rule(request: web.Request) -> web.Response:
    _checked(request)
    await groups.delete_rule(request.app[STATE], w.context(request), request.match_info["rule_id"])
    return web.Response(status=202)
