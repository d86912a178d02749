"""Roles and role assignments in Keystone v3's API.

Three roles exist, as in a Keystone deployment bootstrapped today: admin, member and
reader, each implying the next. Only admins grant, revoke or list assignments; a user may
list their own roles on a project."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.identity import store, views


async def list_roles(request: web.Request) -> web.Response:
    views.require_admin(request, "list_roles")
    rows = []
    if request.query.get("domain_id") is None:
        rows = await views.admin(request).roles(request.query.get("name"))
    return views.collection(request, "roles", [views.role(request, r) for r in rows])


async def show_role(request: web.Request) -> web.Response:
    views.require_admin(request, "get_role")
    row = await views.admin(request).role(request.match_info["role_id"])
    return w.dump({"role": views.role(request, row)})


async def _grant_target(request: web.Request) -> tuple[str, str, str]:
    """The (user, project, role name) in the path, each of which must exist (else 404)."""
    admin = views.admin(request)
    m = request.match_info
    project = await admin.project(m["project_id"])
    user = await admin.user(m["user_id"])
    role = await admin.role(m["role_id"]) if "role_id" in m else None
    return user["id"], project["id"], role["name"] if role else ""


async def grant_role(request: web.Request) -> web.Response:
    views.require_admin(request, "create_grant")
    user_id, project_id, role = await _grant_target(request)
    await views.admin(request).grant(user_id, project_id, role)
    return web.Response(status=204)


async def check_role(request: web.Request) -> web.Response:
    views.require_admin(request, "check_grant")
    user_id, project_id, role = await _grant_target(request)
    if not await views.admin(request).has_role(user_id, project_id, role):
        raise errors.NotFound(f"Could not find role assignment with role: {request.match_info['role_id']}, "
                              f"user: {user_id}, project: {project_id}.")
    return web.Response(status=204)


async def revoke_role(request: web.Request) -> web.Response:
    views.require_admin(request, "revoke_grant")
    user_id, project_id, role = await _grant_target(request)
    await views.admin(request).revoke(user_id, project_id, role)
    return web.Response(status=204)


async def list_grants(request: web.Request) -> web.Response:
    """The roles a user has on a project (theirs to read, or an admin's)."""
    m = request.match_info
    if w.context(request).user_id != m["user_id"]:
        views.require_admin(request, "list_grants")
    user_id, project_id, _ = await _grant_target(request)
    rows = await views.admin(request).assignments(user_id=user_id, project_id=project_id)
    roles = [await views.admin(request).role(r["role_id"]) for r in rows]
    return views.collection(request, "roles", [views.role(request, r) for r in roles])


def _assignment(request: web.Request, row, names: bool, role_id: str, role_name: str,
                prior: tuple[str, str] | None) -> dict[str, Any]:
    domain = {"id": store.DOMAIN_ID, "name": store.DOMAIN_NAME}
    grant = f"{views.base(request)}/projects/{row['project_id']}/users/{row['user_id']}/roles/"
    out: dict[str, Any] = {
        "role": {"id": role_id}, "user": {"id": row["user_id"]},
        "scope": {"project": {"id": row["project_id"]}},
        "links": {"assignment": grant + (prior[0] if prior else role_id)},
    }
    if prior:
        out["links"]["prior_role"] = f"{views.base(request)}/roles/{prior[0]}"
    if names:
        out["role"]["name"] = role_name
        out["user"].update(name=row["user_name"], domain=domain)
        out["scope"]["project"].update(name=row["project_name"], domain=domain)
    return out


async def list_role_assignments(request: web.Request) -> web.Response:
    """`GET /v3/role_assignments`, filtered by user.id, scope.project.id and role.id;
    `effective` adds the roles the assigned ones imply, `include_names` adds names."""
    views.require_admin(request, "list_role_assignments")
    q = request.query
    if q.get("group.id") or q.get("scope.domain.id") or q.get("scope.system"):
        return views.collection(request, "role_assignments", [])  # no groups, domain or system grants
    # Keystone's flags count when present without a value (`?effective`).
    names, effective = (w.query_flag(request, f) is not False and f in q for f in ("include_names", "effective"))
    admin = views.admin(request)
    rows = await admin.assignments(user_id=q.get("user.id"), project_id=q.get("scope.project.id"))
    role_ids = {r["name"]: r["id"] for r in await admin.roles()}
    out, seen = [], set()
    for row in rows:
        implied = store.IMPLIED.get(row["role_name"], (row["role_name"],)) if effective else (row["role_name"],)
        for name in implied:
            key = (row["user_id"], row["project_id"], name)
            if key in seen or role_ids.get(name) is None:
                continue
            seen.add(key)
            prior = (row["role_id"], row["role_name"]) if name != row["role_name"] else None
            out.append(_assignment(request, row, names, role_ids[name], name, prior))
    wanted = q.get("role.id")
    if wanted:
        out = [a for a in out if a["role"]["id"] == wanted]
    return views.collection(request, "role_assignments", out)
