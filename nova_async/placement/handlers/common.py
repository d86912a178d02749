"""What every placement handler needs: the pool, the admin-only policy, query-string checks."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import context, parse_uuid
from nova_async.db.pool import Pool
from nova_async.placement import microversion

PREFIX = "/placement"
POOL = web.AppKey("placement_pool", Pool)


def authorize(request: web.Request, rule: str) -> RequestContext:
    """Placement's default policy: every API call is for admins only."""
    ctx = context(request)
    if not ctx.is_admin:
        raise errors.Forbidden(f"Policy does not allow placement:{rule} to be performed.")
    return ctx


def absolute(request: web.Request, path: str) -> str:
    """A full URL for a Location header: osc-placement resolves a bare path against its
    endpoint (which already ends in /placement), so the path alone would be doubled."""
    return str(request.url.with_path(path).with_query(None))


def pool(request: web.Request) -> Pool:
    return request.app[POOL]


def check_query(request: web.Request, allowed: dict[str, int]) -> None:
    """Refuse query parameters we do not know, or that the requested microversion lacks
    (`allowed` maps each name to the minor version it appeared in)."""
    unknown = sorted(k for k in request.query
                     if k not in allowed or not microversion.at_least(request, allowed[k]))
    if unknown:
        raise errors.InvalidInput("Invalid query string parameters: Additional properties are not "
                                  f"allowed ({', '.join(repr(k) for k in unknown)} unexpected)")


def path_uuid(request: web.Request, name: str = "uuid", what: str = "resource provider") -> str:
    """The UUID in the path; a malformed one cannot name anything, so it is a 404."""
    raw = request.match_info[name]
    value = parse_uuid(raw)
    if value is None:
        raise errors.NotFound(f"No {what} with uuid {raw} found.")
    return value


def query_uuid(request: web.Request, name: str) -> str | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    value = parse_uuid(raw)
    if value is None:
        raise errors.InvalidInput(f"Invalid query string parameters: {name} {raw!r} is not a 'uuid'",
                                  code="placement.query.bad_value")
    return value

