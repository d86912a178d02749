"""Application credentials, as Keystone has them: a user makes one for the project their
token is scoped to, with some or all of the roles that token carries, and a program then
authenticates with its id (or its name and the user) and its secret, getting a token for
that project with those roles only, whatever the request asks for.

Restricted ones (the default) cannot be used to make or delete application credentials.
The secret is shown once, when made (generated unless given), and kept only as a hash. A
credential whose user has since lost one of its roles on the project no longer
authenticates; a deleted one's tokens are revoked."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from datetime import datetime, timezone
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.tokens import Revocations
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.identity import revocations, store

Q = queries("identity")
UNAUTHORIZED = "The request you have made requires authentication."


def revocation_key(app_cred_id: str) -> str:
    """The audit id under which a deleted credential's tokens are revoked."""
    return f"app-cred:{app_cred_id}"


def _expiry(raw: str | None) -> datetime | None:
    if raw is None:
        return None
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise errors.InvalidInput(f"Invalid input for field 'expires_at': {raw!r} is not a date-time.") from None
    when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    if when <= datetime.now(timezone.utc):
        raise errors.InvalidInput("The expiration date of an application credential must be in the future.")
    return when


async def create(pool: Pool, ctx: RequestContext, body: dict[str, Any], role_names: dict[str, str]
                 ) -> tuple[asyncpg.Record, str]:
    """(the new credential, its secret) for the caller's user and project. `role_names`: role
    id -> name, for roles asked for by id. Roles it asks for must be the token's."""
    wanted = []
    for ref in body.get("roles") or [{"name": r} for r in ctx.roles]:
        name = ref.get("name") or role_names.get(ref.get("id", ""))
        if name not in ctx.roles:
            raise errors.NotFound(f"Could not find role assignment with role: {ref.get('id') or ref.get('name')}, "
                                  f"user or group: {ctx.user_id}, project, domain, or system: {ctx.project_id}.")
        if name not in wanted:
            wanted.append(name)
    expires = _expiry(body.get("expires_at"))
    secret = body.get("secret") or secrets.token_urlsafe(64)
    hashed = await asyncio.to_thread(store.hash_password, secret)
    try:
        row = await pool.fetchrow(Q.create_app_cred, uuid.uuid4().hex, ctx.user_id, ctx.project_id, body["name"],
                                  body.get("description"), hashed, wanted, bool(body.get("unrestricted")),
                                  expires)
    except asyncpg.ForeignKeyViolationError:
        # A caller with no user or project here: noauth's names ("alice:proj-a") are no users.
        raise errors.NotFound(f"Could not find user: {ctx.user_id}.") from None
    if row is None:
        raise errors.Conflict(f"Duplicate entry found with name {body['name']} for user {ctx.user_id}.")
    return row, secret


async def of_user(pool: Pool, user_id: str, name: str | None = None) -> list[asyncpg.Record]:
    return await pool.fetch(Q.app_creds_of, user_id, name)


async def get(pool: Pool, user_id: str, app_cred_id: str) -> asyncpg.Record:
    row = await pool.fetchrow(Q.app_cred, app_cred_id)
    if row is None or row["user_id"] != user_id:
        raise errors.NotFound(f"Could not find application credential: {app_cred_id}.")
    return row


async def delete(pool: Pool, horizon: float, local: Revocations, user_id: str, app_cred_id: str) -> None:
    """Delete it and revoke the tokens it gave, in one transaction; this process's checker
    (`local`) knows at once, the others when the database tells them."""
    async with pool.acquire() as conn:
        async with conn.transaction():
            if await conn.fetchval(Q.delete_app_cred, app_cred_id, user_id) is None:
                raise errors.NotFound(f"Could not find application credential: {app_cred_id}.")
            await revocations.record(conn, horizon, audit_id=revocation_key(app_cred_id))
        await revocations.reload(conn, local)


async def authenticate(pool: Pool, ref: dict[str, Any]) -> tuple[asyncpg.Record, asyncpg.Record, asyncpg.Record]:
    """(the credential, its user, its project) for an auth request's `application_credential`
    block, or 401: unknown, wrong secret, expired, its user or project disabled, or a role it
    holds no longer the user's there."""
    if ref.get("id"):
        row = await pool.fetchrow(Q.app_cred, ref["id"])
    else:
        user = await store.find_user(pool, ref.get("user") or {})
        row = await pool.fetchrow(Q.app_cred_by_name, user["id"], ref.get("name", ""))
    if row is None or not await asyncio.to_thread(store.check_password, ref.get("secret", ""), row["secret_hash"]):
        raise errors.Unauthorized(UNAUTHORIZED)
    if row["expires_at"] is not None and row["expires_at"] <= datetime.now(timezone.utc):
        raise errors.Unauthorized("The application credential has expired.")
    user = await store.find_user(pool, {"id": row["user_id"]})
    project = await store.find_project(pool, {"id": row["project_id"]}, row["user_id"])
    held = await store.roles_on(pool, row["user_id"], row["project_id"])
    if not set(row["roles"]) <= set(held):
        raise errors.Unauthorized(UNAUTHORIZED)
    return row, user, project
