"""Placement's media-type rules and request bodies: it speaks application/json only, and says
so (406 for an Accept JSON cannot satisfy, 415 for a body of another type, 400 for a body of
no type), as upstream Placement does. Beside handlers/ because routes.py installs the
middleware and handlers read bodies through `json_body`.

A refused body is worded as upstream words it — "Malformed JSON: …" and "JSON does not
validate: " followed by jsonschema's whole account of the error (which check failed, where
in the schema, on what) — because placement's clients and its own functional tests look for
those phrases. The schemas mark UUIDs with `"format": "uuid"`, as upstream's do, checked the
way oslo's is_uuid_like reads one (hyphens optional)."""

from __future__ import annotations

from typing import Any

import jsonschema
from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import Handler, parse_uuid, read_body


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


def bodiless(handler: Handler) -> Handler:
    """Mark a GET whose answer has no JSON body to refuse (a trait's 204) or that answers
    whatever the Accept (the version document): upstream checks Accept on neither."""
    handler.bodiless = True  # type: ignore[attr-defined]
    return handler


@web.middleware
async def media_types(request: web.Request, handler: Handler) -> web.StreamResponse:
    """An Accept that JSON does not satisfy is a 406 where the answer would be JSON (a GET of
    a representation; an unknown URL stays a 404, a write that answers with no body goes
    ahead, as upstream); a body without a Content-Type a 400 (placement will not guess what
    it is). Which Content-Type a body must have is checked where a handler reads one
    (`json_body`): some PUTs take no body at all."""
    accept = request.headers.get("Accept")
    route = request.match_info
    if (accept and request.method == "GET" and route.http_exception is None
            and not getattr(route.handler, "bodiless", False) and not _accepts_json(accept)):
        raise errors.NotAcceptable(f"Only {JSON} is provided")
    if request.body_exists and not request.headers.get("Content-Type"):
        raise errors.InvalidInput("content-type header required when body is present")
    return await handler(request)


_FORMATS = jsonschema.FormatChecker(())


@_FORMATS.checks("uuid")
def _is_uuid(value: object) -> bool:
    return not isinstance(value, str) or parse_uuid(value) is not None


def schema(definition: dict[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for one of placement's body schemas."""
    cls = jsonschema.validators.validator_for(definition)
    cls.check_schema(definition)
    return cls(definition, format_checker=_FORMATS)


def validate(validator: jsonschema.protocols.Validator, body: Any) -> None:
    """Refuse a body the schema does not accept, in upstream's words; the error reported is
    jsonschema's best match, as `jsonschema.validate` (which upstream calls) picks it."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is not None:
        raise errors.InvalidInput(f"JSON does not validate: {error}")


def validate_query(request: web.Request, validator: jsonschema.protocols.Validator) -> None:
    """The query string (one value per name) against a schema, refused in upstream's words."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(request.query)))
    if error is not None:
        raise errors.InvalidInput(f"Invalid query string parameters: {error}")


async def json_body(request: web.Request, validator: jsonschema.protocols.Validator | None = None) -> Any:
    """The request's JSON body, checked against `validator`; any other media type (or none)
    is a 415 that names the one placement takes."""
    sent = request.headers.get("Content-Type") or None
    if sent is None or request.content_type != JSON:
        raise errors.UnsupportedMediaType(f"The media type {sent} is not supported, use {JSON}")
    if not request.can_read_body:  # upstream parses what is there: nothing is not JSON either
        raise errors.InvalidInput("Malformed JSON: the request has no body.")
    body = await read_body(request, malformed="Malformed JSON: {reason}")
    if validator is not None:
        validate(validator, body)
    return body
