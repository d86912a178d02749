"""Keystone v3's HTTP surface: the version document, password/token authentication, and
reading projects (admins see every project, members their own), which clients use to turn
a project name into its id."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.identity import store, tokens
from nova_async.role import Deps

DEPS = web.AppKey("identity_deps", Deps)

AUTH_SCHEMA = w.validator({
    "type": "object",
    "required": ["auth"],
    "properties": {"auth": {
        "type": "object",
        "required": ["identity"],
        "properties": {
            "identity": {"type": "object", "required": ["methods"], "properties": {
                "methods": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "password": {"type": "object"},
                "token": {"type": "object"},
            }},
            "scope": {},
        },
    }},
})


def render_fault(err: errors.NovaAsyncError, request_id: str) -> web.Response:
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict"}
    body = {"error": {"code": err.status, "message": err.message,
                      "title": titles.get(err.status, "Internal Server Error")}}
    return w.dump(body, err.status)


def _version(deps: Deps) -> dict:
    return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": f"{deps.settings.base_url}/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}]}


@w.public
async def show_version(request: web.Request) -> web.Response:
    return w.dump({"version": _version(request.app[DEPS])})


@w.public
async def create_token(request: web.Request) -> web.Response:
    deps = request.app[DEPS]
    body = await w.read_json(request, AUTH_SCHEMA)
    token, rendered = await tokens.issue(deps.pool, deps.tokens, deps.settings, body["auth"],
                                         request.headers.get("X-Auth-Token"))
    return w.dump(rendered, 201, {"X-Subject-Token": token})


def _project(row, base_url: str) -> dict:
    return {"id": row["id"], "name": row["name"], "domain_id": row["domain_id"],
            "description": row["description"], "enabled": row["enabled"], "is_domain": False,
            "parent_id": row["domain_id"], "tags": [], "options": {},
            "links": {"self": f"{base_url}/v3/projects/{row['id']}"}}


async def list_projects(request: web.Request) -> web.Response:
    deps, ctx = request.app[DEPS], w.context(request)
    rows = await deps.pool.fetch(store.Q.list_projects, request.query.get("name"),
                                 None if ctx.is_admin else ctx.project_id)
    base = deps.settings.base_url
    return w.dump({"projects": [_project(r, base) for r in rows],
                   "links": {"self": f"{base}/v3/projects", "previous": None, "next": None}})


async def show_project(request: web.Request) -> web.Response:
    deps, ctx = request.app[DEPS], w.context(request)
    project_id = request.match_info["project_id"]
    row = await deps.pool.fetchrow(store.Q.project_by_id, project_id)
    if row is None or not (ctx.is_admin or row["id"] == ctx.project_id):
        raise errors.NotFound(f"Could not find project: {project_id}.")
    return w.dump({"project": _project(row, deps.settings.base_url)})


def build(deps: Deps) -> web.Application:
    app = w.api_app(render_fault)
    app[DEPS] = deps
    app.router.add_routes([
        web.get("", show_version),
        web.get("/", show_version),
        web.post("/auth/tokens", create_token),
        web.get("/projects", list_projects),
        web.get("/projects/{project_id}", show_project),
    ])
    return app
