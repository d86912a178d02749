"""Cinder's microversions: `OpenStack-API-Version: volume 3.x` on every request, read by a
middleware and answered in kind; handlers read the version from `request[VERSION_KEY]`."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors

MIN_VERSION = (3, 0)
# 3.44 is the newest microversion whose behaviour this API has throughout (3.27+ attachments
# are the attachments API the compute side uses; 3.42 extends in-use volumes).
MAX_VERSION = (3, 44)
VERSION_KEY = web.RequestKey("volume_api_version", tuple)
HEADER = "OpenStack-API-Version"


def text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def requested(request: web.Request) -> tuple[int, int]:
    """The microversion a request asks for (3.0 when it names none), or 400/406 as Cinder."""
    raw = request.headers.get(HEADER, "")
    asked = None
    for part in raw.split(","):
        service, _, value = part.strip().partition(" ")
        if service.lower() in ("volume", "block-storage"):
            asked = value.strip()
    if not asked:
        return MIN_VERSION
    if asked.lower() == "latest":
        return MAX_VERSION
    major, dot, minor = asked.partition(".")
    if not (dot and major.isascii() and major.isdigit() and minor.isascii() and minor.isdigit()):
        raise errors.InvalidInput(f"API Version String {asked} is of invalid format. Must be of format "
                                  "MajorNum.MinorNum.")
    version = (int(major), int(minor))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise errors.NotAcceptable(f"Version {asked} is not supported by the API. Minimum is "
                                   f"{text(MIN_VERSION)} and maximum is {text(MAX_VERSION)}.",
                                   code="invalid_api_version")
    return version


@web.middleware
async def microversion_middleware(request: web.Request, handler) -> web.StreamResponse:
    version = requested(request)
    request[VERSION_KEY] = version
    response = await handler(request)
    response.headers[HEADER] = f"volume {text(version)}"
    response.headers["Vary"] = HEADER
    return response
