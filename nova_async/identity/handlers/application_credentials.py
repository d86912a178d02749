"""`/v3/users/{user_id}/application_credentials`: a user's own application credentials
(app_credentials.py says what they are). Only their user makes, reads and deletes them (an
admin may read them too), and a token from a restricted one may not make or delete any."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.identity import app_credentials, tokens, views
from nova_async.identity.views import DEPS

_ROLE = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
         "anyOf": [{"required": ["id"]}, {"required": ["name"]}]}
CREATE = w.validator({"type": "object", "required": ["application_credential"], "properties": {
    "application_credential": {
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255},
                       "description": {"type": ["string", "null"], "maxLength": 255},
                       "secret": {"type": ["string", "null"], "minLength": 1},
                       "expires_at": {"type": ["string", "null"]},
                       "roles": {"type": "array", "items": _ROLE},
                       "unrestricted": {"type": ["boolean", "null"]},
                       "access_rules": {"type": "array", "maxItems": 0,
                                        "description": "access rules are not supported here"}},
        "additionalProperties": False}}})


def _own(request: web.Request, action: str, *, admin_may: bool = False) -> str:
    """The path's user, when it is the caller (or, `admin_may`, the caller is an admin)."""
    user_id = request.match_info["user_id"]
    ctx = w.context(request)
    if ctx.user_id != user_id and not (admin_may and ctx.is_admin):
        raise errors.Forbidden(f"You are not authorized to perform the requested action: identity:{action}.")
    return user_id


def _unrestricted_token(request: web.Request) -> None:
    """A token from a restricted application credential may not manage them (Keystone's 403)."""
    deps = request.app[DEPS]
    if deps.settings.identity.auth == "noauth":
        return
    body = tokens.read(deps.tokens, deps.settings, request.headers.get("X-Auth-Token", ""))
    if body.app_cred_restricted:
        raise errors.Forbidden("Using method 'application_credential' is not allowed for managing "
                               "additional application credentials.")


def _shown(request: web.Request, row, role_ids: dict[str, str]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "expires_at": row["expires_at"].strftime("%Y-%m-%dT%H:%M:%S.%f") if row["expires_at"] else None,
            "project_id": row["project_id"], "unrestricted": row["unrestricted"], "access_rules": [],
            "roles": [{"id": role_ids.get(r), "name": r, "domain_id": None} for r in row["roles"]],
            "links": {"self": f"{views.base(request)}/users/{row['user_id']}/application_credentials/{row['id']}"}}


async def _role_ids(request: web.Request) -> dict[str, str]:
    return {r["name"]: r["id"] for r in await views.admin(request).roles()}


@w.readers_too
async def create_app_cred(request: web.Request) -> web.Response:
    _own(request, "create_application_credential")
    _unrestricted_token(request)
    body = (await w.read_json(request, CREATE))["application_credential"]
    role_ids = await _role_ids(request)
    row, secret = await app_credentials.create(request.app[DEPS].pool, w.context(request), body,
                                               {v: k for k, v in role_ids.items()})
    return w.dump({"application_credential": {**_shown(request, row, role_ids), "secret": secret}}, status=201)


async def list_app_creds(request: web.Request) -> web.Response:
    user_id = _own(request, "list_application_credentials", admin_may=True)
    rows = await app_credentials.of_user(request.app[DEPS].pool, user_id, request.query.get("name"))
    role_ids = await _role_ids(request)
    return views.collection(request, "application_credentials", [_shown(request, r, role_ids) for r in rows])


async def show_app_cred(request: web.Request) -> web.Response:
    user_id = _own(request, "get_application_credential", admin_may=True)
    row = await app_credentials.get(request.app[DEPS].pool, user_id, request.match_info["app_cred_id"])
    return w.dump({"application_credential": _shown(request, row, await _role_ids(request))})


@w.readers_too
async def delete_app_cred(request: web.Request) -> web.Response:
    user_id = _own(request, "delete_application_credential")
    _unrestricted_token(request)
    deps = request.app[DEPS]
    await app_credentials.delete(deps.pool, deps.settings.identity.revocation_horizon, deps.tokens.revocations,
                                 user_id, request.match_info["app_cred_id"])
    return web.Response(status=204)


async def list_access_rules(request: web.Request) -> web.Response:
    """Access rules of the user's application credentials: none can have any here."""
    _own(request, "list_access_rules", admin_may=True)
    return views.collection(request, "access_rules", [])
