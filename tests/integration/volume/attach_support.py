"""What the attachment tests share: the volume role running with the file backend, volumes
made with SQL and the backend (a volume in any status, without the volume API's create), and
a cell instance with or without a block device mapping."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

from tests.harness import running


@contextlib.asynccontextmanager
async def volume_service(pool, tmp_path: Path):
    async with running(pool, ["volume"], tmp_path, volume={"dir": str(tmp_path / "volumes")}) as h:
        yield h


async def add_volume(h, *, project_id: str = "proj-a", status: str = "available", size: int = 1,
                     multiattach: bool = False) -> str:
    volume_id = str(uuid.uuid4())
    await h.pool.execute("INSERT INTO volumes (id, project_id, user_id, name, size, status, multiattach, backend)"
                         " VALUES ($1, $2, 'user', $3, $4, $5, $6, 'file')",
                         volume_id, project_id, f"vol-{volume_id[:8]}", size, status, multiattach)
    await h.roles["volume"].api.store.create(volume_id, size)
    return volume_id


async def volume_status(h, volume_id: str) -> str:
    return await h.pool.fetchval("SELECT status FROM volumes WHERE id = $1", volume_id)


async def add_instance(h, *, project_id: str = "proj-a", volume_id: str | None = None,
                       attachment_id: str | None = None) -> str:
    """An instance in cell1 (mapped there), with a block device mapping of `volume_id` if given."""
    instance_uuid = str(uuid.uuid4())
    cell = h.cells.default
    await cell.pool.execute(
        "INSERT INTO instances (uuid, display_name, project_id, user_id, reservation_id, flavor, image_ref,"
        " request_spec, requested_networks, vm_state) VALUES ($1, 'vm', $2, 'user', 'r-1', '{}', '', '{}', '[]',"
        " 'active')", instance_uuid, project_id)
    async with h.pool.acquire() as conn:
        await h.cells.map_instances(conn, cell, [instance_uuid], project_id, "user")
    if volume_id:
        await cell.pool.execute(
            "INSERT INTO block_device_mappings (id, instance_uuid, source_type, destination_type, volume_id,"
            " attachment_id) VALUES ($1, $2, 'volume', 'volume', $3, $4)",
            str(uuid.uuid4()), instance_uuid, volume_id, attachment_id)
    return instance_uuid
