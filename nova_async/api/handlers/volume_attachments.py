"""`/servers/{server_id}/os-volume_attachments`: list, show, attach (POST), update (PUT)
and detach (DELETE) a server's volumes; the work is in api/volume_attachments.py."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import microversion
from nova_async.api import volume_attachments as va
from nova_async.api.microversion import Version
from nova_async.api.state import STATE
from nova_async.common import web as w

# Nova's schema: a device like /dev/vdb (or sdb, xvdb, hdb), a tag (2.49) without "," or
# "/", delete_on_termination (2.79).
_DEVICE = {"type": ["string", "null"], "pattern": "(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$"}
_TAG = {"type": "string", "minLength": 1, "maxLength": 60, "pattern": "^[^,/]*$"}
_VOLUME_ID = {"type": "string", "format": "uuid",
              "pattern": "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"}


def _attach_schema(version: Version):
    props: dict[str, Any] = {"volumeId": _VOLUME_ID, "device": _DEVICE}
    if version >= (2, 49):
        props["tag"] = _TAG
    if version >= (2, 79):
        props["delete_on_termination"] = {"type": "boolean"}
    return w.validator({"type": "object", "required": ["volumeAttachment"], "additionalProperties": False,
                        "properties": {"volumeAttachment": {"type": "object", "required": ["volumeId"],
                                                            "additionalProperties": False, "properties": props}}})


_SCHEMAS = {v: _attach_schema(Version(*v)) for v in ((2, 1), (2, 49), (2, 79))}


def _update_schema(version: Version):
    """Before 2.85 only a swap (a volumeId); from 2.85 delete_on_termination too, and the
    fields the attachment shows, which must stay what they are."""
    props: dict[str, Any] = {"volumeId": _VOLUME_ID}
    if version >= (2, 85):
        props.update({"device": _DEVICE, "tag": _TAG, "delete_on_termination": {"type": "boolean"},
                      "serverId": {"type": "string"}, "id": {"type": "string"}})
    return w.validator({"type": "object", "required": ["volumeAttachment"], "additionalProperties": False,
                        "properties": {"volumeAttachment": {"type": "object", "required": ["volumeId"],
                                                            "additionalProperties": False, "properties": props}}})


_UPDATE_SCHEMAS = {v: _update_schema(Version(*v)) for v in ((2, 1), (2, 85))}


def _schema_for(version: Version):
    return _SCHEMAS[(2, 79) if version >= (2, 79) else (2, 49) if version >= (2, 49) else (2, 1)]


def _view(a: va.Attachment, version: Version, *, created: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"device": a.device, "serverId": a.server_id, "volumeId": a.volume_id}
    # 2.89 replaced `id` (the volume id again) with the attachment's and mapping's ids in
    # list and show; the answer to an attach keeps it.
    if created or version < (2, 89):
        out["id"] = a.volume_id
    if version >= (2, 70):
        out["tag"] = a.tag
    if version >= (2, 79):
        out["delete_on_termination"] = a.delete_on_termination
    if version >= (2, 89) and not created:
        out["attachment_id"] = a.attachment_id
        out["bdm_uuid"] = a.bdm_id
    return out


async def list_volume_attachments(request: web.Request) -> web.Response:
    state, version = request.app[STATE], microversion.of(request)
    limit = w.query_int(request, "limit")
    offset = w.query_int(request, "offset", 0) or 0
    found = await va.listing(state, w.context(request), request.match_info["server_id"])
    page = found[offset:] if limit is None else found[offset:offset + limit]
    return w.dump({"volumeAttachments": [_view(a, version) for a in page]})


async def show_volume_attachment(request: web.Request) -> web.Response:
    state, version = request.app[STATE], microversion.of(request)
    found = await va.show(state, w.context(request), request.match_info["server_id"],
                          request.match_info["volume_id"])
    return w.dump({"volumeAttachment": _view(found, version)})


async def create_volume_attachment(request: web.Request) -> web.Response:
    state, ctx, version = request.app[STATE], w.context(request), microversion.of(request)
    body = (await w.read_json(request, _schema_for(version)))["volumeAttachment"]
    created = await va.attach(state, ctx, request.match_info["server_id"], w.parse_uuid(body["volumeId"]),
                              device=body.get("device"), tag=body.get("tag"),
                              delete_on_termination=body.get("delete_on_termination", False))
    if version >= (2, 101):
        return web.Response(status=202)   # Nova's answer from 2.101: accepted, no body
    return w.dump({"volumeAttachment": _view(created, version, created=True)})


async def update_volume_attachment(request: web.Request) -> web.Response:
    version = microversion.of(request)
    body = await w.read_json(request, _UPDATE_SCHEMAS[(2, 85) if version >= (2, 85) else (2, 1)])
    await va.update(request.app[STATE], w.context(request), request.match_info["server_id"],
                    request.match_info["volume_id"], body["volumeAttachment"])
    return web.Response(status=202)


async def delete_volume_attachment(request: web.Request) -> web.Response:
    await va.detach(request.app[STATE], w.context(request), request.match_info["server_id"],
                    request.match_info["volume_id"])
    return web.Response(status=202)
