"""HTTP plumbing shared by every API on the one port.

- `error_middleware`: the ONE place errors become HTTP responses, each API rendering them in
  its own fault format (Nova's `{"itemNotFound": …}`, Placement's `{"errors": […]}`, …);
  a 503 (the database or the bus away for a while) also says when to try again (Retry-After).
- `request_middleware`: request ids, the canonical access-log line, request metrics.
- `show_metrics`: /metrics, Prometheus' text format, no token needed (nothing per project).
- `read_json`: body parsing and JSON-schema validation with messages that name the field.

Bad input gets a 4xx from here, in the API's own format, whatever route it was sent to:
what no handler can use is refused before one runs (a NUL anywhere, as PostgreSQL's text
cannot hold U+0000; a header that is not UTF-8); read_body refuses a body that is not UTF-8
JSON or nests deeper than MAX_NESTING; a body aiohttp cannot read is the 4xx its parser says;
and, as a backstop for a bound a schema forgot, PostgreSQL's refusal of a value the client
chose is a 400 logged at info (`CLIENT_VALUE_ERRORS`). tests/integration/fuzz fuzzes every
route for what slips through.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import asyncpg
import jsonschema
import msgspec
import structlog
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from nova_async.common import errors, metrics, schema_fast
from nova_async.common.context import RequestContext
from nova_async.common.tokens import TokenCodec, context_from_token

log = structlog.get_logger("http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
FaultRenderer = Callable[[errors.NovaAsyncError, str], web.Response]
# Seconds a client is told to wait after a 503: about what a restart of PostgreSQL or
# RabbitMQ takes; a client that honours it comes back then.
RETRY_AFTER = "5"



class Authenticator:
    """Turns a request's headers into a RequestContext, in keystone or noauth mode."""

    def __init__(self, mode: str, codec: TokenCodec | None) -> None:
        self.mode = mode
        self.codec = codec

    def authenticate(self, request: web.Request, request_id: str) -> RequestContext:
        token = request.headers.get("X-Auth-Token")
        if not token:
            raise errors.Unauthorized("The request you have made requires authentication.")
        if self.mode == "noauth":
            return self.noauth(token, request.headers.get("X-Auth-Project-Id"), request_id)
        assert self.codec is not None
        return context_from_token(self.codec.verify(token), request_id)

    @staticmethod
    def noauth(token: str, header_project: str | None, request_id: str) -> RequestContext:
        # OpenStack's noauth2: "user:project" tokens; the user "admin" is an admin.
        user, _, project = token.partition(":")
        project = header_project or project or user
        roles = ("admin", "manager", "member", "reader") if user == "admin" else ("member", "reader")
        return RequestContext(user_id=user, user_name=user, project_id=project, project_name=project,
                              roles=roles, request_id=request_id)


AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
CONTEXT_KEY = web.RequestKey("context", RequestContext)
REQUEST_ID = web.RequestKey("request_id", str)
FAULT_RENDERER = web.AppKey("fault_renderer", object)
# The role that serves a mounted sub-application: names its requests in logs and metrics.
API_NAME = web.AppKey("api_name", str)


def public(handler: Handler) -> Handler:
    """Mark a handler as reachable without a token (version documents, token issue)."""
    handler.public = True  # type: ignore[attr-defined]
    return handler


def readers_too(handler: Handler) -> Handler:
    """Mark a write any authenticated user may make about themselves (their own password)."""
    handler.readers_too = True  # type: ignore[attr-defined]
    return handler


def context(request: web.Request) -> RequestContext:
    return request[CONTEXT_KEY]


def dump(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=msgspec.json.encode(data), status=status, headers=headers,
                        content_type="application/json")


def _status_error(request: web.Request, exc: web.HTTPException) -> errors.NovaAsyncError:
    if exc.status == 404:
        return errors.NotFound("The resource could not be found.")
    if isinstance(exc, web.HTTPMethodNotAllowed):
        refused = errors.MethodNotAllowed(f"The method {request.method} is not allowed for this resource.")
        refused.allowed = tuple(sorted(exc.allowed_methods))
        return refused
    if exc.status == 413:
        return errors.TooLarge("Request is too large.")
    err = errors.NovaAsyncError(exc.reason)
    err.status = exc.status
    return err


NUL_REFUSED = "a NUL character (U+0000), which no field can hold"


def refuse_unusable_text(request: web.Request) -> None:
    """A NUL in the path, query or headers never reaches a handler (and so never PostgreSQL,
    which refuses it in any text value with `invalid byte sequence for encoding "UTF8"`).
    The path and query are checked decoded: that is where `%00` becomes one. Nor does a
    header that is not UTF-8: aiohttp keeps its bytes as lone surrogates, which neither
    asyncpg nor a JSON fault that quotes the value can encode."""
    where = ("path" if "\x00" in request.path
             else "query string" if "\x00" in request.query_string
             else None)
    if where:
        raise errors.InvalidInput(f"The request's {where} contains {NUL_REFUSED}.")
    for name, value in request.headers.items():
        if "\x00" in value:
            raise errors.InvalidInput(f"The request's header {name!a} contains {NUL_REFUSED}.")
        if not (name.isascii() and value.isascii()) and not _utf8(name + value):
            raise errors.InvalidInput(f"The request's header {name!a} is not UTF-8.")


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


# PostgreSQL's refusals of a value the client chose that no check before the database caught:
# a string too long for its column, a number out of its column's range, text that is not a
# uuid or a time, an unusable regular expression. The bound belongs in the schema or query
# helper, and a refusal here is logged so that it gets there; the client is told, not given
# a 500. asyncpg's own DataError (the class itself, not its subclasses) is its refusal to
# encode an argument, such as a Python int beyond int4 or int8.
CLIENT_VALUE_ERRORS = (
    asyncpg.StringDataRightTruncationError,
    asyncpg.NumericValueOutOfRangeError,
    asyncpg.InvalidTextRepresentationError,
    asyncpg.InvalidDatetimeFormatError,
    asyncpg.DatetimeFieldOverflowError,
    asyncpg.CharacterNotInRepertoireError,
    asyncpg.UntranslatableCharacterError,
    asyncpg.InvalidRegularExpressionError,
)


BACKSTOP_REFUSAL = "Invalid input, refused by the database"


def _client_value_error(exc: Exception) -> bool:
    return type(exc) is asyncpg.DataError or isinstance(exc, CLIENT_VALUE_ERRORS)


def error_middleware(render: FaultRenderer) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        request_id = request.get(REQUEST_ID, "")
        try:
            refuse_unusable_text(request)
            return await handler(request)
        except errors.NovaAsyncError as exc:
            if exc.status >= 500 and not isinstance(exc, errors.NotImplementedHere):
                log.error("request failed", error=exc.message, code=exc.code)
            return _rendered(render, exc, request_id)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return _rendered(render, _status_error(request, exc), request_id)
        except (web.RequestPayloadError, HttpProcessingError) as exc:
            # aiohttp finds a body unreadable only as a handler reads it (a gzip body that is
            # not gzip, say); the parser's own error, the cause, says which 4xx.
            cause = exc if isinstance(exc, HttpProcessingError) else exc.__cause__
            parsed = isinstance(cause, HttpProcessingError)
            detail = cause.message if parsed else str(exc)
            err = errors.InvalidInput(f"The request body could not be read: {detail}")
            if parsed and 400 <= cause.code < 500:
                err.status = cause.code
            return _rendered(render, err, request_id)
        except Exception as exc:
            if _client_value_error(exc):
                # Info, not error: the client's mistake, though one a schema should catch first.
                log.info("database refused a client value", error=type(exc).__name__, detail=str(exc))
                return _rendered(render, errors.InvalidInput(f"{BACKSTOP_REFUSAL}: {exc}"), request_id)
            log.exception("unexpected error")
            err = errors.NovaAsyncError(
                f"Unexpected error; the log has the details under request id {request_id}.")
            return _rendered(render, err, request_id)

    return middleware


def _rendered(render: FaultRenderer, exc: errors.NovaAsyncError, request_id: str) -> web.Response:
    response = render(exc, request_id)
    if response.status == 503:
        response.headers["Retry-After"] = RETRY_AFTER
    if isinstance(exc, errors.MethodNotAllowed) and exc.allowed:
        response.headers["Allow"] = ", ".join(exc.allowed)
    return response


# Keystone's default roles: only admin and member change things; a reader (or any other
# role alone) may look but not touch, in every API on this port.
WRITE_ROLES = frozenset({"admin", "member"})
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not getattr(handler, "public", False):
        ctx = request.config_dict[AUTHENTICATOR].authenticate(request, request[REQUEST_ID])
        request[CONTEXT_KEY] = ctx
        if (request.method not in READ_METHODS and not WRITE_ROLES.intersection(ctx.roles)
                and not getattr(handler, "readers_too", False)):
            raise errors.Forbidden(f"Policy does not allow {request.method} {request.path} to be "
                                   f"performed: role(s) {', '.join(ctx.roles) or 'none'} may only read.")
    return await handler(request)


@web.middleware
async def request_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    request_id = f"req-{uuid.uuid4()}"
    request[REQUEST_ID] = request_id
    api = request.match_info.apps[-1].get(API_NAME, "root") if request.match_info.apps else "root"
    structlog.contextvars.bind_contextvars(request_id=request_id, role=api)
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        response.headers["x-openstack-request-id"] = request_id
        if isinstance(response, web.Response):
            # Sent here, before the canonical line is written: writing it took 0.2 ms of a
            # request after idle, which the client waited for. Streams (files, websockets) are
            # still sent by aiohttp once we return; for this one that is a no-op.
            with contextlib.suppress(ConnectionError):
                await response.prepare(request)
                await response.write_eof()
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    finally:
        seconds = time.perf_counter() - started
        log.info("request", method=request.method, path=request.path_qs, status=status,
                 ms=round(seconds * 1000, 1))
        metrics.observe_request(api, request.method, status, seconds)
        structlog.contextvars.unbind_contextvars("request_id", "role")


async def show_metrics(request: web.Request) -> web.Response:
    return web.Response(body=metrics.render(), headers={"Content-Type": metrics.CONTENT_TYPE})


def api_app(render: FaultRenderer) -> web.Application:
    """A sub-application for one API: its fault format, then authentication."""
    app = web.Application(middlewares=[error_middleware(render), auth_middleware],
                          client_max_size=1024 * 1024)
    app[FAULT_RENDERER] = render
    return app


Route = tuple[str, str, Callable[[web.Request], Awaitable[web.StreamResponse]]]


def add_routes(app: web.Application, routes: Iterable[Route], *, head: bool = False) -> None:
    """A role's route table into its app. `head`: every GET answers HEAD too (Nova and
    Keystone do; aiohttp's add_get gives it)."""
    for method, path, handler in routes:
        if head and method == "GET":
            app.router.add_get(path, handler)
        else:
            app.router.add_route(method, path, handler)


# --- request bodies --------------------------------------------------------------------


MALFORMED = "Malformed request body: it is not valid JSON."


async def read_body(request: web.Request, *, malformed: str = MALFORMED) -> Any:
    """The request's JSON body. `malformed` words the refusal of one that is not JSON (an API
    whose clients look for their own service's wording passes its own; `{reason}` in it is
    the decoder's explanation)."""
    if not request.can_read_body:
        raise errors.InvalidInput("The request body is empty; a JSON object was expected.")
    raw = await request.read()
    try:
        body = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:  # msgspec stops at ~1,000 levels of nesting
        raise errors.InvalidInput(malformed.format(reason=exc)) from None
    except UnicodeDecodeError:  # what msgspec raises for a string whose bytes are not UTF-8
        raise errors.InvalidInput("Malformed request body: it is not UTF-8.") from None
    # Walked only when it could matter: JSON spells a NUL only as an escape, and a body with
    # fewer brackets than MAX_NESTING cannot nest deeper (every body the clients send).
    if b"\\u0000" in raw or raw.count(b"[") + raw.count(b"{") > MAX_NESTING:
        _refuse_unusable(body)
    return body


# Deeper than any OpenStack request body (Keystone's auth nests 6 levels); what is deeper would
# only exhaust the recursion of whatever walks it next (schema checks, jsonb encoding).
MAX_NESTING = 32


def _refuse_unusable(body: Any) -> None:
    """Refuse a NUL in any string or key, and nesting deeper than MAX_NESTING."""
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                raise errors.InvalidInput(f"The request body contains {NUL_REFUSED}.")
        elif isinstance(value, (dict, list)):
            if depth > MAX_NESTING:
                raise errors.InvalidInput(f"The request body nests deeper than {MAX_NESTING} levels.")
            if isinstance(value, dict):
                stack.extend((key, depth) for key in value)
                stack.extend((item, depth + 1) for item in value.values())
            else:
                stack.extend((item, depth + 1) for item in value)


def validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for one of the service's body schemas. That each schema is valid is a
    test's to check (tests/unit/common/test_schema_fast.py), not each start's."""
    cls = jsonschema.validators.validator_for(schema)
    v = cls(schema, format_checker=cls.FORMAT_CHECKER)
    schema_fast.remember(v)
    return v


def check(v: jsonschema.protocols.Validator, body: Any) -> None:
    """Raise InvalidInput naming the offending field, Nova-style."""
    if schema_fast.passes(v, body):
        return
    error = jsonschema.exceptions.best_match(v.iter_errors(body))
    if error is None:
        return
    path = "/".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        raise errors.InvalidInput(f"Invalid input: {error.message}"
                                  + (f" in '{path}'" if path else ""))
    if error.validator == "additionalProperties":
        raise errors.InvalidInput(f"Invalid input{' for ' + repr(path) if path else ''}: {error.message}")
    shown = repr(error.instance)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    raise errors.InvalidInput(f"Invalid input for field/attribute {path or 'body'}. "
                              f"Value: {shown}. {error.message[:200]}")


async def read_json(request: web.Request, v: jsonschema.protocols.Validator) -> Any:
    body = await read_body(request)
    check(v, body)
    return body


_OSLO_TRUE, _OSLO_FALSE = ("1", "t", "true", "on", "y", "yes"), ("0", "f", "false", "off", "n", "no")


def oslo_bool(raw: str) -> bool | None:
    """A word read as oslo's strict bool_from_string reads it, which Nova's query parameters
    follow (any case, spaces around ignored): True, False, or None for any other word."""
    word = raw.strip().lower()
    return True if word in _OSLO_TRUE else False if word in _OSLO_FALSE else None


def query_flag(request: web.Request, name: str) -> bool | None:
    raw = request.query.get(name)
    if raw is None or raw.lower() in ("none", ""):
        return None
    if raw.lower() in ("true", "1", "yes", "on"):
        return True
    if raw.lower() in ("false", "0", "no", "off"):
        return False
    raise errors.InvalidInput(f"Invalid value {raw!r} for query parameter {name}: expected a boolean.")


# The widest integer a query parameter may carry unless its caller says otherwise: what an
# int4 column holds (minRam, minDisk), and more than any limit or offset can mean. Beyond it
# PostgreSQL or asyncpg refuses the value, after the handler has started work.
QUERY_INT_MAX = 2**31 - 1


def query_int(request: web.Request, name: str, default: int | None = None, *, minimum: int = 0,
              maximum: int = QUERY_INT_MAX) -> int | None:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise errors.InvalidInput(f"Invalid value {raw!r} for query parameter {name}: "
                                  "expected an integer.") from None
    if value < minimum:
        raise errors.InvalidInput(f"Query parameter {name} must be >= {minimum}.")
    if value > maximum:
        raise errors.InvalidInput(f"Query parameter {name} must be <= {maximum}.")
    return value


def ascii_int(text: str) -> int | None:
    """`text` as a non-negative integer when it is ASCII digits and nothing else, else None.
    Not str.isdigit(), which is true of "²" (int() refuses it: a 500 where it was trusted) and
    of "٣" (int() reads 3)."""
    return int(text) if text.isascii() and text.isdigit() else None


def parse_uuid(value: str, what: str = "id") -> str | None:
    """The canonical form of a UUID, or None when `value` is not one (names look like ids)."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None
