"""Who may do what in the compute API: admins everything, members their own project."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w


def require_admin(request: web.Request) -> None:
    if not w.context(request).is_admin:
        raise errors.Forbidden(f"Policy does not allow {request.method} {request.path} to be performed.")


def all_tenants(request: web.Request) -> bool:
    """Whether a list asks for every project's servers (`all_tenants`, any value but a false
    one): admins only, a 403 for anyone else, as Nova's GET /servers."""
    wanted = request.query.get("all_tenants", "false").lower() not in ("false", "0", "no", "off")
    if wanted and not w.context(request).is_admin:
        raise errors.Forbidden("Policy does not allow listing the servers of all projects (all_tenants).")
    return wanted
