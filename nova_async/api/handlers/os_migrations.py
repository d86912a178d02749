"""`GET /os-migrations`: every resize and cold migration recorded, newest first, filtered by
the query parameters Nova takes. As Nova's default policy has it, an admin sees every
project's with their hosts; a project's manager sees only its own project's (it must name it
with `project_id`), without hosts."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import flavor_store, microversion, migration_store
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.timeutil import iso_micro


_HOST_FIELDS = ("source_compute", "source_node", "dest_compute", "dest_node", "dest_host")


def _view(row, version, hosts: bool, numbers: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row["id"], "instance_uuid": str(row["instance_uuid"]), "status": row["status"],
        "source_compute": row["source_compute"], "source_node": row["source_node"],
        "dest_compute": row["dest_compute"], "dest_node": row["dest_node"], "dest_host": None,
        # Nova's integer flavor ids (None once a flavor is deleted), not the flavorids.
        "old_instance_type_id": numbers.get(row["old_flavor"].get("id")),
        "new_instance_type_id": numbers.get(row["new_flavor"].get("id")),
        "created_at": iso_micro(row["created_at"]), "updated_at": iso_micro(row["updated_at"])}
    if version >= (2, 23):
        out["migration_type"] = row["migration_type"]
    if version >= (2, 59):
        out["uuid"] = str(row["uuid"])
    if version >= (2, 80):
        out.update(project_id=row["project_id"], user_id=row["user_id"])
    if not hosts:
        out.update(dict.fromkeys(_HOST_FIELDS))
    return out


async def list_migrations(request: web.Request) -> web.Response:
    ctx, q = w.context(request), request.query
    if not ctx.is_manager:
        raise errors.Forbidden("Policy doesn't allow os_compute_api:os-migrations:index to be performed.")
    project = q.get("project_id")
    if not ctx.is_admin and project != ctx.project_id:
        raise errors.Forbidden("Policy doesn't allow os_compute_api:os-migrations:index:all_projects "
                               "to be performed.")
    state = request.app[STATE]
    instance = w.parse_uuid(q["instance_uuid"]) if "instance_uuid" in q else None
    if "instance_uuid" in q and instance is None:
        return w.dump({"migrations": []})
    rows = await migration_store.listing(state.cells, instance, q.get("status"), q.get("host"),
                                         q.get("migration_type"), project)
    version = microversion.of(request)
    numbers = await flavor_store.internal_ids(state.pool, {r[k].get("id") for r in rows for k in ("old_flavor", "new_flavor")}
                                              - {None})
    return w.dump({"migrations": [_view(r, version, ctx.is_admin, numbers) for r in rows]})
