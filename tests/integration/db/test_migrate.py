"""Migrations: applied once, in order, even when two processes start at the same moment."""

import asyncio
import uuid

import asyncpg

from nova_async.db.migrate import migrate, migration_files
from tests.conftest import dsn_for


async def test_two_migrators_at_once_apply_each_migration_once(pg_cluster):
    name = f"fresh_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(dsn_for(pg_cluster, "postgres"))
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        a = await asyncpg.connect(dsn_for(pg_cluster, name))
        b = await asyncpg.connect(dsn_for(pg_cluster, name))
        try:
            first, second = await asyncio.gather(migrate(a), migrate(b))
            assert sorted(first + second) == sorted(n for _, n in migration_files())
            assert await a.fetchval("SELECT count(*) FROM schema_migrations") == len(migration_files())
            assert await migrate(a) == []
        finally:
            await a.close()
            await b.close()
    finally:
        await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        await admin.close()
