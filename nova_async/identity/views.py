"""What the identity handlers share: their dependencies, the admin check, and Keystone's
shapes for domains, projects, users and roles."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.identity import store
from nova_async.identity.admin import IdentityAdmin
from nova_async.role import Deps

DEPS = web.AppKey("identity_deps", Deps)


def base(request: web.Request) -> str:
    return request.app[DEPS].settings.base_url + "/v3"


def admin(request: web.Request) -> IdentityAdmin:
    deps = request.app[DEPS]
    return IdentityAdmin(deps.pool, deps.settings.identity.revocation_horizon, deps.tokens.revocations)


def require_admin(request: web.Request, action: str) -> None:
    """Identity is managed by admins (Keystone's `admin_required`); everyone else gets 403."""
    if not w.context(request).is_admin:
        raise errors.Forbidden(f"You are not authorized to perform the requested action: identity:{action}.")


def collection(request: web.Request, key: str, items: list[dict[str, Any]]) -> web.Response:
    self = base(request) + request.path.removeprefix("/v3")
    return w.dump({key: items, "links": {"self": self, "previous": None, "next": None}})


def domain(request: web.Request) -> dict[str, Any]:
    return {"id": store.DOMAIN_ID, "name": store.DOMAIN_NAME, "description": "The default domain",
            "enabled": True, "tags": [], "options": {},
            "links": {"self": f"{base(request)}/domains/{store.DOMAIN_ID}"}}


def project(request: web.Request, row) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "domain_id": row["domain_id"],
            "description": row["description"], "enabled": row["enabled"], "is_domain": False,
            "parent_id": row["domain_id"], "tags": [], "options": {},
            "links": {"self": f"{base(request)}/projects/{row['id']}"}}


def user(request: web.Request, row) -> dict[str, Any]:
    out = {**row["extra"], "id": row["id"], "name": row["name"], "domain_id": row["domain_id"],
           "enabled": row["enabled"], "password_expires_at": None, "options": {},
           "links": {"self": f"{base(request)}/users/{row['id']}"}}
    if row["default_project_id"]:
        out["default_project_id"] = row["default_project_id"]
    return out


def role(request: web.Request, row) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "domain_id": None, "description": row["description"],
            "options": {}, "links": {"self": f"{base(request)}/roles/{row['id']}"}}


def check_domain(domain_id: Any) -> None:
    """There is one domain; anything else named in a body is an error the caller can fix."""
    if domain_id not in (None, store.DOMAIN_ID):
        raise errors.InvalidInput(f"Only the domain '{store.DOMAIN_ID}' exists; "
                                  f"domain {domain_id!r} is not known.")
