"""Projects (and the one domain) in Keystone v3's API.

Admins see and manage every project. Anyone else sees the project their token is scoped to
(clients turn a project name into its id that way) and, through `/v3/auth/projects` and
`/v3/users/{their id}/projects`, the projects where they have a role."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.identity import store, views

_NAME = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": r"\S"}
_DESCRIPTION = {"type": ["string", "null"], "maxLength": 255}
_FIELDS = {
    "name": _NAME,
    "description": _DESCRIPTION,
    "enabled": {"type": "boolean"},
    "domain_id": {"type": ["string", "null"]},
    "parent_id": {"type": ["string", "null"]},
    "is_domain": {"const": False},
    "tags": {"type": "array", "maxItems": 0},
    "options": {"type": "object"},
}
CREATE = w.validator({"type": "object", "required": ["project"], "properties": {"project": {
    "type": "object", "required": ["name"], "properties": _FIELDS, "additionalProperties": False}}})
UPDATE = w.validator({"type": "object", "required": ["project"], "properties": {"project": {
    "type": "object", "properties": _FIELDS, "additionalProperties": False}}})


def _visible_or_404(request: web.Request, row, project_id: str):
    ctx = w.context(request)
    if row is None or not (ctx.is_admin or row["id"] == ctx.project_id):
        raise errors.NotFound(f"Could not find project: {project_id}.")
    return row


def _domain_filter(request: web.Request) -> bool:
    """False when the list asks for a domain other than ours (or for domains as projects)."""
    return (request.query.get("domain_id") in (None, store.DOMAIN_ID)
            and w.query_flag(request, "is_domain") is not True)


async def list_projects(request: web.Request) -> web.Response:
    ctx = w.context(request)
    rows = []
    if _domain_filter(request):
        rows = await views.admin(request).projects(name=request.query.get("name"),
                                                   only=None if ctx.is_admin else ctx.project_id,
                                                   enabled=w.query_flag(request, "enabled"))
    return views.collection(request, "projects", [views.project(request, r) for r in rows])


async def show_project(request: web.Request) -> web.Response:
    project_id = request.match_info["project_id"]
    row = await views.admin(request).project(project_id)
    return w.dump({"project": views.project(request, _visible_or_404(request, row, project_id))})


async def create_project(request: web.Request) -> web.Response:
    views.require_admin(request, "create_project")
    body = (await w.read_json(request, CREATE))["project"]
    views.check_domain(body.get("domain_id"))
    if body.get("parent_id") not in (None, store.DOMAIN_ID):
        raise errors.InvalidInput("Projects cannot be nested: parent_id must be the domain.")
    row = await views.admin(request).create_project(body["name"], body.get("description") or "",
                                                    body.get("enabled", True))
    return w.dump({"project": views.project(request, row)}, 201)


async def update_project(request: web.Request) -> web.Response:
    views.require_admin(request, "update_project")
    body = (await w.read_json(request, UPDATE))["project"]
    views.check_domain(body.get("domain_id"))
    description = body.get("description")
    row = await views.admin(request).update_project(
        request.match_info["project_id"], name=body.get("name"),
        description="" if "description" in body and description is None else description,
        enabled=body.get("enabled"))
    return w.dump({"project": views.project(request, row)})


async def delete_project(request: web.Request) -> web.Response:
    views.require_admin(request, "delete_project")
    await views.admin(request).delete_project(request.match_info["project_id"])
    return web.Response(status=204)


async def list_user_projects(request: web.Request) -> web.Response:
    user_id, ctx = request.match_info["user_id"], w.context(request)
    if not (ctx.is_admin or ctx.user_id == user_id):
        views.require_admin(request, "list_user_projects")
    rows = await views.admin(request).user_projects(user_id)
    return views.collection(request, "projects", [views.project(request, r) for r in rows])


async def list_auth_projects(request: web.Request) -> web.Response:
    """The projects where the token's user has a role; disabled ones too, as Keystone lists
    them (`enabled` says which cannot be scoped to)."""
    rows = await views.admin(request).projects_of(w.context(request).user_id)
    return views.collection(request, "projects", [views.project(request, r) for r in rows])


async def list_domains(request: web.Request) -> web.Response:
    wanted = (request.query.get("name") in (None, store.DOMAIN_NAME)
              and w.query_flag(request, "enabled") is not False)
    return views.collection(request, "domains", [views.domain(request)] if wanted else [])


async def show_domain(request: web.Request) -> web.Response:
    domain_id = request.match_info["domain_id"]
    if domain_id != store.DOMAIN_ID:
        raise errors.NotFound(f"Could not find domain: {domain_id}.")
    return w.dump({"domain": views.domain(request)})
