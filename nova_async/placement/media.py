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

import html
from typing import Any

import jsonschema
import msgspec
from aiohttp import web

from nova_async.common import errors, schema_fast
from nova_async.common.web import Handler, parse_uuid, read_body


JSON = "application/json"
HTML = "text/html"
PLAIN = "text/plain"


def _quality(accept: str, offer: str) -> float | None:
    """The q an Accept header gives `offer`, taken from the most specific range that names it
    (type/subtype over type/* over */*); None when no range does or the best one says q=0."""
    kind = offer.split("/")[0]
    best: tuple[int, float] | None = None
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        media = media.lower()
        specific = 2 if media == offer else 1 if media == f"{kind}/*" else 0 if media == "*/*" else -1
        if specific < 0 or (best is not None and best[0] >= specific):
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        best = (specific, q)
    return best[1] if best is not None and best[1] > 0 else None


def _accepts_json(accept: str) -> bool:
    return _quality(accept, JSON) is not None


def fault_media_type(accept: str | None) -> str:
    """The type a fault is written in, chosen as upstream's (webob's) is: JSON when the client
    names no preference (no Accept, or */*); else HTML or JSON, whichever the Accept ranks
    higher (HTML on a tie, as webob offers it first); plain text when it accepts neither."""
    if not accept or accept.strip() == "*/*":
        return JSON
    ranked = [(q, -i, offer) for i, offer in enumerate((HTML, JSON))
              if (q := _quality(accept, offer)) is not None]
    return max(ranked)[2] if ranked else PLAIN


@web.middleware
async def fault_media(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Outermost: a fault the error middleware wrote as JSON is rewritten as HTML or plain text
    for a client whose Accept asks for that (a browser, curl -H 'Accept: text/plain'), with
    its status, title and detail, as upstream's faults are."""
    response = await handler(request)
    if response.status < 400 or not isinstance(response, web.Response) or response.content_type != JSON:
        return response
    media = fault_media_type(request.headers.get("Accept"))
    if media == JSON or not isinstance(response.body, bytes):
        return response
    fault = msgspec.json.decode(response.body)["errors"][0]
    status = f"{fault['status']} {fault['title']}"
    if media == HTML:
        text = (f"<html>\n <head>\n  <title>{status}</title>\n </head>\n <body>\n  <h1>{status}</h1>\n"
                f"  {html.escape(fault['detail'])}\n </body>\n</html>")
    else:
        text = f"{status}\n\n{fault['detail']}\n"
    headers = {k: v for k, v in response.headers.items() if k.lower() not in ("content-type", "content-length")}
    return web.Response(status=response.status, text=text, content_type=media, headers=headers)


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
    """A validator for one of placement's body schemas (checked valid by a test, as
    web.validator's)."""
    cls = jsonschema.validators.validator_for(definition)
    v = cls(definition, format_checker=_FORMATS)
    schema_fast.remember(v)
    return v


def validate(validator: jsonschema.protocols.Validator, body: Any) -> None:
    """Refuse a body the schema does not accept, in upstream's words; the error reported is
    jsonschema's best match, as `jsonschema.validate` (which upstream calls) picks it."""
    if schema_fast.passes(validator, body):
        return
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is not None:
        raise errors.InvalidInput(f"JSON does not validate: {error}")


def validate_query(request: web.Request, validator: jsonschema.protocols.Validator) -> None:
    """The query string (one value per name) against a schema, refused in upstream's words."""
    query = dict(request.query)
    if schema_fast.passes(validator, query):
        return
    error = jsonschema.exceptions.best_match(validator.iter_errors(query))
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
