"""Placement's media-type rules: it speaks application/json only, and says so (406 for an
Accept JSON cannot satisfy, 415 for a body of another type, 400 for a body of no type),
as upstream Placement does. Beside handlers/ because routes.py installs the middleware and
handlers read bodies through `json_body`."""

from __future__ import annotations

from typing import Any

import jsonschema
from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import Handler, check, read_body


JSON = "application/json"
# Media ranges in an Accept header that application/json satisfies.
_ACCEPTING = frozenset({JSON, "application/*", "*/*"})


def _accepts_json(accept: str) -> bool:
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        refused = any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for p in params)
        if media.lower() in _ACCEPTING and not refused:
            return True
    return False


@web.middleware
async def media_types(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An Accept that JSON does not satisfy is a 406; a body without a Content-Type a 400
    (placement will not guess what it is). Which Content-Type a body must have is checked
    where a handler reads one (`json_body`): some PUTs take no body at all."""
    accept = request.headers.get("Accept")
    if accept and not _accepts_json(accept):
        raise errors.NotAcceptable(f"Only {JSON} is provided")
    if request.body_exists and not request.headers.get("Content-Type"):
        raise errors.InvalidInput("content-type header required when body is present")
    return await handler(request)


async def json_body(request: web.Request, schema: jsonschema.protocols.Validator | None = None) -> Any:
    """The request's JSON body, checked against `schema`; any other media type (or none) is
    a 415 that names the one placement takes."""
    sent = request.headers.get("Content-Type") or None
    if sent is None or request.content_type != JSON:
        raise errors.UnsupportedMediaType(f"The media type {sent} is not supported, use {JSON}")
    body = await read_body(request)
    if schema is not None:
        check(schema, body)
    return body
