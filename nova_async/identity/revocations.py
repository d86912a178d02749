"""Token revocation events, kept in step between the database and every API's memory.

Tokens are signed and checked without a database round trip (common/tokens.py), so taking
access away needs a list of events the checker consults: a user deleted, disabled or given a
new password; a project deleted or disabled; a role taken away from a user on a project; one
token revoked by its user or an admin (named by its audit id, as Keystone does). The events
live in `token_revocations` so that every process (and `nova-async user delete`, which writes
the database directly) sees them; a NOTIFY in the same transaction tells the identity role to
reload them. The table stays small: events older than any token still accepted (its lifetime,
plus the window in which `allow_expired` validation still shows it) are pruned."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import asyncpg
import structlog

from nova_async.common.tokens import Revocations
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

log = structlog.get_logger("identity")
Q = queries("identity")
CHANNEL = "nova_async_token_revocations"

# Events are kept this much longer than a token lives, so a clock a little off does no harm.
_MARGIN = 3600.0


async def record(conn: asyncpg.Connection, horizon: float, *, user_id: str | None = None,
                 project_id: str | None = None, audit_id: str | None = None) -> None:
    """Revoke the matching tokens issued until now; call inside the change's transaction.
    `horizon`: how long after its issue a token can still be accepted (IdentitySettings)."""
    now = time.time()
    await conn.execute(Q.record_revocation, user_id, project_id, audit_id, now, now - horizon - _MARGIN)
    await conn.execute(Q.notify_revocation)


async def reload(conn: asyncpg.Connection | Pool, target: Revocations) -> None:
    rows = await conn.fetch(Q.list_revocations)
    target.replace([(r["user_id"], r["project_id"], r["audit_id"], r["revoked_at"]) for r in rows])


@contextlib.asynccontextmanager
async def following(pool: Pool, target: Revocations) -> AsyncIterator[None]:
    """Load the events now, and again whenever a writer anywhere announces new ones, until
    the block ends. Listening starts before the first load, so no event falls in between."""
    changed = asyncio.Event()

    def on_notify(*_: object) -> None:
        changed.set()

    async def follow(conn: asyncpg.Connection) -> None:
        while True:
            await changed.wait()
            changed.clear()
            await reload(conn, target)

    async with pool.acquire() as conn:
        await conn.add_listener(CHANNEL, on_notify)
        try:
            await reload(conn, target)
            async with asyncio.TaskGroup() as tg:
                task = tg.create_task(follow(conn), name="identity:token-revocations")
                try:
                    yield
                finally:
                    task.cancel()
        finally:
            # The pool does not reset connections, so stop listening before handing it back.
            await conn.remove_listener(CHANNEL, on_notify)
