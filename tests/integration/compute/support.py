"""Helpers for compute integration tests: instance rows as the API and conductor write
them, waiting on compute's notifications instead of polling, and volumes made and looked
at through the volume API for the attach and boot-from-volume tests."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from nova_async.compute.domain_xml import domain_name
from tests.integration.compute import fakes
from tests.integration.volume.helpers import make_volume
from tests.waiting import until

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
            if note.data.get("uuid") == instance_uuid and note.event_type.startswith(prefixes):
                return note


async def events(pool, instance_uuid: str, request_id: str) -> dict[str, str]:
    rows = await pool.fetch(
        "SELECT e.event, e.result FROM instance_action_events e JOIN instance_actions a ON a.id = e.action_id"
        " WHERE a.instance_uuid = $1 AND a.request_id = $2 ORDER BY e.id", instance_uuid, request_id)
    return {r["event"]: r["result"] for r in rows}



# -- volumes, as a user of the volume and compute APIs makes and sees them (the real volume
# role, file backend). Shared by the attach and boot-from-volume tests.

V3 = "/volume/v3"
CINDER = {"OpenStack-API-Version": "volume 3.44"}   # attachments (3.27) and os-complete (3.44)
BFV_MV = {"OpenStack-API-Version": "compute 2.67"}  # volume_type in block_device_mapping_v2


async def new_volume(h, headers=None, **fields) -> str:
    """A volume made through the volume API (1 GiB blank unless `fields` say), once available."""
    made = await make_volume(h, headers or h.alice, **fields)
    assert made["status"] == "available", made
    return made["id"]


async def volume(h, volume_id: str, headers=None) -> dict | None:
    """The volume as the volume API shows it (to the admin unless `headers` say); None: gone."""
    resp = await h.http.get(f"{V3}/volumes/{volume_id}", headers={**(headers or h.admin), **CINDER})
    if resp.status == 404:
        return None
    assert resp.status == 200, await resp.text()
    return (await resp.json())["volume"]


async def volume_status(h, volume_id: str, *wanted: str) -> str:
    """Until the volume's status is one of `wanted` ("gone": deleted)."""
    async def status() -> str:
        shown = await volume(h, volume_id)
        return "gone" if shown is None else shown["status"]
    return await until(status, lambda s: s in wanted, what=f"volume {volume_id} {' or '.join(wanted)}")


async def volume_attachments(h, volume_id: str | None = None) -> list[dict]:
    """Every attachment the volume service holds (of one volume, if given), whatever its state."""
    query = "?all_tenants=1" + (f"&volume_id={volume_id}" if volume_id else "")
    resp = await h.http.get(f"{V3}/attachments/detail{query}", headers={**h.admin, **CINDER})
    assert resp.status == 200, await resp.text()
    return (await resp.json())["attachments"]


def volume_path(h, volume_id: str) -> str:
    """The file backend's file of the volume: what the guest's disk must be."""
    return str(h.roles["volume"].api.store.volume_path(volume_id))


def bfv_body(h, bdms: list[dict], **extra) -> dict:
    return {"server": {"name": "vm1", "flavorRef": h.flavor, "networks": [{"uuid": h.net}],
                       "block_device_mapping_v2": bdms, **extra}}


async def boot_bfv(h, body: dict, headers=None) -> str:
    """POST /servers with block device mappings: the new server's id (202)."""
    resp = await h.http.post("/compute/v2.1/servers", headers={**(headers or h.alice), **BFV_MV}, json=body)
    assert resp.status == 202, await resp.text()
    return (await resp.json())["server"]["id"]


async def bdm_rows(h, server_id: str) -> list:
    return await h.cell1.fetch("SELECT * FROM block_device_mappings WHERE instance_uuid = $1 "
                               "ORDER BY boot_index NULLS LAST, created_at", uuid.UUID(server_id))


async def domain_disks(h, server_id: str) -> str:
    """The guest's definition (its disks are what the tests read in it)."""
    row = await h.cell1.fetchrow("SELECT host FROM instances WHERE uuid = $1", uuid.UUID(server_id))
    return await h.roles["compute"].hosts[row["host"]].hypervisor.xml_of(domain_name(server_id))
