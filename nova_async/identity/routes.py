"""Keystone v3's HTTP surface: the version document (handlers/versions.py), tokens and what a
token gives access to (handlers/auth.py), and the management of projects, users and roles
(handlers/projects.py, users.py, roles.py) and users' application credentials
(handlers/application_credentials.py). This module holds the route table and Keystone's
fault format."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.config import Settings
from nova_async.identity.handlers import application_credentials, auth, projects, roles, users, versions
from nova_async.identity.views import DEPS
from nova_async.role import Deps


def render_fault(err: errors.NovaAsyncError, request_id: str) -> web.Response:
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              405: "Method Not Allowed", 409: "Conflict", 503: "Service Unavailable"}
    body = {"error": {"code": err.status, "message": err.message,
                      "title": titles.get(err.status, "Internal Server Error")}}
    return w.dump(body, err.status)


GRANT = "/projects/{project_id}/users/{user_id}/roles/{role_id}"

ROUTES = [
    ("GET", "", versions.show_version),
    ("GET", "/", versions.show_version),
    ("POST", "/auth/tokens", auth.create_token),
    ("GET", "/auth/tokens", auth.show_token),  # and HEAD: check_token
    ("DELETE", "/auth/tokens", auth.delete_token),
    ("GET", "/auth/catalog", auth.show_catalog),
    ("GET", "/auth/projects", projects.list_auth_projects),
    ("GET", "/auth/domains", auth.list_auth_domains),
    ("GET", "/auth/system", auth.show_auth_system),
    ("GET", "/domains", projects.list_domains),
    ("GET", "/domains/{domain_id}", projects.show_domain),
    ("GET", "/projects", projects.list_projects),
    ("POST", "/projects", projects.create_project),
    ("GET", "/projects/{project_id}", projects.show_project),
    ("PATCH", "/projects/{project_id}", projects.update_project),
    ("DELETE", "/projects/{project_id}", projects.delete_project),
    ("GET", "/users", users.list_users),
    ("POST", "/users", users.create_user),
    ("GET", "/users/{user_id}", users.show_user),
    ("PATCH", "/users/{user_id}", users.update_user),
    ("DELETE", "/users/{user_id}", users.delete_user),
    ("GET", "/users/{user_id}/projects", projects.list_user_projects),
    ("POST", "/users/{user_id}/password", users.change_password),
    ("GET", "/users/{user_id}/application_credentials", application_credentials.list_app_creds),
    ("POST", "/users/{user_id}/application_credentials", application_credentials.create_app_cred),
    ("GET", "/users/{user_id}/application_credentials/{app_cred_id}", application_credentials.show_app_cred),
    ("DELETE", "/users/{user_id}/application_credentials/{app_cred_id}", application_credentials.delete_app_cred),
    ("GET", "/users/{user_id}/access_rules", application_credentials.list_access_rules),
    ("GET", "/roles", roles.list_roles),
    ("GET", "/roles/{role_id}", roles.show_role),
    ("GET", "/role_assignments", roles.list_role_assignments),
    ("GET", "/projects/{project_id}/users/{user_id}/roles", roles.list_grants),
    ("PUT", GRANT, roles.grant_role),
    ("GET", GRANT, roles.check_role),
    ("DELETE", GRANT, roles.revoke_role),
]


def build_app(deps: Deps) -> web.Application:
    app = w.api_app(render_fault)
    app[DEPS] = deps
    w.add_routes(app, ROUTES, head=True)
    return app


def root_routes(settings: Settings) -> list[web.RouteDef]:
    """The shared port's `GET /`, which identity answers (handlers/versions.py says why)."""
    return [web.get("/", versions.list_versions(settings))]
