"""`GET /os-migrations`: every resize recorded (admin only, as Nova's default policy has it),
newest first, filtered by the query parameters Nova takes."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import microversion, migration_store
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro


def _view(row, version) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row["id"], "instance_uuid": str(row["instance_uuid"]), "status": row["status"],
        "source_compute": row["source_compute"], "source_node": row["source_node"],
        "dest_compute": row["dest_compute"], "dest_node": row["dest_node"], "dest_host": None,
        "old_instance_type_id": row["old_flavor"].get("id"), "new_instance_type_id": row["new_flavor"].get("id"),
        "created_at": iso_micro(row["created_at"]), "updated_at": iso_micro(row["updated_at"])}
    if version >= (2, 23):
        out["migration_type"] = row["migration_type"]
    if version >= (2, 59):
        out["uuid"] = str(row["uuid"])
    if version >= (2, 80):
        out.update(project_id=row["project_id"], user_id=row["user_id"])
    return out


async def list_migrations(request: web.Request) -> web.Response:
    require_admin(request)
    state = request.app[STATE]
    q = request.query
    instance = w.parse_uuid(q["instance_uuid"]) if "instance_uuid" in q else None
    if "instance_uuid" in q and instance is None:
        return w.dump({"migrations": []})
    rows = await migration_store.listing(state.cells, instance, q.get("status"), q.get("host"),
                                         q.get("migration_type"))
    version = microversion.of(request)
    return w.dump({"migrations": [_view(r, version) for r in rows]})
