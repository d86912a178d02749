"""Keystone v3's HTTP surface: the version document (versions.py), tokens and what a token
gives access to (auth.py), and the management of projects, users and roles (projects.py,
users.py, roles.py). This module holds the route table and Keystone's fault format."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.identity.handlers import auth, projects, roles, users, versions
from nova_async.identity.views import DEPS
from nova_async.role import Deps


def render_fault(err: errors.NovaAsyncError, request_id: str) -> web.Response:
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              405: "Method Not Allowed", 409: "Conflict", 503: "Service Unavailable"}
    body = {"error": {"code": err.status, "message": err.message,
                      "title": titles.get(err.status, "Internal Server Error")}}
    return w.dump(body, err.status)


GRANT = "/projects/{project_id}/users/{user_id}/roles/{role_id}"


def build(deps: Deps) -> web.Application:
    app = w.api_app(render_fault)
    app[DEPS] = deps
    app.router.add_routes([
        web.get("", versions.show_version),
        web.get("/", versions.show_version),
        web.post("/auth/tokens", auth.create_token),
        web.get("/auth/tokens", auth.show_token),  # and HEAD: check_token
        web.delete("/auth/tokens", auth.delete_token),
        web.get("/auth/catalog", auth.show_catalog),
        web.get("/auth/projects", projects.list_auth_projects),
        web.get("/auth/domains", auth.list_auth_domains),
        web.get("/auth/system", auth.show_auth_system),
        web.get("/domains", projects.list_domains),
        web.get("/domains/{domain_id}", projects.show_domain),
        web.get("/projects", projects.list_projects),
        web.post("/projects", projects.create_project),
        web.get("/projects/{project_id}", projects.show_project),
        web.patch("/projects/{project_id}", projects.update_project),
        web.delete("/projects/{project_id}", projects.delete_project),
        web.get("/users", users.list_users),
        web.post("/users", users.create_user),
        web.get("/users/{user_id}", users.show_user),
        web.patch("/users/{user_id}", users.update_user),
        web.delete("/users/{user_id}", users.delete_user),
        web.get("/users/{user_id}/projects", projects.list_user_projects),
        web.post("/users/{user_id}/password", users.change_password),
        web.get("/roles", roles.list_roles),
        web.get("/roles/{role_id}", roles.show_role),
        web.get("/role_assignments", roles.list_role_assignments),
        web.get("/projects/{project_id}/users/{user_id}/roles", roles.list_grants),
        web.put(GRANT, roles.grant_role),
        web.get(GRANT, roles.check_role, allow_head=False),
        web.head(GRANT, roles.check_role),
        web.delete(GRANT, roles.revoke_role),
    ])
    return app
