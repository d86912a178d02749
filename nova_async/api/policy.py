"""Who may do what in the compute API: admins everything, members their own project."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w


def require_admin(request: web.Request) -> None:
    if not w.context(request).is_admin:
        raise errors.Forbidden(f"Policy does not allow {request.method} {request.path} to be performed.")
