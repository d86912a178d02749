"""`POST /servers/{id}/action`: the body's one key names the action, and one table maps
each name to its schema and its handler. Later actions (rebuild, resize, console output…)
are new rows.

The power actions (reboot, stop, start, pause, unpause, suspend, resume) all go the same
way: in one transaction, compare-and-swap the instance from "no task, one of the allowed
vm_states" to the action's task_state — so of two concurrent requests exactly one wins and
the other is a 409 — and record the instance action; then hand the work to the instance's
compute host, which ends the task_state.

`os-getConsoleOutput` changes nothing: it asks the instance's compute host (a bus call)
for the tail of the guest's console and answers 200 with it.

`rebuild` claims the instance the same way (task_state 'rebuilding', from active, stopped
or error), records the new image and whatever else the request changes in that same
update, and hands the rebuild to the instance's host.

`lock` / `unlock` only change the row: a locked instance refuses members' actions, deletes
and metadata changes (409) until unlocked; an admin's lock only an admin can lift.

`addSecurityGroup` / `removeSecurityGroup` put a security group on the server's ports or
take it off them (the network service keeps them; api/security_groups.py).
`addFloatingIp` / `removeFloatingIp` (until 2.43) do the same with a floating IP
(api/floating_ips.py).

An admin's `os-resetState` sets the vm_state and clears the task; `injectNetworkInfo` has
nothing to push; `forceDelete` and `restore` find no soft-deleted server (deletes are never
soft here) and answer 409, as Nova does for a server in any other state.

`shelve`, `shelveOffload`, `unshelve`, `rescue` and `unrescue` are api/server_shelve.py's.

The work is done in api/server_ops.py (power, rebuild, lock, console output),
api/server_resize.py (resize, createImage) and api/server_shelve.py; this module parses and
renders.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import jsonschema
from aiohttp import web

from nova_async.api import microversion, server_ops, server_resize, server_shelve, server_views
from nova_async.api import floating_ips, lookup, remote_consoles, security_groups, volume_attachments
from nova_async.api.state import STATE, ApiState
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.context import RequestContext
from nova_async.compute.messages import PowerOp, RebootType

ActionHandler = Callable[[ApiState, RequestContext, str, Any], Awaitable[web.Response]]


@dataclass(frozen=True)
class Action:
    schema: jsonschema.protocols.Validator   # of the whole body, {"<name>": …}
    handle: ActionHandler                    # (state, ctx, instance uuid, the body's value)
    versioned: bool = False                  # handle also takes the request's microversion


def _body(name: str, value: dict[str, Any]) -> jsonschema.protocols.Validator:
    return w.validator({"type": "object", "properties": {name: value}, "required": [name],
                        "additionalProperties": False})


async def _power(state: ApiState, ctx: RequestContext, uuid: str, op: PowerOp,
                 reboot_type: RebootType = RebootType.SOFT) -> web.Response:
    await server_ops.power(state, ctx, uuid, op, reboot_type)
    return web.Response(status=202)


async def _console_output(state: ApiState, ctx: RequestContext, uuid: str,
                          value: dict[str, Any]) -> web.Response:
    return w.dump({"output": await server_ops.console_output(state, ctx, uuid, value.get("length"))})


async def _rebuild(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any],
                   version: microversion.Version) -> web.Response:
    shown = await server_ops.rebuild(state, ctx, uuid, value)
    groups, volumes = {}, {}
    if version >= (2, 75):   # from 2.75 the answer has every show field, these too
        groups = await security_groups.of_servers(state, ctx, [shown])
        volumes = await volume_attachments.volumes_attached(state, [shown])
    server = server_views.detail(shown, state.base_url, version, ctx, groups.get(uuid), volumes.get(uuid),
                                 view=server_views.View.REBUILD)
    server["adminPass"] = value.get("adminPass") or secrets.token_urlsafe(9)
    return w.dump({"server": server}, status=202)


# From 2.73 lock's value is null or {"locked_reason": …}; before, Nova reads no value at all.
_LOCK_V273 = _body("lock", {"type": ["object", "null"], "additionalProperties": False,
                            "properties": {"locked_reason": {"type": "string", "minLength": 1, "maxLength": 255}}})


async def _lock_action(state: ApiState, ctx: RequestContext, uuid: str, value: Any,
                       version: microversion.Version) -> web.Response:
    reason = None
    if version >= (2, 73):
        w.check(_LOCK_V273, {"lock": value})
        reason = (value or {}).get("locked_reason")
    await server_ops.set_lock(state, ctx, uuid, locking=True, reason=reason)
    return web.Response(status=202)


async def _unlock_action(state: ApiState, ctx: RequestContext, uuid: str, _value: Any) -> web.Response:
    await server_ops.set_lock(state, ctx, uuid, locking=False, reason=None)
    return web.Response(status=202)


async def _reboot(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, str]) -> web.Response:
    return await _power(state, ctx, uuid, PowerOp.REBOOT, RebootType(value["type"].upper()))


def _simple(op: PowerOp) -> ActionHandler:
    async def handle(state: ApiState, ctx: RequestContext, uuid: str, _value: None) -> web.Response:
        return await _power(state, ctx, uuid, op)
    return handle


_NULL = {"type": "null"}
# Nova validates no body for these actions and never reads their value: `null`, `{}` or
# anything else is taken (clients send either), so the schema accepts any value.
_IGNORED: dict[str, Any] = {}

async def _reset_state(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, str]) -> web.Response:
    await server_ops.reset_state(state, ctx, uuid, value["state"])
    return web.Response(status=202)


async def _inject_network_info(state: ApiState, ctx: RequestContext, uuid: str, _value: Any) -> web.Response:
    await server_ops.inject_network_info(state, ctx, uuid)
    return web.Response(status=202)


def _soft_deleted_only(action: str) -> ActionHandler:
    async def handle(state: ApiState, ctx: RequestContext, uuid: str, _value: Any) -> web.Response:
        await server_ops.soft_deleted_only(state, ctx, uuid, action)
        return web.Response(status=202)
    return handle


_SECURITY_GROUP = {"type": "object", "required": ["name"],
                   "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255}}}


def _security_group(*, add: bool) -> ActionHandler:
    async def handle(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any]) -> web.Response:
        await security_groups.change_server(state, ctx, uuid, value["name"], add)
        return web.Response(status=202)
    return handle


async def _add_floating_ip(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any],
                           version: microversion.Version) -> web.Response:
    floating_ips.check_action_version(version)
    await floating_ips.add_to_server(state, ctx, uuid, value["address"], value.get("fixed_address"))
    return web.Response(status=202)


async def _remove_floating_ip(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, Any],
                              version: microversion.Version) -> web.Response:
    floating_ips.check_action_version(version)
    await floating_ips.remove_from_server(state, ctx, uuid, value["address"])
    return web.Response(status=202)


ACTIONS: dict[str, Action] = {
    "reboot": Action(_body("reboot", {
        "type": "object", "required": ["type"], "additionalProperties": False,
        "properties": {"type": {"type": "string", "enum": ["HARD", "Hard", "hard", "SOFT", "Soft", "soft"]}},
    }), _reboot),
    "os-stop": Action(_body("os-stop", _IGNORED), _simple(PowerOp.STOP)),
    "os-start": Action(_body("os-start", _IGNORED), _simple(PowerOp.START)),
    "pause": Action(_body("pause", _IGNORED), _simple(PowerOp.PAUSE)),
    "unpause": Action(_body("unpause", _IGNORED), _simple(PowerOp.UNPAUSE)),
    "suspend": Action(_body("suspend", _IGNORED), _simple(PowerOp.SUSPEND)),
    "resume": Action(_body("resume", _IGNORED), _simple(PowerOp.RESUME)),
    # locked_reason from 2.73 (the handler checks the value then); before, any value.
    "lock": Action(_body("lock", _IGNORED), _lock_action, versioned=True),
    "unlock": Action(_body("unlock", _IGNORED), _unlock_action),
    "rebuild": Action(_body("rebuild", {
        "type": "object", "required": ["imageRef"], "additionalProperties": False,
        "properties": {
            "imageRef": {"type": "string", "minLength": 1},
            "name": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*$"},
            "metadata": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 255},
                         "propertyNames": {"minLength": 1, "maxLength": 255}},
            "adminPass": {"type": "string"},
            "accessIPv4": {"type": "string", "format": "ipv4"},
            "accessIPv6": {"type": "string", "format": "ipv6"},
            "user_data": {"type": ["string", "null"], "maxLength": 65535, "format": "base64"},
            "key_name": {"type": ["string", "null"], "maxLength": 255},
            "description": {"type": ["string", "null"], "maxLength": 255},
            "preserve_ephemeral": {"type": "boolean"},
            "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]},
            "trusted_image_certificates": {"type": ["array", "null"]},
        }}), _rebuild, versioned=True),
    # Nova's schema: length is optional, null, an integer >= -1 or a string of digits.
    "os-getConsoleOutput": Action(_body("os-getConsoleOutput", {
        "type": "object", "additionalProperties": False,
        "properties": {"length": {"type": ["integer", "string", "null"], "pattern": "^-?[0-9]+$",
                                  "minimum": -1}},
    }), _console_output),
    "resize": Action(_body("resize", server_resize.RESIZE_SCHEMA), server_resize.resize),
    "confirmResize": Action(_body("confirmResize", _IGNORED), server_resize.confirm_resize),
    "revertResize": Action(_body("revertResize", _IGNORED), server_resize.revert_resize),
    "createImage": Action(_body("createImage", server_resize.CREATE_IMAGE_SCHEMA), server_resize.create_image,
                          versioned=True),
    "createBackup": Action(_body("createBackup", server_resize.CREATE_BACKUP_SCHEMA), server_resize.create_backup,
                           versioned=True),
    # Before 2.56 Nova reads nothing of its value; from then on it may name a host (checked
    # by server_resize.migrate, which knows the microversion).
    "migrate": Action(_body("migrate", _IGNORED), server_resize.migrate, versioned=True),
    "shelve": Action(_body("shelve", _IGNORED), server_shelve.shelve),
    "shelveOffload": Action(_body("shelveOffload", _IGNORED), server_shelve.shelve_offload),
    # Before 2.77 Nova reads nothing of its value; from then on server_shelve.unshelve checks
    # it against the microversion's schema.
    "unshelve": Action(_body("unshelve", _IGNORED), server_shelve.unshelve, versioned=True),
    "rescue": Action(_body("rescue", server_shelve.RESCUE_SCHEMA), server_shelve.rescue, versioned=True),
    "unrescue": Action(_body("unrescue", _IGNORED), server_shelve.unrescue),
    "os-resetState": Action(_body("os-resetState", {
        "type": "object", "required": ["state"], "additionalProperties": False,
        "properties": {"state": {"type": "string", "enum": ["active", "error"]}}}), _reset_state),
    "injectNetworkInfo": Action(_body("injectNetworkInfo", _IGNORED), _inject_network_info),
    "forceDelete": Action(_body("forceDelete", _IGNORED), _soft_deleted_only("forceDelete")),
    "restore": Action(_body("restore", _IGNORED), _soft_deleted_only("restore")),
    # Remote consoles before 2.6: the type in the body names the protocol.
    "addSecurityGroup": Action(_body("addSecurityGroup", _SECURITY_GROUP), _security_group(add=True)),
    "removeSecurityGroup": Action(_body("removeSecurityGroup", _SECURITY_GROUP), _security_group(add=False)),
    # The floating IP proxy's actions, until 2.43 (api/floating_ips.py).
    "addFloatingIp": Action(_body("addFloatingIp", floating_ips.ADD_SCHEMA), _add_floating_ip, versioned=True),
    "removeFloatingIp": Action(_body("removeFloatingIp", floating_ips.REMOVE_SCHEMA), _remove_floating_ip,
                               versioned=True),
    **{name: Action(_body(name, schema), remote_consoles.legacy_console, versioned=True)
       for name, schema in remote_consoles.LEGACY_ACTIONS.items()},
}


async def create_server_action(request: web.Request) -> web.Response:
    body = await w.read_body(request)
    if not isinstance(body, dict) or len(body) != 1:
        raise errors.InvalidInput("Malformed request body: expected an object with exactly one action.")
    [name] = body
    action = ACTIONS.get(name)
    if action is None:
        raise errors.InvalidInput(f"There is no such action: {name}")
    w.check(action.schema, body)
    server_id = request.match_info["server_id"]
    uuid = w.parse_uuid(server_id)
    if uuid is None:
        raise lookup.not_found(server_id)
    if action.versioned:
        return await action.handle(request.app[STATE], w.context(request), uuid, body[name],
                                   microversion.of(request))  # type: ignore[call-arg]
    return await action.handle(request.app[STATE], w.context(request), uuid, body[name])
