"""Helpers the database tests share."""

from __future__ import annotations

import asyncpg


async def end_backends(database: str, where: str) -> None:
    """End the server processes of the sessions `where` picks from pg_stat_activity (a process
    killed, a machine gone, as the server sees it), and return once they have ended: the
    server lets go of a session's locks only then."""
    conn = await asyncpg.connect(database)
    try:
        await conn.execute("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                           f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {where}")
    finally:
        await conn.close()
