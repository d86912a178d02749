"""Placement microversions and the placement fault format.

Clients name the version they speak in `OpenStack-API-Version: placement X.Y` ("latest" means
our maximum; no header means 1.0). A version outside 1.0..MAX is refused with 406 and the
range in the error body, which is how osc-placement discovers what we speak. Handlers ask
`at_least(request, 14)` to decide a representation; every response echoes the version used.
"""

from __future__ import annotations

import email.utils
import functools
import http
import re
import time

from aiohttp import web

from nova_async.common import errors
from nova_async.common import microversion as shared
from nova_async.common.microversion import Version
from nova_async.common.web import Handler, dump

HEADER = shared.HEADER
SERVICE = "placement"

MIN = Version(1, 0)
MAX = Version(1, 39)

_FORMAT = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)")

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
    # Any `major.minor` (no leading zeros) is a version: 0.5 is one we do not speak, a 406
    # with our range, as upstream answers; anything else is not a version string (400).
    m = _FORMAT.fullmatch(value.strip())
    if m is None:
        raise errors.InvalidInput(f"invalid version string: {value}")
    wanted = Version(int(m[1]), int(m[2]))
    if not MIN <= wanted <= MAX:
        raise VersionNotAcceptable(f"Unacceptable version header: {wanted}")
    return wanted


@web.middleware
async def negotiate(request: web.Request, handler: Handler) -> web.StreamResponse:
    request[VERSION] = parse(request.headers.get(HEADER))
    return await handler(request)


CACHE_HEADERS = Version(1, 15)
# Set by a handler whose bodiless answer is still a representation (a trait's PUT).
REPRESENTATION = web.RequestKey("placement_representation", bool)


def mark_representation(request: web.Request) -> None:
    request[REPRESENTATION] = True


def _is_representation(request: web.Request, response: web.StreamResponse) -> bool:
    """Which answers upstream marks uncacheable: every successful GET (a trait's 204 too),
    every answer with a body (a PUT's or a POST's), and what a handler marks; not a 201 or
    204 that only says it is done (a resource class made, allocations written, a DELETE)."""
    if not 200 <= response.status < 300:
        return False
    if request.method == "GET" or request.get(REPRESENTATION, False):
        return True
    return isinstance(response, web.Response) and bool(response.body)


async def echo_version(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every answer (errors included) names the version it was made at,
    and that it varies with the version header (named in lower case, as upstream does).
    From 1.15 a representation also says it must not be cached, with a Last-Modified. Upstream
    derives that from the rows' update times; the time of the answer is what it sends where no
    row says, and what we send everywhere: reading update times would cost the hot reads
    (candidates, allocations) another query for a header no client acts on."""
    version = request.get(VERSION)
    if version is not None:
        response.headers[HEADER] = f"{SERVICE} {version}"
        response.headers["Vary"] = HEADER.lower()
        if version >= CACHE_HEADERS and _is_representation(request, response):
            response.headers["Cache-Control"] = "no-cache"
            response.headers["Last-Modified"] = _http_date(int(time.time()))


@functools.lru_cache(maxsize=1)
def _http_date(second: int) -> str:
    """The HTTP date of `second`, made once per second, not once per answer."""
    return email.utils.formatdate(second, usegmt=True)


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
