"""Key pairs apart from their HTTP resource (handlers/keypairs.py): checking and
fingerprinting an uploaded public key, making a new pair, storing, listing, finding and
deleting a user's pairs, and the public key a boot or rebuild names (server_create.py,
server_ops.py), all in Nova's terms."""

from __future__ import annotations

import base64
import binascii
import hashlib

import asyncpg
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from nova_async.api import quotas
from nova_async.common import errors
from nova_async.config import QuotaSettings
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("keypairs")

_SSH_TYPES = ("ssh-rsa", "ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
              "ecdsa-sha2-nistp521", "ssh-dss")


def fingerprint(public_key: str) -> str:
    """The MD5 fingerprint of an OpenSSH public key, colon-separated, as Nova shows it."""
    parts = public_key.strip().split()
    if len(parts) < 2 or parts[0] not in _SSH_TYPES:
        raise errors.InvalidInput("Keypair data is invalid: failed to generate fingerprint")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        raise errors.InvalidInput("Keypair data is invalid: failed to generate fingerprint") from None
    # The key blob starts with its own type name: a key that lies about its type is invalid.
    if len(blob) < 4 or blob[4:4 + int.from_bytes(blob[:4], "big")] != parts[0].encode():
        raise errors.InvalidInput("Keypair data is invalid: failed to generate fingerprint")
    digest = hashlib.md5(blob).hexdigest()
    return ":".join(digest[i:i + 2] for i in range(0, 32, 2))


def generate() -> tuple[str, str]:
    """A new ed25519 key pair: (OpenSSH public key, OpenSSH private key)."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    return public, private


async def key_for_boot(db, user_id: str, key_name: str | None) -> str | None:
    """The public key a boot names, or 400 when the user has no key of that name."""
    if key_name is None:
        return None
    row = await db.fetchrow(Q.get, user_id, key_name)
    if row is None:
        raise errors.InvalidInput("Invalid key_name provided.")
    return row["public_key"]


async def create(pool: Pool, defaults: QuotaSettings, project_id: str, user_id: str, name: str,
                 key_type: str, public_key: str | None) -> tuple[asyncpg.Record, str | None]:
    """Store the user's new pair: the uploaded public key (fingerprinted as its type says) or,
    without one, a generated pair. (its row, the private key when generated), or 403 over the
    project's key pair quota, 409 when the user has a pair of that name."""
    private = None
    if public_key is not None:
        public = public_key.strip()
        if key_type == "ssh":
            printed = fingerprint(public)
        else:
            printed = ":".join(hashlib.sha1(public.encode()).hexdigest()[i:i + 2] for i in range(0, 40, 2))
    else:
        public, private = generate()
        printed = fingerprint(public)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(Q.lock_user, user_id)
        limit = (await quotas.limits(conn, defaults, project_id))["key_pairs"]
        if 0 <= limit <= await conn.fetchval(Q.count, user_id):
            raise quotas.QuotaExceeded(f"Quota exceeded, too many key pairs (limit {limit}).")
        try:
            row = await conn.fetchrow(Q.insert, user_id, name, key_type, public, printed)
        except asyncpg.UniqueViolationError:
            raise errors.Conflict(f"Key pair '{name}' already exists.") from None
    return row, private


async def listing(pool: Pool, user_id: str, marker: str | None, limit: int | None) -> list[asyncpg.Record]:
    return await pool.fetch(Q.list, user_id, marker, limit)


async def get(pool: Pool, user_id: str, name: str) -> asyncpg.Record:
    row = await pool.fetchrow(Q.get, user_id, name)
    if row is None:
        raise errors.NotFound(f"Keypair {name} not found for user {user_id}.")
    return row


async def delete(pool: Pool, user_id: str, name: str) -> None:
    if await pool.fetchval(Q.delete, user_id, name) is None:
        raise errors.NotFound(f"Keypair {name} not found for user {user_id}.")
