"""Tokens as Keystone's /v3/auth/tokens deals in them: issue one (authenticate a password or
an existing token, pick the scope), read one back for validation, check or revocation, and
render either in Keystone v3's shape with the service catalog.

Issue expects a body the JSON schema in handlers/auth.py has already checked; the rules left
here are the ones that need the database or the token's signature."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from datetime import datetime, timezone
from typing import Any

from nova_async.common import errors
from nova_async.common.tokens import TokenBody, TokenCodec
from nova_async.common.web import Authenticator
from nova_async.config import Settings
from nova_async.db.pool import Pool
from nova_async.identity import app_credentials, store

# Block storage is listed under its official type and under `volumev3`, the alias older
# clients (python-cinderclient) look for; its URL names the token's project, as Cinder's
# catalog entries do, and so a catalog without a project leaves it out, as Keystone leaves
# out an endpoint whose URL needs a project it does not have.
SERVICES = (("identity", "keystone", "/v3"), ("compute", "nova", "/compute/v2.1"),
            ("image", "glance", "/image"), ("network", "neutron", "/network"),
            ("placement", "placement", "/placement"),
            ("block-storage", "cinder", "/volume/v3/{project_id}"),
            ("volumev3", "cinderv3", "/volume/v3/{project_id}"))
UNAUTHORIZED = "The request you have made requires authentication."


def _stable_id(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]


def catalog(settings: Settings, project_id: str = "") -> list[dict[str, Any]]:
    base, region = settings.base_url, settings.identity.region
    return [{"id": _stable_id(kind), "type": kind, "name": name,
             "endpoints": [{"id": _stable_id(kind, iface), "interface": iface, "region": region,
                            "region_id": region, "url": base + path.format(project_id=project_id)}
                           for iface in ("public", "internal", "admin")]}
            for kind, name, path in SERVICES if project_id or "{project_id}" not in path]


def _ts(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def _authenticate(pool: Pool, codec: TokenCodec, identity: dict[str, Any]
                        ) -> tuple[Any, tuple[str, ...]]:
    """The user row the identity proves, and the methods the new token records."""
    methods = tuple(dict.fromkeys(identity["methods"]))
    if "password" in methods:
        user_ref = identity["password"]["user"]
        user = await store.find_user(pool, user_ref)
        # No password given fails like a wrong one, as in Keystone.
        ok = "password" in user_ref and await asyncio.get_running_loop().run_in_executor(
            None, store.check_password, user_ref["password"], user["password_hash"])
        if not ok:
            raise errors.Unauthorized(UNAUTHORIZED)
        return user, methods
    if "token" in methods:
        parent = codec.verify(identity["token"]["id"])
        user = await store.find_user(pool, {"id": parent.user_id})  # still there, still enabled
        return user, tuple(dict.fromkeys(methods + parent.methods))
    raise errors.Unauthorized(f"Unsupported authentication method(s): {', '.join(methods)}")


async def _project(pool: Pool, scope: Any, user_id: str):
    """The project the token is for. Every token here is scoped to a project: without a scope
    (or with "unscoped"), the user's default one, as Keystone picks for a request without scope.
    Nobody has a role on the domain or the system, so those scopes are refused as Keystone
    refuses a user without such a role."""
    if not isinstance(scope, dict) or "unscoped" in scope:
        return await store.find_project(pool, None, user_id)
    if "project" in scope:
        return await store.find_project(pool, scope["project"], user_id)
    if "domain" in scope:
        domain = scope["domain"].get("id") or scope["domain"].get("name")
        raise errors.Unauthorized(f"User {user_id} has no access to domain {domain}.")
    if "system" in scope:
        raise errors.Unauthorized(f"User {user_id} has no access to the system.")
    raise errors.NotFound(f"Could not find trust: {scope['OS-TRUST:trust'].get('id')}.")


async def issue(pool: Pool, codec: TokenCodec, settings: Settings, auth: dict[str, Any]
                ) -> tuple[str, TokenBody]:
    now = time.time()
    identity = auth["identity"]
    if "application_credential" in identity["methods"]:
        # Its project and roles are the credential's: a request may not choose a scope.
        if isinstance(auth.get("scope"), dict):
            raise errors.Unauthorized("Application credentials cannot request a scope.")
        cred, user, project = await app_credentials.authenticate(pool, identity["application_credential"])
        expires = now + settings.identity.token_ttl
        if cred["expires_at"] is not None:
            expires = min(expires, cred["expires_at"].timestamp())
        body = TokenBody(user_id=user["id"], user_name=user["name"], project_id=project["id"],
                         project_name=project["name"], roles=tuple(cred["roles"]), issued_at=now,
                         expires_at=expires, audit_id=secrets.token_urlsafe(16), methods=("application_credential",),
                         app_cred_id=cred["id"], app_cred_name=cred["name"],
                         app_cred_restricted=not cred["unrestricted"])
    else:
        user, methods = await _authenticate(pool, codec, identity)
        project = await _project(pool, auth.get("scope"), user["id"])
        roles = await store.roles_on(pool, user["id"], project["id"])
        body = TokenBody(user_id=user["id"], user_name=user["name"], project_id=project["id"],
                         project_name=project["name"], roles=roles, issued_at=now,
                         expires_at=now + settings.identity.token_ttl, audit_id=secrets.token_urlsafe(16),
                         methods=methods)
    if settings.identity.auth == "noauth":
        return f"{user['name']}:{project['id']}", body
    return codec.issue(body), body


def read(codec: TokenCodec, settings: Settings, token: str, *, grace: float = 0.0) -> TokenBody:
    """The token a caller asks about (validate, check, revoke), or Keystone's 404 for one this
    service would not accept; `grace`: seconds past its expiry it may be (allow_expired)."""
    if settings.identity.auth == "noauth":
        # A noauth token is a name ("user:project"), accepted as every API accepts it.
        ctx = Authenticator.noauth(token, None, "")
        now = time.time()
        return TokenBody(user_id=ctx.user_id, user_name=ctx.user_name, project_id=ctx.project_id,
                         project_name=ctx.project_name, roles=ctx.roles, issued_at=now,
                         expires_at=now + settings.identity.token_ttl, audit_id=_stable_id(token)[:22])
    try:
        return codec.verify(token, grace=grace)
    except errors.Unauthorized as exc:
        if exc.code in ("token_expired", "token_revoked"):
            raise errors.NotFound(f"Failed to validate token: {exc.message}") from None
        raise errors.NotFound(f"Could not find token: {token}.") from None


def render(settings: Settings, body: TokenBody, *, include_catalog: bool = True) -> dict[str, Any]:
    domain = {"id": store.DOMAIN_ID, "name": store.DOMAIN_NAME}
    token: dict[str, Any] = {
        "methods": list(body.methods),
        "user": {"id": body.user_id, "name": body.user_name, "domain": domain, "password_expires_at": None},
        "project": {"id": body.project_id, "name": body.project_name, "domain": domain},
        "is_domain": False,
        "roles": [{"id": _stable_id("role", r), "name": r} for r in body.roles],
        "audit_ids": [body.audit_id],
        "issued_at": _ts(body.issued_at),
        "expires_at": _ts(body.expires_at),
    }
    if body.app_cred_id:
        token["application_credential"] = {"id": body.app_cred_id, "name": body.app_cred_name,
                                           "restricted": body.app_cred_restricted}
    if include_catalog:
        token["catalog"] = catalog(settings, body.project_id)
    return {"token": token}
