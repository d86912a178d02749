"""`os-keypairs`: public keys a user uploads (or, before 2.92, has made for them) and names
at boot; the guest finds the key in its config drive (`public_keys` in meta_data.json).

Key pairs belong to a user, not a project. Admins may act for another user with
`user_id` (2.10+). Only the public half is ever stored: a generated private key is in the
one response that creates it, and nowhere else."""

from __future__ import annotations

import functools
import re
from typing import Any

import asyncpg
from aiohttp import web

from nova_async.api import keypair_store, microversion
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro

_SAFE_NAME = re.compile(r"^[A-Za-z0-9 _.-]{1,255}$")
_SAFE_NAME_292 = re.compile(r"^[A-Za-z0-9 _.@-]{1,255}$")   # 2.92 allows '@'


@functools.cache   # one validator per microversion, not one per request
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
    state = request.app[STATE]
    row, private = await keypair_store.create(state.pool, state.settings.quota, w.context(request).project_id,
                                              user_id, name, body.get("type", "ssh"), body.get("public_key"))
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
    rows = await keypair_store.listing(request.app[STATE].pool, user_id, marker, limit)
    return w.dump({"keypairs": [{"keypair": _view(r, version, full=False)} for r in rows]})


async def show_keypair(request: web.Request) -> web.Response:
    version = microversion.of(request)
    user_id = _user(request, request.query.get("user_id") if version >= (2, 10) else None)
    row = await keypair_store.get(request.app[STATE].pool, user_id, request.match_info["name"])
    return w.dump({"keypair": _view(row, version, full=True)})


async def delete_keypair(request: web.Request) -> web.Response:
    version = microversion.of(request)
    user_id = _user(request, request.query.get("user_id") if version >= (2, 10) else None)
    await keypair_store.delete(request.app[STATE].pool, user_id, request.match_info["name"])
    return web.Response(status=204 if version >= (2, 2) else 202)
