"""Users in Keystone v3's API: admins manage them; a user may read their own record.

Attributes Keystone does not model (email, description, ...) are kept as given and echoed
back, as Keystone does with its "extra" attributes. Passwords are only ever stored hashed."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.identity import store, views
from nova_async.identity.admin import KEEP

_MODELLED = {
    "name": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"\S"},
    "password": {"type": ["string", "null"], "maxLength": 4096},
    "enabled": {"type": "boolean"},
    "domain_id": {"type": ["string", "null"]},
    "default_project_id": {"type": ["string", "null"]},
    "options": {"type": "object"},
    "federated": {"type": "array", "maxItems": 0},
}
CREATE = w.validator({"type": "object", "required": ["user"], "properties": {"user": {
    "type": "object", "required": ["name"], "properties": _MODELLED}}})
PASSWORD = w.validator({"type": "object", "required": ["user"], "properties": {"user": {
    "type": "object", "required": ["password", "original_password"],
    "properties": {"password": {"type": "string", "minLength": 1, "maxLength": 4096},
                   "original_password": {"type": "string"}}}}})
UPDATE = w.validator({"type": "object", "required": ["user"], "properties": {"user": {
    "type": "object", "properties": _MODELLED}}})


def _extra(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in _MODELLED and k not in ("id", "links")}


def _require_self_or_admin(request: web.Request, user_id: str, action: str) -> None:
    if w.context(request).user_id != user_id:
        views.require_admin(request, action)


async def list_users(request: web.Request) -> web.Response:
    views.require_admin(request, "list_users")
    rows = []
    if request.query.get("domain_id") in (None, store.DOMAIN_ID):
        rows = await views.admin(request).users(name=request.query.get("name"),
                                                enabled=w.query_flag(request, "enabled"))
    return views.collection(request, "users", [views.user(request, r) for r in rows])


async def show_user(request: web.Request) -> web.Response:
    user_id = request.match_info["user_id"]
    _require_self_or_admin(request, user_id, "get_user")
    row = await views.admin(request).user(user_id)
    return w.dump({"user": views.user(request, row)})


async def create_user(request: web.Request) -> web.Response:
    views.require_admin(request, "create_user")
    body = (await w.read_json(request, CREATE))["user"]
    views.check_domain(body.get("domain_id"))
    row = await views.admin(request).create_user(
        body["name"], body.get("password"), enabled=body.get("enabled", True),
        default_project_id=body.get("default_project_id"), extra=_extra(body))
    return w.dump({"user": views.user(request, row)}, 201)


async def update_user(request: web.Request) -> web.Response:
    views.require_admin(request, "update_user")
    body = (await w.read_json(request, UPDATE))["user"]
    views.check_domain(body.get("domain_id"))
    row = await views.admin(request).update_user(
        request.match_info["user_id"], name=body.get("name"),
        password=body.get("password", KEEP), enabled=body.get("enabled"),
        default_project_id=body.get("default_project_id", KEEP),
        extra=_extra(body))
    return w.dump({"user": views.user(request, row)})


async def delete_user(request: web.Request) -> web.Response:
    views.require_admin(request, "delete_user")
    await views.admin(request).delete_user(request.match_info["user_id"])
    return web.Response(status=204)


@w.readers_too
async def change_password(request: web.Request) -> web.Response:
    """A user changes their own password, proving the old one (`openstack user password set`)."""
    user_id = request.match_info["user_id"]
    if w.context(request).user_id != user_id:
        raise errors.Forbidden("You are not authorized to perform the requested action: "
                               "identity:change_password (only for your own user).")
    body = (await w.read_json(request, PASSWORD))["user"]
    admin = views.admin(request)
    row = await admin.user(user_id)
    if not await asyncio.to_thread(store.check_password, body["original_password"], row["password_hash"]):
        raise errors.Unauthorized("The original password is not correct.")
    await admin.update_user(user_id, password=body["password"])
    return web.Response(status=204)
