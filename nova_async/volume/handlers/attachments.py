"""/attachments: Cinder's attachments API (microversion 3.27 and later; os-complete 3.44),
what a client that attaches volumes itself drives: create (reserve, or reserve and connect
when a connector comes along), update with a connector, complete, delete, list and show. A
project sees the attachments of its own volumes only."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump, read_json, validator
from nova_async.volume import attachments
from nova_async.volume.handlers.common import ATTACHMENT_SORT_KEYS, all_projects, api, caller, page
from nova_async.volume.microversion import VERSION_KEY
from nova_async.volume.views import ts

ATTACHMENTS_VERSION = (3, 27)
COMPLETE_VERSION = (3, 44)
MODE_VERSION = (3, 54)

_connector = {"type": "object", "properties": {"host": {"type": "string", "minLength": 1, "maxLength": 255},
                                               "mountpoint": {"type": ["string", "null"], "maxLength": 255}},
              "required": ["host"]}
_uuid = {"type": "string", "format": "uuid"}
create_schema = validator({
    "type": "object", "required": ["attachment"], "additionalProperties": False,
    "properties": {"attachment": {
        "type": "object", "required": ["volume_uuid", "instance_uuid"], "additionalProperties": False,
        "properties": {"volume_uuid": _uuid, "instance_uuid": _uuid, "connector": {"oneOf": [_connector, {"type": "null"}]},
                       "mode": {"enum": ["rw", "ro", None]}}}}})
update_schema = validator({
    "type": "object", "required": ["attachment"], "additionalProperties": False,
    "properties": {"attachment": {"type": "object", "required": ["connector"], "additionalProperties": False,
                                  "properties": {"connector": _connector}}}})
action_schema = validator({
    "type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
    # Cinder reads nothing in it: the SDK sends the attachment's id, the api-ref null.
    "properties": {"os-complete": {}}})


def _needs(request: web.Request, version: tuple[int, int]) -> None:
    # Cinder answers a resource or action newer than the asked microversion with 404.
    if request[VERSION_KEY] < version:
        raise errors.NotFound(f"The resource could not be found: microversion {version[0]}.{version[1]} or later "
                              "is needed (OpenStack-API-Version: volume 3.44).", code="version_not_found")


def _owner(ctx) -> str | None:
    """The project whose volumes' attachments the caller may see (None: every project's)."""
    return None if ctx.is_admin else ctx.project_id


def summary(row: asyncpg.Record) -> dict[str, Any]:
    return {"id": str(row["id"]), "status": row["status"], "instance": str(row["instance_uuid"]),
            "volume_id": str(row["volume_id"])}


def detail(row: asyncpg.Record) -> dict[str, Any]:
    return {**summary(row), "attached_at": ts(row["attached_at"]), "detached_at": None,
            "attach_mode": row["attach_mode"], "connection_info": row["connection_info"] or {}}


async def create_attachment(request: web.Request) -> web.Response:
    ctx = caller(request)
    _needs(request, ATTACHMENTS_VERSION)
    body = (await read_json(request, create_schema))["attachment"]
    # As Cinder, a mode given below 3.54 is not read.
    mode = (body.get("mode") if request[VERSION_KEY] >= MODE_VERSION else None) or "rw"
    row, _ = await attachments.reserve(api(request), volume_id=body["volume_uuid"],
                                       instance_uuid=body["instance_uuid"], project_id=ctx.project_id,
                                       is_admin=ctx.is_admin, made_by="volume-api", mode=mode)
    connector = body.get("connector")
    if connector:
        try:
            row, _ = await attachments.connect(api(request), str(row["id"]), connector,
                                               connector.get("mountpoint") or "")
        except Exception:
            # One call made it and one call takes it back: no reserved attachment is left.
            await attachments.delete(api(request), str(row["id"]))
            raise
    row = await attachments.get(api(request), str(row["id"]), project_id=None)
    return dump({"attachment": detail(row)})


async def _listed(request: web.Request) -> list[asyncpg.Record]:
    ctx = caller(request)
    _needs(request, ATTACHMENTS_VERSION)
    q = request.query
    rows = await attachments.find(api(request), project_id=None if all_projects(request, ctx) else ctx.project_id,
                                  volume_id=q.get("volume_id"), instance_uuid=q.get("instance_id"),
                                  status=q.get("status") or q.get("attach_status"))
    rows, _ = page(request, rows, ATTACHMENT_SORT_KEYS)
    return rows


async def list_attachments(request: web.Request) -> web.Response:
    return dump({"attachments": [summary(r) for r in await _listed(request)]})


async def list_attachments_detail(request: web.Request) -> web.Response:
    return dump({"attachments": [detail(r) for r in await _listed(request)]})


async def show_attachment(request: web.Request) -> web.Response:
    ctx = caller(request)
    _needs(request, ATTACHMENTS_VERSION)
    row = await attachments.get(api(request), request.match_info["attachment_id"], project_id=_owner(ctx))
    return dump({"attachment": detail(row)})


async def update_attachment(request: web.Request) -> web.Response:
    ctx = caller(request)
    _needs(request, ATTACHMENTS_VERSION)
    connector = (await read_json(request, update_schema))["attachment"]["connector"]
    attachment_id = request.match_info["attachment_id"]
    await attachments.get(api(request), attachment_id, project_id=_owner(ctx))
    await attachments.connect(api(request), attachment_id, connector, connector.get("mountpoint") or "")
    row = await attachments.get(api(request), attachment_id, project_id=None)
    return dump({"attachment": detail(row)})


async def attachment_action(request: web.Request) -> web.Response:
    ctx = caller(request)
    _needs(request, COMPLETE_VERSION)
    await read_json(request, action_schema)
    attachment_id = request.match_info["attachment_id"]
    await attachments.get(api(request), attachment_id, project_id=_owner(ctx))
    await attachments.complete(api(request), attachment_id)
    return web.Response(status=204)


async def delete_attachment(request: web.Request) -> web.Response:
    ctx = caller(request)
    _needs(request, ATTACHMENTS_VERSION)
    attachment_id = request.match_info["attachment_id"]
    row = await attachments.get(api(request), attachment_id, project_id=_owner(ctx))
    await attachments.delete(api(request), attachment_id)
    # Cinder answers with the attachments the volume has left.
    return dump({"attachments": [summary(r) for r in await attachments.of_volume(api(request), str(row["volume_id"]))]})


ROUTES = [
    ("GET", "/attachments", list_attachments),
    ("POST", "/attachments", create_attachment),
    ("GET", "/attachments/detail", list_attachments_detail),
    ("GET", "/attachments/{attachment_id}", show_attachment),
    ("PUT", "/attachments/{attachment_id}", update_attachment),
    ("DELETE", "/attachments/{attachment_id}", delete_attachment),
    ("POST", "/attachments/{attachment_id}/action", attachment_action),
]
