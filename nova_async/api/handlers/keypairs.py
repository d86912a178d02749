"""`os-keypairs`: public keys a user uploads (or, before 2.92, has made for them) and names
at boot; the guest finds the key in its config drive (`public_keys` in meta_data.json).

Key pairs belong to a user, not a project. Admins may act for another user with
`user_id` (2.10+). Only the public half is ever stored: a generated private key is in the
one response that creates it, and nowhere else."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import asyncpg
from aiohttp import web

from nova_async.api import microversion, quotas
from nova_async.api.keypair_store import fingerprint, generate
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro
from nova_async.db.queries import queries

Q = queries("keypairs")

_SAFE_NAME = re.compile(r"^[A-Za-z0-9 _.-]{1,255}$")
_SAFE_NAME_292 = re.compile(r"^[A-Za-z0-9 _.@-]{1,255}$")   # 2.92 allows '@'


def _schema(version) -> Any:
    keypair: dict[str, Any] = {"type": "object", "required": ["name"], "additionalProperties": False,
                               "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255},
                                              "public_key": {"type": "string", "minLength": 1,
                                                             "maxLength": 65535}}}
    if version >= (2, 2):
        keypair["properties"]["type"] = {"enum": ["ssh", "x509"]}
    if version >= (2, 10):
        keypair["properties"]["user_id"] = {"type": "string", "minLength": 1, "maxLength": 255}
    if version >= (2, 92):
        keypair["required"] = ["name", "public_key"]
    return w.validator({"type": "object", "required": ["keypair"], "additionalProperties": False,
                        "properties": {"keypair": keypair}})


def _user(request: web.Request, requested: str | None) -> str:
    ctx = w.context(request)
    if requested and requested != ctx.user_id:
        if not ctx.is_admin:
            raise errors.Forbidden("Policy does not allow acting on another user's key pairs.")
        return requested
    return ctx.user_id


def _view(row: asyncpg.Record, version, *, full: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": row["name"], "public_key": row["public_key"],
                           "fingerprint": row["fingerprint"]}
    if version >= (2, 2):
        out["type"] = row["type"]
    if full:
        out.update({"user_id": row["user_id"], "id": row["id"], "created_at": iso_micro(row["created_at"]),
                    "updated_at": None, "deleted_at": None, "deleted": False})
    return out


async def create_keypair(request: web.Request) -> web.Response:
    version = microversion.of(request)
    body = (await w.read_json(request, _schema(version)))["keypair"]
    name = body["name"]
    if not (_SAFE_NAME_292 if version >= (2, 92) else _SAFE_NAME).match(name) or name.strip() != name:
        raise errors.InvalidInput("Keypair name contains unsafe characters")
    user_id = _user(request, body.get("user_id"))
    private = None
    if "public_key" in body:
        public = body["public_key"].strip()
        if body.get("type", "ssh") == "ssh":
            printed = fingerprint(public)
        else:
            printed = ":".join(hashlib.sha1(public.encode()).hexdigest()[i:i + 2] for i in range(0, 40, 2))
    else:
        public, private = generate()
        printed = fingerprint(public)
    state = request.app[STATE]
    async with state.pool.acquire() as conn, conn.transaction():
        await conn.execute(Q.lock_user, user_id)
        limit = (await quotas.limits(conn, state.settings.quota, w.context(request).project_id))["key_pairs"]
        if 0 <= limit <= await conn.fetchval(Q.count, user_id):
            raise quotas.QuotaExceeded(f"Quota exceeded, too many key pairs (limit {limit}).")
        try:
            row = await conn.fetchrow(Q.insert, user_id, name, body.get("type", "ssh"), public, printed)
        except asyncpg.UniqueViolationError:
            raise errors.Conflict(f"Key pair '{name}' already exists.") from None
    out = _view(row, version, full=False)
    out["user_id"] = user_id
    if private is not None:
        out["private_key"] = private
    return w.dump({"keypair": out}, status=201 if version >= (2, 2) else 200)


async def list_keypairs(request: web.Request) -> web.Response:
    version = microversion.of(request)
    user_id = _user(request, request.query.get("user_id") if version >= (2, 10) else None)
    marker = request.query.get("marker") if version >= (2, 35) else None
    limit = w.query_int(request, "limit") if version >= (2, 35) else None
    rows = await request.app[STATE].pool.fetch(Q.list, user_id, marker, limit)
    return w.dump({"keypairs": [{"keypair": _view(r, version, full=False)} for r in rows]})


async def show_keypair(request: web.Request) -> web.Response:
    version = microversion.of(request)
    user_id = _user(request, request.query.get("user_id") if version >= (2, 10) else None)
    row = await request.app[STATE].pool.fetchrow(Q.get, user_id, request.match_info["name"])
    if row is None:
        raise errors.NotFound(f"Keypair {request.match_info['name']} not found for user {user_id}.")
    return w.dump({"keypair": _view(row, version, full=True)})


async def delete_keypair(request: web.Request) -> web.Response:
    version = microversion.of(request)
    user_id = _user(request, request.query.get("user_id") if version >= (2, 10) else None)
    if await request.app[STATE].pool.fetchval(Q.delete, user_id, request.match_info["name"]) is None:
        raise errors.NotFound(f"Keypair {request.match_info['name']} not found for user {user_id}.")
    return web.Response(status=204 if version >= (2, 2) else 202)
