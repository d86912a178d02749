"""Apply `sql/NNNN_name.sql` migrations in order, once each, under an advisory lock so that
two processes starting at the same time do not race."""

from __future__ import annotations

import re

import asyncpg
import structlog

from nova_async.db.queries import SQL_DIR

log = structlog.get_logger("db")

_LOCK_KEY = 0x6E6F7661  # "nova": the advisory lock every migrator takes
_FILE = re.compile(r"^(\d{4})_[\w-]+\.sql$")


def migration_files() -> list[tuple[int, str]]:
    found = []
    for path in sorted(SQL_DIR.iterdir()):
        m = _FILE.match(path.name)
        if m:
            found.append((int(m.group(1)), path.name))
    numbers = [n for n, _ in found]
    if len(set(numbers)) != len(numbers):
        raise RuntimeError("two migrations share a number in sql/")
    return found


async def migrate(conn: asyncpg.Connection) -> list[str]:
    """Bring the schema up to date; returns the names of the migrations applied."""
    applied_now = []
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())")
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for number, name in migration_files():
            if number in done:
                continue
            sql = (SQL_DIR / name).read_text()
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                                   number, name)
            log.info("migration applied", migration=name)
            applied_now.append(name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return applied_now
