"""Helpers for compute integration tests: instance rows as the API and conductor write
them, and waiting on compute's notifications instead of polling."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from tests.integration.compute import fakes

FLAVOR = {"id": "f1", "name": "m1.test", "vcpus": 1, "memory_mb": 256, "root_gb": 1,
          "ephemeral_gb": 1, "swap": 64}


async def add_instance(pool, *, host: str | None, image_ref: str = fakes.IMAGE_ID, vm_state: str = "building",
                       task_state: str | None = "spawning", display_name: str = "vm",
                       flavor: dict[str, Any] | None = None, network_id: str = "net-1",
                       request_spec: dict[str, Any] | None = None) -> tuple[str, str]:
    """An instance row as the API and conductor leave it, plus its create action."""
    instance_uuid, request_id = str(uuid.uuid4()), f"req-{uuid.uuid4()}"
    await pool.execute(
        "INSERT INTO instances (uuid, display_name, project_id, user_id, reservation_id, flavor, image_ref,"
        " request_spec, requested_networks, host, node, vm_state, task_state)"
        " VALUES ($1, $2, 'proj', 'user', 'r-1', $3, $4, $9, $5, $6, $6, $7, $8)",
        instance_uuid, display_name, flavor or FLAVOR, image_ref, [{"network_id": network_id}], host,
        vm_state, task_state, request_spec or {})
    await pool.execute("INSERT INTO instance_actions (instance_uuid, request_id, action, project_id, user_id)"
                       " VALUES ($1, $2, 'create', 'proj', 'user')", instance_uuid, request_id)
    return instance_uuid, request_id


async def next_note(notes: asyncio.Queue, instance_uuid: str, *prefixes: str, timeout: float = 10.0):
    """The next notification about `instance_uuid` whose type starts with one of `prefixes`."""
    async with asyncio.timeout(timeout):
        while True:
            note = await notes.get()
            if note.payload.get("instance_uuid") == instance_uuid and note.event_type.startswith(prefixes):
                return note


async def events(pool, instance_uuid: str, request_id: str) -> dict[str, str]:
    rows = await pool.fetch(
        "SELECT e.event, e.result FROM instance_action_events e JOIN instance_actions a ON a.id = e.action_id"
        " WHERE a.instance_uuid = $1 AND a.request_id = $2 ORDER BY e.id", instance_uuid, request_id)
    return {r["event"]: r["result"] for r in rows}

