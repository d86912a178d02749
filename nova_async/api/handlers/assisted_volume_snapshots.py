"""`/os-assisted-volume-snapshots`: the service-only API a volume service calls when its
volumes are files the guest holds open (Cinder's NFS-style drivers), so that the hypervisor
takes or drops the snapshot's overlay file on the volume's behalf.

Nova checks the request, answers at once, and leaves the work to the server's host, whose
driver does it or reports the snapshot failed to the volume service. nova-async's volume
role snapshots its volumes itself, in use or not, and never asks for this help; its hosts
have nothing to do for such a request, which is checked as Nova checks it (the volume must
be attached to a server on a host) and then acknowledged, as Nova acknowledges one that
its driver cannot serve.
"""

from __future__ import annotations

import json

import structlog
from aiohttp import web

from nova_async.api import volume_attachments
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

log = structlog.get_logger("api")

_CREATE = w.validator({
    "type": "object", "required": ["snapshot"], "additionalProperties": False,
    "properties": {"snapshot": {
        "type": "object", "required": ["volume_id", "create_info"], "additionalProperties": False,
        "properties": {
            "volume_id": {"type": "string", "format": "uuid"},
            "create_info": {
                "type": "object", "required": ["snapshot_id", "type", "new_file"], "additionalProperties": False,
                "properties": {"snapshot_id": {"type": "string", "format": "uuid"},
                               "type": {"type": "string", "enum": ["qcow2"]},
                               "new_file": {"type": "string", "minLength": 1, "maxLength": 255},
                               "id": {"type": "string", "format": "uuid"}}}}}}})


def _service_only(request: web.Request, action: str) -> None:
    if not {"service", "admin"} & set(w.context(request).roles):
        raise errors.Forbidden(f"Policy doesn't allow os_compute_api:os-assisted-volume-snapshots:{action} "
                               "to be performed.")


async def _attached(request: web.Request, volume_id: str, missing: type[errors.NovaAsyncError]) -> None:
    """The volume is attached to a server on a host; `missing` (Nova's 400 on create, 404 on
    delete) otherwise."""
    rows = await volume_attachments.mappings_of_volume(request.app[STATE], volume_id)
    if not rows:
        raise missing(f"No volume Block Device Mapping with id {volume_id}.")
    if not any(r["host"] for r in rows):
        raise errors.InvalidInput(f"Instance {rows[0]['instance_uuid']} is not ready: it is on no host.")


@w.readers_too  # the service role alone may call it; checked below
async def create_snapshot(request: web.Request) -> web.Response:
    _service_only(request, "create")
    body = (await w.read_json(request, _CREATE))["snapshot"]
    await _attached(request, body["volume_id"], errors.InvalidInput)
    snapshot_id = body["create_info"]["snapshot_id"]
    log.info("assisted volume snapshot acknowledged: volumes here need no hypervisor help",
             volume_id=body["volume_id"], snapshot_id=snapshot_id)
    return w.dump({"snapshot": {"id": snapshot_id, "volumeId": body["volume_id"]}})


@w.readers_too
async def delete_snapshot(request: web.Request) -> web.Response:
    _service_only(request, "delete")
    raw = request.query.get("delete_info")
    try:
        info = json.loads(raw) if raw is not None else None
    except ValueError:
        info = None
    if not isinstance(info, dict) or not isinstance(info.get("volume_id"), str):
        raise errors.InvalidInput("The delete_info query parameter must be JSON with a volume_id.")
    await _attached(request, info["volume_id"], errors.NotFound)
    log.info("assisted volume snapshot deletion acknowledged", volume_id=info["volume_id"],
             snapshot_id=request.match_info["snapshot_id"])
    return web.Response(status=204)
