"""Versioned payloads: our rows as Nova's versioned objects (`nova_object.*`), the shape both
the notifications and the hooks hand out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NAMESPACE = "nova"


def versioned(name: str, version: str, data: dict[str, Any]) -> dict[str, Any]:
    """An object as Nova serializes it on the wire."""
    return {"nova_object.name": name, "nova_object.namespace": NAMESPACE,
            "nova_object.version": version, "nova_object.data": data}


def instance(row: Mapping[str, Any], *, name: str = "InstanceActionPayload", version: str = "1.8",
             **extra: Any) -> dict[str, Any]:
    """An instance row (the columns of `instances`) as the payload `name` of `version`;
    `extra` adds the fields that payload has beyond an instance's (fault, …)."""
    data = {"uuid": str(row["uuid"]), "display_name": row["display_name"],
            "tenant_id": row["project_id"], "user_id": row["user_id"],
            "host": row.get("host"), "node": row.get("node"),
            "state": row.get("vm_state"), "task_state": row.get("task_state"),
            "metadata": dict(row.get("metadata") or {}), **extra}
    return versioned(name, version, data)
