"""Remote console tokens: made when a user asks for a console URL, spent by the proxy.

A token is 32 random bytes (URL-safe text); the database keeps only its SHA-256, bound to
one instance and one console type, for TOKEN_TTL seconds (Nova's default token_ttl). It
opens a console once: the proxy deletes the row as it accepts the token, so whichever
process serves the WebSocket, a second connection with the same URL is refused.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("consoles")
TOKEN_TTL = 600.0   # seconds a console URL stays usable if nobody opens it

# The console types a token can open, as the API names them.
SERIAL = "serial"
NOVNC = "novnc"


@dataclass(frozen=True)
class Grant:
    """What a spent token opens."""

    instance_uuid: str
    host: str | None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def issue(pool: Pool, instance_uuid: str, console_type: str) -> str:
    token = secrets.token_urlsafe(32)
    await pool.execute(Q.issue, _digest(token), instance_uuid, console_type, TOKEN_TTL)
    return token


async def spend(pool: Pool, token: str, console_type: str) -> Grant | None:
    """The instance the token opens, used up now; None when it is unknown, spent, expired,
    made for another console type, or its instance is gone."""
    if not token or len(token) > 128:
        return None
    row = await pool.fetchrow(Q.spend, _digest(token), console_type)
    return Grant(str(row["instance_uuid"]), row["host"]) if row else None
