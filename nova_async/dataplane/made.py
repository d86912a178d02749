"""What the data plane made on this host, as recorded in `dataplane_objects`: a row is
written BEFORE the thing is made and deleted AFTER it is gone. So after a crash at any point,
"ours" is exactly what the rows say — recovery never touches a namespace, link, process or
table another program (or another nova-async on the same host) made."""

from __future__ import annotations

from typing import Any

from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("dataplane")


class Made:
    def __init__(self, pool: Pool, host: str) -> None:
        self.pool = pool
        self.host = host

    async def record(self, kind: str, name: str, detail: dict[str, Any] | None = None) -> None:
        """Before making `name`: say it is ours (again; the detail is replaced)."""
        await self.pool.execute(Q.made_record, self.host, kind, name, detail or {})

    async def forget(self, kind: str, name: str) -> None:
        """After `name` is gone."""
        await self.pool.execute(Q.made_forget, self.host, kind, name)

    async def listed(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every `kind` of ours on this host: name → detail."""
        rows = await self.pool.fetch(Q.made_listed, self.host, kind)
        return {r["name"]: r["detail"] for r in rows}
