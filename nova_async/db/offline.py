"""The database for commands that run without the service (`nova-async project|user|role|cell
…`, `db migrate`): the DSN's, or the private cluster under the state directory, used as it is
when the service has it running and started for the command otherwise."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import asyncpg

from nova_async import config
from nova_async.db.pool import Pool


@contextlib.asynccontextmanager
async def open_database(settings: config.Settings) -> AsyncIterator[tuple[Pool, str]]:
    """The migrated API database, as (pool, DSN)."""
    from nova_async.db.embedded import EmbeddedPostgres, embedded_postgres
    from nova_async.db.migrate import migrate
    from nova_async.db.pool import open_pool

    async with contextlib.AsyncExitStack() as stack:
        dsn = settings.service.database
        if not dsn:
            pg = EmbeddedPostgres(settings.state_path)
            dsn = pg.dsn
            if not await _running(pg):
                settings.state_path.mkdir(parents=True, exist_ok=True)
                await stack.enter_async_context(embedded_postgres(settings.state_path))
        pool = await stack.enter_async_context(open_pool(dsn, min_size=1, max_size=2))
        async with pool.acquire() as conn:
            await migrate(conn)
        yield pool, dsn


async def _running(pg) -> bool:
    """Whether the private cluster is up (the service has it): then use it and leave it be."""
    if not (pg.data / "postmaster.pid").exists():
        return False
    try:
        conn = await asyncpg.connect(pg.dsn, timeout=10)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    await conn.close()
    return True
