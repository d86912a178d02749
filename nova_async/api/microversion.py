"""Compute API microversions: read `OpenStack-API-Version: compute X` (or the legacy
`X-OpenStack-Nova-API-Version`), refuse what we do not speak with 406, echo the version.
Its middleware also sends the request id under Nova's own name, `X-Compute-Request-Id`,
beside `x-openstack-request-id` (novaclient and Tempest read the compute one).

The legacy v2.0 API (`/compute/v2/...`) is v2.1 at its base version: microversion headers
are not read there and none are sent back, as Nova's v2.0."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common import microversion as shared
from nova_async.common.microversion import Version

MIN = Version(2, 1)
MAX = Version(2, 104)
KEY = web.RequestKey("microversion", Version)
# Handler → (the microversion from which unknown query parameters are refused, the known ones);
# routes.QUERY_PARAMS, the route table's companion.
QUERY_PARAMS = web.AppKey("query_params", dict)
STRICT_QUERIES = Version(2, 102)   # from here every GET refuses what it does not know


def legacy_v2(request: web.Request) -> bool:
    """Whether the route matched is one of the v2.0 API's (`<mount>/v2`, `<mount>/v2/...`)."""
    resource = request.match_info.route.resource
    return resource is not None and "v2" in resource.canonical.split("/")


def _check_query(request: web.Request, version: Version) -> None:
    """A 400 for a query parameter the route does not know, from the microversion on which
    Nova's query schema for it stopped allowing extras (2.102 at the latest, for every GET)."""
    since, known = request.config_dict[QUERY_PARAMS].get(request.match_info.handler, (STRICT_QUERIES, frozenset()))
    if version < since:
        return
    for name in request.query:
        if name not in known and not (name.startswith("_") and "_*" in known):
            raise errors.InvalidInput(f"Invalid input for query parameters {name}. Value: {request.query[name]}. "
                                      f"Additional properties are not allowed ({name!r} was unexpected)")


def parse(request: web.Request) -> Version:
    raw = shared.requested(request.headers.getall(shared.HEADER, []), "compute")
    if raw is None:
        raw = request.headers.get("X-OpenStack-Nova-API-Version")
    if raw is None:
        return MIN
    if raw.lower() == "latest":
        return MAX
    version = shared.parse(raw)
    if version is None:
        raise errors.InvalidInput(f"API Version String {raw} is of invalid format. Must be of format "
                                  "MajorNum.MinorNum.")
    if not MIN <= version <= MAX:
        raise errors.NotAcceptable(f"Version {raw} is not supported by the API. "
                                   f"Minimum is {MIN} and maximum is {MAX}.")
    return version


def of(request: web.Request) -> Version:
    return request.get(KEY, MIN)


@web.middleware
async def middleware(request: web.Request, handler) -> web.StreamResponse:
    legacy = legacy_v2(request)
    version = MIN if legacy else parse(request)
    request[KEY] = version
    if request.method in ("GET", "HEAD") and request.query and request.match_info.http_exception is None:
        _check_query(request, version)   # (a path no route has stays a 404)
    response = await handler(request)
    if not legacy:
        response.headers[shared.HEADER] = f"compute {version}"
        response.headers["X-OpenStack-Nova-API-Version"] = str(version)
        response.headers["Vary"] = "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
    if request_id := request.get(w.REQUEST_ID):
        response.headers["X-Compute-Request-Id"] = request_id
    return response
