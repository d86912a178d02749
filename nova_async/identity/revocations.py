"""Token revocation events, kept in step between the database and every API's memory.

Tokens are signed and checked without a database round trip (common/tokens.py), so taking
access away needs a list of events the checker consults: a user deleted, disabled or given a
new password; a project deleted or disabled; a role taken away from a user on a project; one
token revoked by its user or an admin (named by its audit id, as Keystone does). The events
live in `token_revocations` so that every process (and `nova-async user delete`, which writes
the database directly) sees them; a NOTIFY in the same transaction tells the identity role to
reload them. The table stays small: events older than any token still accepted (its lifetime,
plus the window in which `allow_expired` validation still shows it) are pruned.

The listening connection can break (the database restarts): announcements made meanwhile
are missed, so once the database is back the list is loaded again and listening resumes.
Until then the list last loaded stays in force."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import asyncpg
import structlog

from nova_async.common import errors
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
    loaded = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(_keep_following(pool, target, loaded), name="identity:token-revocations")
        try:
            await loaded.wait()
            yield
        finally:
            task.cancel()


async def _keep_following(pool: Pool, target: Revocations, loaded: asyncio.Event) -> None:
    health = pool.health
    while True:
        back = health.next_return()
        try:
            await _follow(pool, target, loaded)
        except errors.Unavailable as exc:
            log.warning("token revocations are not followed until the database is back", error=exc.message)
        # Its connection broke, perhaps alone (a backend terminated): the probe looks, and
        # its next answer counts as a return.
        health.suspect()
        await back.wait()


async def _follow(pool: Pool, target: Revocations, loaded: asyncio.Event) -> None:
    """Listen, load, and load again at each announcement, until the connection ends."""
    changed, ended = asyncio.Event(), asyncio.Event()

    def on_notify(*_: object) -> None:
        changed.set()

    def on_end(_conn: object) -> None:
        ended.set()
        changed.set()

    async with pool.acquire() as conn:
        conn.add_termination_listener(on_end)
        await conn.add_listener(CHANNEL, on_notify)
        try:
            while True:
                changed.clear()
                await reload(conn, target)
                loaded.set()
                await changed.wait()
                if ended.is_set():
                    raise errors.DatabaseUnavailable("the connection listening for token revocations ended")
        finally:
            conn.remove_termination_listener(on_end)
            # The pool does not reset connections, so stop listening before handing it back.
            if not conn.is_closed():
                await conn.remove_listener(CHANNEL, on_notify)
