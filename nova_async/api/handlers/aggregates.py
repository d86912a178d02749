"""`os-aggregates`: host aggregates, admin only. An aggregate groups compute hosts under
metadata; its `availability_zone` puts those hosts in that zone (else they are in the
default zone, `nova`). A host may be in several aggregates but in one zone only, so a
change that would give a host two zones is refused, as in Nova.

Metadata also feeds two scheduler filters: `filter_tenant_id` (hosts only for those
projects) and keys matched by flavors' `aggregate_instance_extra_specs:` extra specs."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web

from nova_async.api import aggregate_store, microversion
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro

_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*$"}
_ZONE = {"anyOf": [_NAME, {"type": "null"}]}
CREATE = w.validator({"type": "object", "required": ["aggregate"], "additionalProperties": False,
                      "properties": {"aggregate": {
                          "type": "object", "required": ["name"], "additionalProperties": False,
                          "properties": {"name": _NAME, "availability_zone": _ZONE}}}})
UPDATE = w.validator({"type": "object", "required": ["aggregate"], "additionalProperties": False,
                      "properties": {"aggregate": {
                          "type": "object", "minProperties": 1, "additionalProperties": False,
                          "properties": {"name": _NAME, "availability_zone": _ZONE}}}})
_HOST = {"type": "object", "required": ["host"], "additionalProperties": False,
         "properties": {"host": {"type": "string", "minLength": 1, "maxLength": 255}}}
ACTION = w.validator({"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                      "properties": {
                          "add_host": _HOST, "remove_host": _HOST,
                          "set_metadata": {"type": "object", "required": ["metadata"], "additionalProperties": False,
                                           "properties": {"metadata": {
                                               "type": "object",
                                               "propertyNames": {"minLength": 1, "maxLength": 255},
                                               "additionalProperties": {"anyOf": [
                                                   {"type": "string", "maxLength": 255}, {"type": "null"}]}}}}}})


def _view(row: asyncpg.Record, hosts: list[str], version) -> dict[str, Any]:
    metadata = dict(row["metadata"])
    if row["availability_zone"]:
        metadata["availability_zone"] = row["availability_zone"]
    out = {"id": row["id"], "name": row["name"], "availability_zone": row["availability_zone"],
           "hosts": hosts, "metadata": metadata, "created_at": iso_micro(row["created_at"]),
           "updated_at": iso_micro(row["updated_at"]) if row["updated_at"] else None,
           "deleted_at": None, "deleted": False}
    if version >= (2, 41):
        out["uuid"] = str(row["uuid"])
    return out


def _id(request: web.Request) -> int:
    raw = request.match_info["aggregate_id"]
    number = w.ascii_int(raw)
    if number is None or number > 2**31 - 1:
        raise errors.NotFound(f"Aggregate {raw} could not be found.")
    return number


def _respond(request: web.Request, found: aggregate_store.Aggregate) -> web.Response:
    return w.dump({"aggregate": _view(found.row, found.hosts, microversion.of(request))})


async def list_aggregates(request: web.Request) -> web.Response:
    require_admin(request)
    found = await aggregate_store.listing(request.app[STATE].pool)
    version = microversion.of(request)
    return w.dump({"aggregates": [_view(a.row, a.hosts, version) for a in found]})


async def show_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    found = await aggregate_store.get(request.app[STATE].pool, _id(request), request.match_info["aggregate_id"])
    return _respond(request, found)


async def create_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    body = (await w.read_json(request, CREATE))["aggregate"]
    row = await aggregate_store.create(request.app[STATE].pool, body["name"], body.get("availability_zone"))
    # Nova's create answers neither hosts nor metadata (every other answer has both).
    created = {k: v for k, v in _view(row, [], microversion.of(request)).items() if k not in ("hosts", "metadata")}
    return w.dump({"aggregate": created})


async def update_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    body = (await w.read_json(request, UPDATE))["aggregate"]
    return _respond(request, await aggregate_store.update(request.app[STATE].pool, _id(request), body))


async def delete_aggregate(request: web.Request) -> web.Response:
    require_admin(request)
    await aggregate_store.delete(request.app[STATE].pool, _id(request))
    return web.Response(status=200)


async def aggregate_action(request: web.Request) -> web.Response:
    require_admin(request)
    body = await w.read_json(request, ACTION)
    (action, args), = body.items()
    return _respond(request, await aggregate_store.act(request.app[STATE].pool, _id(request), action, args))
