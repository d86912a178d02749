"""Compute API microversions: read `OpenStack-API-Version: compute X` (or the legacy
`X-OpenStack-Nova-API-Version`), refuse what we do not speak with 406, echo the version."""

from __future__ import annotations

import re
from typing import NamedTuple

from aiohttp import web

from nova_async.common import errors


class Version(NamedTuple):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


MIN = Version(2, 1)
MAX = Version(2, 96)
_FORMAT = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")
KEY = web.RequestKey("microversion", Version)


def parse(request: web.Request) -> Version:
    raw = None
    for part in request.headers.getall("OpenStack-API-Version", []):
        for item in part.split(","):
            service, _, value = item.strip().partition(" ")
            if service.lower() == "compute":
                raw = value.strip()
    if raw is None:
        raw = request.headers.get("X-OpenStack-Nova-API-Version")
    if raw is None:
        return MIN
    if raw.lower() == "latest":
        return MAX
    m = _FORMAT.match(raw)
    if not m:
        raise errors.InvalidInput(f"API Version String {raw} is of invalid format. Must be of format "
                                  "MajorNum.MinorNum.")
    version = Version(int(m.group(1)), int(m.group(2)))
    if not MIN <= version <= MAX:
        raise errors.NotAcceptable(f"Version {raw} is not supported by the API. "
                                   f"Minimum is {MIN} and maximum is {MAX}.")
    return version


def of(request: web.Request) -> Version:
    return request.get(KEY, MIN)


@web.middleware
async def middleware(request: web.Request, handler) -> web.StreamResponse:
    version = parse(request)
    request[KEY] = version
    response = await handler(request)
    response.headers["OpenStack-API-Version"] = f"compute {version}"
    response.headers["X-OpenStack-Nova-API-Version"] = str(version)
    response.headers["Vary"] = "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
    return response
