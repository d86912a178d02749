"""Key pairs apart from their HTTP resource: checking and fingerprinting an uploaded public
key, making a new pair, and the public key a boot or rebuild names (server_create.py,
handlers/server_actions.py), all in Nova's terms."""

from __future__ import annotations

import base64
import binascii
import hashlib

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from nova_async.common import errors
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
