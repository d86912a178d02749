"""Placement microversions and the placement fault format.

Clients name the version they speak in `OpenStack-API-Version: placement X.Y` ("latest" means
our maximum; no header means 1.0). A version outside 1.0..MAX is refused with 406 and the
range in the error body, which is how osc-placement discovers what we speak. Handlers ask
`at_least(request, 14)` to decide a representation; every response echoes the version used.
"""

from __future__ import annotations

import http

from aiohttp import web

from nova_async.common import errors
from nova_async.common import microversion as shared
from nova_async.common.microversion import Version
from nova_async.common.web import Handler, dump

HEADER = shared.HEADER
SERVICE = "placement"

MIN = Version(1, 0)
MAX = Version(1, 39)

VERSION = web.RequestKey("placement_version", Version)


class VersionNotAcceptable(errors.NotAcceptable):
    """A version we do not speak; the fault carries the range we do."""

    extra = {"max_version": str(MAX), "min_version": str(MIN)}


def parse(header: str | None) -> Version:
    """The placement version named in an OpenStack-API-Version header (which may list several
    services, comma-separated)."""
    value = shared.requested([header] if header else [], SERVICE)
    if value is None:
        return MIN
    if value.lower() == "latest":
        return MAX
    wanted = shared.parse(value)
    if wanted is None:
        raise errors.InvalidInput(f"invalid version string: {value!r}")
    if not MIN <= wanted <= MAX:
        raise VersionNotAcceptable(f"Unacceptable version header: {wanted}")
    return wanted


@web.middleware
async def negotiate(request: web.Request, handler: Handler) -> web.StreamResponse:
    request[VERSION] = parse(request.headers.get(HEADER))
    return await handler(request)


async def echo_version(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every answer (errors included) names the version it was made at."""
    version = request.get(VERSION)
    if version is not None:
        response.headers[HEADER] = f"{SERVICE} {version}"
        response.headers["Vary"] = HEADER


def version(request: web.Request) -> Version:
    return request.get(VERSION, MIN)


def at_least(request: web.Request, minor: int) -> bool:
    return version(request) >= Version(1, minor)


def require(request: web.Request, minor: int) -> None:
    """Routes that appear at a microversion do not exist below it."""
    if not at_least(request, minor):
        raise errors.NotFound("The resource could not be found.")


def render_fault(error: errors.NovaAsyncError, request_id: str) -> web.Response:
    """Placement's `{"errors": [...]}` body for every error, whatever raised it."""
    try:
        title = http.HTTPStatus(error.status).phrase
    except ValueError:
        title = "Error"
    code = error.code if error.code.startswith("placement.") else "placement.undefined_code"
    fault = {"status": error.status, "title": title, "detail": error.message, "code": code,
             "request_id": request_id, **getattr(error, "extra", {})}
    return dump({"errors": [fault]}, status=error.status)
