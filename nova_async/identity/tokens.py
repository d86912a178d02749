"""Issuing tokens: authenticate a password (or an existing token), pick the scope, and
answer in Keystone v3's shape with the service catalog."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from datetime import datetime, timezone
from typing import Any

from nova_async.common import errors
from nova_async.common.tokens import TokenBody, TokenCodec
from nova_async.config import Settings
from nova_async.db.pool import Pool
from nova_async.identity import store

SERVICES = (("identity", "keystone", "/v3"), ("compute", "nova", "/compute/v2.1"),
            ("image", "glance", "/image"), ("network", "neutron", "/network"),
            ("placement", "placement", "/placement"))


def _stable_id(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]


def catalog(settings: Settings) -> list[dict[str, Any]]:
    base, region = settings.base_url, settings.identity.region
    return [{"id": _stable_id(kind), "type": kind, "name": name,
             "endpoints": [{"id": _stable_id(kind, iface), "interface": iface, "region": region,
                            "region_id": region, "url": base + path}
                           for iface in ("public", "internal", "admin")]}
            for kind, name, path in SERVICES]


def _ts(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def issue(pool: Pool, codec: TokenCodec, settings: Settings, auth: dict[str, Any],
                subject_token: str | None) -> tuple[str, dict[str, Any]]:
    identity = auth["identity"]
    methods = identity["methods"]
    scope = auth.get("scope")
    if scope not in (None, "unscoped") and not isinstance(scope, dict):
        raise errors.InvalidInput("scope must be an object")
    project_ref = (scope or {}).get("project") if isinstance(scope, dict) else None
    if isinstance(scope, dict) and "project" not in scope and scope:
        raise errors.InvalidInput("Only project scope is supported.")

    if "password" in methods:
        user_ref = identity.get("password", {}).get("user")
        if not isinstance(user_ref, dict) or "password" not in user_ref:
            raise errors.InvalidInput("password authentication needs identity.password.user with a password")
        user = await store.find_user(pool, user_ref)
        ok = await asyncio.get_running_loop().run_in_executor(
            None, store.check_password, str(user_ref["password"]), user["password_hash"])
        if not ok:
            raise errors.Unauthorized("The request you have made requires authentication.")
        user_id, user_name = user["id"], user["name"]
    elif "token" in methods:
        given = identity.get("token", {}).get("id") or subject_token
        if not given:
            raise errors.InvalidInput("token authentication needs identity.token.id")
        body = codec.verify(given)
        user = await store.find_user(pool, {"id": body.user_id})  # still there, still enabled
        user_id, user_name = user["id"], user["name"]
    else:
        raise errors.Unauthorized(f"Unsupported authentication method(s): {', '.join(methods)}")

    project = await store.find_project(pool, project_ref, user_id)
    roles = await store.roles_on(pool, user_id, project["id"])
    now = time.time()
    body = TokenBody(user_id=user_id, user_name=user_name, project_id=project["id"],
                     project_name=project["name"], roles=roles, issued_at=now,
                     expires_at=now + settings.identity.token_ttl, audit_id=secrets.token_urlsafe(16))
    token = codec.issue(body)
    if settings.identity.auth == "noauth":
        token = f"{user_name}:{project['id']}"
    domain = {"id": store.DOMAIN_ID, "name": store.DOMAIN_NAME}
    return token, {"token": {
        "methods": methods,
        "user": {"id": user_id, "name": user_name, "domain": domain, "password_expires_at": None},
        "project": {"id": project["id"], "name": project["name"], "domain": domain},
        "is_domain": False,
        "roles": [{"id": _stable_id("role", r), "name": r} for r in roles],
        "audit_ids": [body.audit_id],
        "issued_at": _ts(now),
        "expires_at": _ts(body.expires_at),
        "catalog": catalog(settings),
    }}
