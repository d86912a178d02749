"""Keystone's /v3/auth resources: tokens issued, validated (GET), checked (HEAD) and revoked
(DELETE), and what the caller's token gives access to: its catalog, the projects, domains and
system it could be scoped to.

Who may read or revoke which token follows Keystone's default policy: a token's own user may
do anything with it, an admin may do anything with any token (Keystone's system scope, which
this service does not have), and a user with the `service` role may also validate others'
tokens, as services' keystonemiddleware does. As in Keystone, a subject token that would not
be accepted is a 404 before the policy is asked, and a missing one after it."""

from __future__ import annotations

from typing import Any

import jsonschema
from aiohttp import web

from nova_async.common import errors, schema_fast
from nova_async.common import web as w
from nova_async.common.tokens import TokenBody
from nova_async.identity import tokens, views
from nova_async.identity.views import DEPS

SUBJECT = "X-Subject-Token"

# --- the body of POST /v3/auth/tokens --------------------------------------------------
# Keystone's schema (keystone/auth/schema.py) with the rules it checks in code folded in:
# every field's type, "id or name", a domain beside a name, the block of each method named,
# and exactly one kind of scope. Unknown fields are allowed, as Keystone allows them.

_STR = {"type": "string"}


def _id_or_name(**more: Any) -> dict[str, Any]:
    ref: dict[str, Any] = {"type": "object", "properties": {"id": _STR, "name": _STR, **more},
                           "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
                           "description": "id or name must be present."}
    if "domain" in more:  # a name means something only within its domain
        ref["dependentRequired"] = {"name": ["domain"]}
    return ref


_DOMAIN = _id_or_name()
_SCOPES = ("project", "domain", "system", "unscoped", "OS-TRUST:trust")
AUTH = w.validator({
    "type": "object",
    "required": ["auth"],
    "properties": {"auth": {
        "type": "object",
        "required": ["identity"],
        "properties": {
            "identity": {
                "type": "object",
                "required": ["methods"],
                "properties": {
                    "methods": {"type": "array", "minItems": 1, "items": _STR},
                    "password": {"type": "object", "required": ["user"], "properties": {
                        "user": _id_or_name(password=_STR, domain=_DOMAIN)}},
                    "token": {"type": "object", "required": ["id"], "properties": {"id": _STR}},
                    "application_credential": {
                        "type": "object", "required": ["secret"],
                        "properties": {"id": _STR, "name": _STR, "secret": _STR,
                                       "user": _id_or_name(domain=_DOMAIN)},
                        "anyOf": [{"required": ["id"]}, {"required": ["name", "user"]}],
                        "description": "id, or name and user, must be present."},
                },
                # A method named in `methods` needs its block: {"methods": ["password"]} alone
                # is Keystone's "Expecting to find password in identity".
                "allOf": [{"if": {"required": ["methods"], "properties": {
                               "methods": {"type": "array", "contains": {"const": method}}}},
                           "then": {"required": [method]}}
                          for method in ("password", "token", "application_credential")],
            },
            "scope": {
                "type": ["object", "string"],
                "if": {"type": "string"},
                "then": {"const": "unscoped"},
                "else": {
                    "properties": {
                        "project": _id_or_name(domain=_DOMAIN),
                        "domain": _DOMAIN,
                        "system": {"type": "object", "properties": {"all": {"type": "boolean"}}},
                        "OS-TRUST:trust": {"type": "object", "properties": {"id": _STR}},
                    },
                    "oneOf": [{"required": [kind]} for kind in _SCOPES],
                    "description": "exactly one of project, domain, system, unscoped or "
                                   "OS-TRUST:trust must be present.",
                },
            },
        },
    }},
})

_KINDS = {"object": "an object", "array": "an array", "string": "a string", "boolean": "a boolean",
          "number": "a number", "integer": "an integer", "null": "null"}


def _kind(value: Any) -> str:
    for name, kinds in (("null", type(None)), ("boolean", bool), ("string", str), ("object", dict),
                        ("array", list), ("number", (int, float))):
        if isinstance(value, kinds):
            return _KINDS[name]
    return type(value).__name__


def _message(error: jsonschema.ValidationError) -> str:
    """Keystone's wording, "Invalid input for field 'identity/password/user': ...", naming
    the field from inside `auth` as Keystone does. Wrongly typed values are described, never
    echoed: one of them may be a password."""
    path = "/".join(str(p) for p in error.absolute_path).removeprefix("auth/")
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        what = f"expected {' or '.join(_KINDS[k] for k in wanted)}, not {_kind(error.instance)}."
    elif error.validator in ("anyOf", "oneOf") and "description" in error.schema:
        what = error.schema["description"]
    else:
        what = error.message
    return f"Invalid input for field '{path}': {what}" if path else f"Invalid input: {what}"


def _check_auth(body: Any) -> dict[str, Any]:
    if schema_fast.passes(AUTH, body):
        return body["auth"]
    found = list(AUTH.iter_errors(body))
    if found:
        # The outermost problem first, and of those a wrong type before what follows from it.
        first = min(found, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        raise errors.InvalidInput(_message(first))
    return body["auth"]


# --- handlers --------------------------------------------------------------------------


def _flag(request: web.Request, name: str) -> bool:
    """A query flag read as Keystone reads one (oslo's bool_from_string): anything else is false."""
    return request.query.get(name, "").strip().lower() in ("1", "t", "true", "on", "y", "yes")


def _authorize(request: web.Request, action: str, subject: TokenBody | None) -> None:
    ctx = w.context(request)
    if (ctx.is_admin or (subject is not None and subject.user_id == ctx.user_id)
            or (action == "validate_token" and "service" in ctx.roles)):
        return
    raise errors.Forbidden(f"You are not authorized to perform the requested action: identity:{action}.")


def _subject(request: web.Request, action: str, *, grace: float = 0.0) -> tuple[str, TokenBody]:
    deps = request.app[DEPS]
    token = request.headers.get(SUBJECT, "")
    subject = tokens.read(deps.tokens, deps.settings, token, grace=grace) if token else None
    _authorize(request, action, subject)
    if subject is None:
        raise errors.NotFound("Could not find token: no X-Subject-Token in the request.")
    return token, subject


@w.public
async def create_token(request: web.Request) -> web.Response:
    deps = request.app[DEPS]
    auth = _check_auth(await w.read_body(request))
    token, body = await tokens.issue(deps.pool, deps.tokens, deps.settings, auth)
    rendered = tokens.render(deps.settings, body, include_catalog="nocatalog" not in request.query)
    return w.dump(rendered, 201, {SUBJECT: token})


async def show_token(request: web.Request) -> web.Response:
    """GET validates, HEAD checks: the same answer, HEAD's without its body."""
    settings = request.app[DEPS].settings
    grace = settings.identity.allow_expired_window if _flag(request, "allow_expired") else 0.0
    action = "check_token" if request.method == "HEAD" else "validate_token"
    token, subject = _subject(request, action, grace=grace)
    rendered = tokens.render(settings, subject, include_catalog="nocatalog" not in request.query)
    return w.dump(rendered, 200, {SUBJECT: token})


@w.readers_too
async def delete_token(request: web.Request) -> web.Response:
    """Revoke this one token, by its audit id; tokens made from it stay good, as in Keystone."""
    _, subject = _subject(request, "revoke_token")
    if request.app[DEPS].settings.identity.auth == "noauth":
        raise errors.Forbidden("In noauth mode a token is a name, not a credential: "
                               "there is nothing to revoke.")
    await views.admin(request).revoke_token(subject.audit_id)
    return web.Response(status=204)


async def show_catalog(request: web.Request) -> web.Response:
    return w.dump({"catalog": tokens.catalog(request.app[DEPS].settings, w.context(request).project_id),
                   "links": {"self": f"{views.base(request)}/auth/catalog"}})


async def list_auth_domains(request: web.Request) -> web.Response:
    """Domains the caller could scope a token to: roles are given on projects only, so none."""
    return views.collection(request, "domains", [])


async def show_auth_system(request: web.Request) -> web.Response:
    """Whether the caller could scope a token to the system: nobody can here."""
    return w.dump({"system": [], "links": {"self": f"{views.base(request)}/auth/system"}})
