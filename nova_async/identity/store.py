"""Users, projects and role assignments: the bootstrap admin and password checks.

Passwords are stored as salted scrypt hashes. Roles imply each other as Keystone's default
roles do: admin ⊃ member ⊃ reader."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import secrets
import uuid
from pathlib import Path

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

log = structlog.get_logger("identity")
Q = queries("identity")

DOMAIN_ID = "default"
DOMAIN_NAME = "Default"
# Keystone's default role inference: admin > manager > member > reader.
IMPLIED = {"admin": ("admin", "manager", "member", "reader"), "manager": ("manager", "member", "reader"),
           "member": ("member", "reader"), "reader": ("reader",)}


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)
    return "scrypt$" + base64.b64encode(salt).decode() + "$" + base64.b64encode(digest).decode()


def check_password(password: str, stored: str) -> bool:
    try:
        _, salt_b64, digest_b64 = stored.split("$")
        salt, digest = base64.b64decode(salt_b64), base64.b64decode(digest_b64)
    except ValueError:
        return False
    candidate = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)
    return hmac.compare_digest(candidate, digest)


def effective_roles(assigned: list[str]) -> tuple[str, ...]:
    roles: list[str] = []
    for role in assigned:
        for r in IMPLIED.get(role, (role,)):
            if r not in roles:
                roles.append(r)
    return tuple(roles)


def admin_password(state_dir: Path, configured: str) -> tuple[str, bool]:
    """The configured password, or the one generated on first start (kept in the state dir)."""
    if configured:
        return configured, False
    path = state_dir / "admin-password"
    if path.exists():
        return path.read_text().strip(), False
    password = secrets.token_urlsafe(12)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    return password, True


# A hash of each password this process bootstrapped an admin with, made or checked here: a
# stored hash that is this one matches its password with no scrypt. A service bootstraps its
# one database once; the tests' harness bootstraps a fresh database for each test with the
# same password, and an scrypt (~50 ms of CPU) each was a fifth of what those tests cost.
_BOOTSTRAP_HASHES: dict[str, str] = {}


async def bootstrap(pool: Pool, password: str) -> None:
    """Make sure user `admin` (project `admin`, role admin) exists and has `password`.
    One scrypt at most (~50 ms of CPU, in a thread): a hash for a new admin, else a check
    of the one stored, and a new hash only when the configured password changed; none when
    this process has made or checked a hash of that password before (_BOOTSTRAP_HASHES)."""
    known = _BOOTSTRAP_HASHES.get(password)
    async with pool.acquire() as conn, conn.transaction():
        project_id = await conn.fetchval(Q.upsert_project, uuid.uuid4().hex, "admin", "Bootstrap project")
        user = await conn.fetchrow(Q.user_by_name, "admin", DOMAIN_ID)
        if user is None:
            stored = known or await asyncio.to_thread(hash_password, password)
            await conn.execute(Q.upsert_user, uuid.uuid4().hex, "admin", stored)
            user = await conn.fetchrow(Q.user_by_name, "admin", DOMAIN_ID)
        else:
            stored = user["password_hash"]
            if stored != known and not await asyncio.to_thread(check_password, password, stored):
                stored = await asyncio.to_thread(hash_password, password)
                await conn.execute(Q.set_password, "admin", stored)
                log.info("admin password updated from configuration")
        await conn.execute(Q.assign_role, user["id"], project_id, "admin")
    _BOOTSTRAP_HASHES[password] = stored


def _domain_id(ref: dict | None) -> str:
    if not ref:
        return DOMAIN_ID
    if ref.get("id") not in (None, DOMAIN_ID) or ref.get("name") not in (None, DOMAIN_NAME):
        raise errors.Unauthorized("The request you have made requires authentication.")
    return DOMAIN_ID


async def find_user(pool: Pool, ref: dict) -> asyncpg.Record:
    if ref.get("id"):
        row = await pool.fetchrow(Q.user_by_id, ref["id"])
    else:
        row = await pool.fetchrow(Q.user_by_name, ref.get("name", ""), _domain_id(ref.get("domain")))
    if row is None or not row["enabled"]:
        raise errors.Unauthorized("The request you have made requires authentication.")
    return row


async def find_project(pool: Pool, ref: dict | None, user_id: str) -> asyncpg.Record:
    if ref is None:  # Keystone's default scope: the user's default project, else any of theirs
        row = (await pool.fetchrow(Q.default_project_of, user_id)
               or await pool.fetchrow(Q.first_project_of, user_id))
    elif ref.get("id"):
        row = await pool.fetchrow(Q.project_by_id, ref["id"])
    else:
        row = await pool.fetchrow(Q.project_by_name, ref.get("name", ""), _domain_id(ref.get("domain")))
    if row is None or not row["enabled"]:
        raise errors.Unauthorized("The request you have made requires authentication.")
    return row


async def roles_on(pool: Pool, user_id: str, project_id: str) -> tuple[str, ...]:
    assigned = [r["role"] for r in await pool.fetch(Q.roles_on_project, user_id, project_id)]
    if not assigned:
        raise errors.Unauthorized("The user has no role on the requested project.")
    return effective_roles(assigned)
