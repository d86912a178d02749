"""Server actions that take a server off its guest for a while, apart from their HTTP
resource (handlers/server_actions.py): `shelve`, `shelveOffload` and `unshelve`; `rescue`
and `unrescue`.

Each claims the server as the other actions do — one compare-and-swap from "no task, one
of the allowed vm_states" to the action's task_state, with the instance action recorded in
the same transaction, so of two concurrent requests exactly one wins and the other is a 409
— then hands the work on, and gives the server back if that hand-over fails.

`shelve` (from ACTIVE, SHUTOFF, PAUSED or SUSPENDED) makes the image the root disk will be
written into first, `<name>-shelved`, as createImage makes its image; the host powers the
guest off, fills the image, and the server is SHELVED, then SHELVED_OFFLOADED at once when
compute.shelved_offload_time is 0 (Nova's default). A volume-backed server has no disk to
write: it goes straight to the offload. `shelveOffload` (from SHELVED) takes the guest, its
local disks and its placement allocation off the host; the server keeps its ports and
volumes and has no host. `unshelve` goes through the conductor: a SHELVED server starts
again where it is, an offloaded one is scheduled and claimed again like a boot — into the
availability zone named (2.77; null unpins it, 2.91) or onto the host named (2.91, admins).
Naming either for a server that is not offloaded is a 409, as Nova.

`rescue` (from ACTIVE, SHUTOFF or ERROR) boots the server from a rescue disk made of the
image named (`rescue_image_ref`) or its own image, with its own root disk attached second —
or, when that image sets hw_rescue_device and hw_rescue_bus, with every disk where it was
and the rescue disk added (stable device rescue, compute/rescue.py); it answers 200 with the
`adminPass` (Nova's enable_instance_password, on by default). A volume-backed server is
rescued only that stable way, from 2.87, with a rescue image that asks for it (else 400, as
Nova). `unrescue` (from RESCUE) boots its own guest again.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable
from typing import Any

from aiohttp import web

from nova_async.api import lookup, server_resize, server_store, service_store
from nova_async.api.microversion import Version
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState, VmState
from nova_async.common.web import parse_uuid
from nova_async.db import instances
from nova_async.db.queries import queries

IQ = queries("instances")
SQ = queries("shelve")

_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^(?! )[^\\x00-\\x1f]*(?<! )$"}
# 2.77–2.90: null, or an object naming the zone (an empty object is refused, as Nova's schema).
UNSHELVE_V277 = w.validator({"type": ["object", "null"], "required": ["availability_zone"],
                             "additionalProperties": False, "properties": {"availability_zone": _NAME}})
# 2.91: null, or an object with a zone (null: unpin it) and/or a host.
UNSHELVE_V291 = w.validator({"type": ["object", "null"], "additionalProperties": False, "properties": {
    "availability_zone": {"type": ["string", "null"]}, "host": {"type": "string"}}})
RESCUE_SCHEMA = {"type": ["object", "null"], "additionalProperties": False, "properties": {
    "adminPass": {"type": "string", "maxLength": 255}, "rescue_image_ref": {"type": "string"}}}


async def _claim(db, ctx: RequestContext, uuid: str, action: str, query: str, *args: Any):
    """The server claimed by `query` and the action recorded, in one transaction (409 when
    the claim finds it in another state)."""
    async with db.acquire() as conn, conn.transaction():
        claimed = await conn.fetchrow(query, uuid, *args)
        if claimed is None:
            raise lookup.refusal(await conn.fetchrow(IQ.get, uuid), action, uuid)
        await instances.start_action(conn, uuid, ctx.request_id, action, ctx.project_id, ctx.user_id)
    return claimed


async def _given_back(db, ctx: RequestContext, uuid: str, task_states: list[str]) -> None:
    """The hand-over failed: nobody will end the task, so the server is given back."""
    await db.execute(SQ.release, uuid, task_states)
    await instances.finish_action(db, uuid, ctx.request_id, "Error")


async def _hand_over(db, ctx: RequestContext, uuid: str, task_state: str, send: Awaitable[None]) -> None:
    """Send the claimed server's task to its host; if that fails, give the server back."""
    try:
        await send
    except Exception:
        await _given_back(db, ctx, uuid, [task_state])
        raise


async def shelve(state: ApiState, ctx: RequestContext, uuid: str, _value: Any) -> web.Response:
    db, row = await server_store.changeable(state, ctx, uuid)
    if row["task_state"] is not None or row["vm_state"] not in (
            VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED) or row["host"] is None:
        raise lookup.refusal(row, "shelve", uuid)
    if not row["image_ref"]:   # volume-backed: nothing to snapshot, off the host at once
        claimed = await _claim(db, ctx, uuid, "shelve", SQ.begin_shelve, TaskState.SHELVING_OFFLOADING, None)
        await _hand_over(db, ctx, uuid, TaskState.SHELVING_OFFLOADING,
                         state.compute.shelve_offload(claimed["host"], uuid, ctx))
        return web.Response(status=202)
    image = await server_resize.snapshot_image(state, ctx, row, f"{row['display_name']}-shelved", "snapshot", {})
    try:
        claimed = await _claim(db, ctx, uuid, "shelve", SQ.begin_shelve, TaskState.SHELVING, image.id)
    except BaseException:
        await state.images.delete(image.id)
        raise
    try:
        await state.compute.shelve(claimed["host"], uuid, image.id, ctx)
    except Exception:
        await _given_back(db, ctx, uuid, [TaskState.SHELVING])
        await db.execute(SQ.forget_shelved_image, uuid, image.id)
        await state.images.delete(image.id)
        raise
    return web.Response(status=202)


async def shelve_offload(state: ApiState, ctx: RequestContext, uuid: str, _value: Any) -> web.Response:
    db, _row = await server_store.changeable(state, ctx, uuid)
    claimed = await _claim(db, ctx, uuid, "shelveOffload", SQ.begin_offload)
    await _hand_over(db, ctx, uuid, TaskState.SHELVING_OFFLOADING,
                     state.compute.shelve_offload(claimed["host"], uuid, ctx))
    return web.Response(status=202)


async def unshelve(state: ApiState, ctx: RequestContext, uuid: str, value: Any, version: Version) -> web.Response:
    zone_given, zone, host = False, None, None
    if version >= (2, 91):
        w.check(UNSHELVE_V291, value)
    elif version >= (2, 77):
        w.check(UNSHELVE_V277, value)
    if version >= (2, 77) and value:
        zone_given, zone = "availability_zone" in value, value.get("availability_zone")
        host = value.get("host") if version >= (2, 91) else None
    db, row = await server_store.changeable(state, ctx, uuid)
    if row["task_state"] is not None or row["vm_state"] not in (VmState.SHELVED, VmState.SHELVED_OFFLOADED):
        raise lookup.refusal(row, "unshelve", uuid)
    spec = dict(row["request_spec"] or {})
    if zone_given or host:
        if row["vm_state"] != VmState.SHELVED_OFFLOADED:
            # A SHELVED server is still on its host: it starts there, nowhere else.
            raise errors.Conflict(f"The unshelve action on server {uuid} in vm_state {row['vm_state']} cannot "
                                  "name an availability zone or a host: only a SHELVED_OFFLOADED server is "
                                  "scheduled again.")
        zones = await service_store.zones(state.pool, state.settings.scheduler.service_down_time)
        if zone_given and zone and not any(not r["disabled"] for r in zones.get(zone, ())):
            raise errors.InvalidInput("The requested availability zone is not available")
        expected = zone if zone_given else spec.get("availability_zone")
        if host:
            if not ctx.is_admin:
                raise errors.Forbidden("Policy doesn't allow os_compute_api:os-shelve:unshelve_to_host to be "
                                       "performed.")
            if not await service_store.compute_host_exists(state.pool, host):
                raise errors.InvalidInput(f"Compute host {host} could not be found.")
            if expected is not None and host not in {r["host"] for r in zones.get(expected, ())}:
                raise errors.Conflict(f'Host "{host}" is not in the availability zone "{expected}".')
        spec["availability_zone"] = expected
    spec["requested_host"] = host
    await _claim(db, ctx, uuid, "unshelve", SQ.begin_unshelve, spec, zone_given, zone)
    try:
        await state.conductor.unshelve(uuid, ctx)
    except Exception:
        await _given_back(db, ctx, uuid, [TaskState.UNSHELVING])
        raise
    return web.Response(status=202)


_STABLE_RESCUE = ("hw_rescue_device", "hw_rescue_bus")


async def rescue(state: ApiState, ctx: RequestContext, uuid: str, value: Any, version: Version) -> web.Response:
    value = value or {}
    password = value.get("adminPass") or secrets.token_urlsafe(9)
    db, row = await server_store.changeable(state, ctx, uuid)
    if row["task_state"] is not None or row["vm_state"] not in (VmState.ACTIVE, VmState.STOPPED, VmState.ERROR) \
            or row["host"] is None:
        raise lookup.refusal(row, "rescue", uuid)
    image_ref, properties = row["image_ref"], {}
    if value.get("rescue_image_ref") is not None:
        ref = value["rescue_image_ref"]
        image_id = parse_uuid(ref)
        try:
            if image_id is None:
                raise errors.NotFound(ref)
            image = await state.images.get(image_id, ctx.project_id, is_admin=ctx.is_admin)
        except errors.NotFound:
            raise errors.InvalidInput(f"Requested rescue image '{ref}' is not supported") from None
        if image.status != "active":
            raise errors.InvalidInput(f"Requested rescue image '{ref}' is not supported")
        image_ref, properties = image.id, image.properties
    # A volume-backed server keeps its root volume in place: only a stable device rescue
    # (2.87, the rescue image saying hw_rescue_device and hw_rescue_bus) can do that.
    if not row["image_ref"] and not (version >= (2, 87) and all(p in properties for p in _STABLE_RESCUE)):
        raise errors.InvalidInput(f"Instance {uuid} cannot be rescued: Cannot rescue a volume-backed instance")
    claimed = await _claim(db, ctx, uuid, "rescue", SQ.begin_rescue, image_ref)
    await _hand_over(db, ctx, uuid, TaskState.RESCUING, state.compute.rescue(claimed["host"], uuid, ctx))
    return w.dump({"adminPass": password})


async def unrescue(state: ApiState, ctx: RequestContext, uuid: str, _value: Any) -> web.Response:
    db, _row = await server_store.changeable(state, ctx, uuid)
    claimed = await _claim(db, ctx, uuid, "unrescue", SQ.begin_unrescue)
    await _hand_over(db, ctx, uuid, TaskState.UNRESCUING, state.compute.unrescue(claimed["host"], uuid, ctx))
    return web.Response(status=202)
