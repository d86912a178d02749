"""Migrations (resizes) as `os-migrations` lists them (handlers/os_migrations.py), apart
from HTTP: from every cell but cell0 (a server that never got a host never moved), newest
first."""

from __future__ import annotations

import asyncpg

from nova_async.db.cells import Cells
from nova_async.db.queries import queries

MQ = queries("migrations")


async def listing(cells: Cells, instance_uuid: str | None, status: str | None, host: str | None,
                  migration_type: str | None, project_id: str | None = None) -> list[asyncpg.Record]:
    """Migrations matching every filter given (None: any)."""
    rows = await cells.gather(MQ.list_migrations, instance_uuid, status, host, migration_type, project_id,
                              cell0=False)
    rows.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
    return rows
