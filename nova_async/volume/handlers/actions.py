"""POST /volumes/{id}/action: os-extend, os-set_bootable, os-reset_status (admin),
os-update_readonly_flag. Attachment actions are the attachments API's (A2's handlers, added
to the role's `actions` table)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import check, read_body
from nova_async.volume import schemas, volumes
from nova_async.volume.handlers.common import api, caller


async def _extend(request, ctx, volume_id, args) -> web.Response:
    await volumes.extend(api(request), ctx, volume_id, int(args["new_size"]))
    return web.Response(status=202)


async def _set_bootable(request, ctx, volume_id, args) -> web.Response:
    await volumes.set_bootable(api(request), ctx, volume_id, schemas.truthy(args["bootable"]))
    return web.Response(status=200)


async def _reset_status(request, ctx, volume_id, args) -> web.Response:
    if "status" in args:
        await volumes.reset_status(api(request), ctx, volume_id, args["status"])
    elif not ctx.is_admin:
        raise errors.Forbidden("Policy doesn't allow volume_extension:volume_admin_actions:reset_status to be "
                               "performed.")
    return web.Response(status=202)


async def _readonly(request, ctx, volume_id, args) -> web.Response:
    await volumes.get(api(request), ctx, volume_id)
    if schemas.truthy(args["readonly"]):
        raise errors.InvalidInput("Invalid input received: read-only volumes are not supported here.")
    return web.Response(status=202)


ACTIONS = {"os-extend": _extend, "os-set_bootable": _set_bootable, "os-reset_status": _reset_status,
           "os-update_readonly_flag": _readonly}


async def volume_action(request: web.Request) -> web.Response:
    ctx = caller(request)
    body = await read_body(request)
    if not isinstance(body, dict) or len(body) != 1:
        raise errors.InvalidInput("Invalid request body: an action is an object with exactly one key.")
    name = next(iter(body))
    run = ACTIONS.get(name)
    if run is None:
        raise errors.InvalidInput(f"There is no such action: {name}")
    check(schemas.action[name], body)
    return await run(request, ctx, request.match_info["volume_id"], body[name])
