"""Versioned payloads: our rows as Nova's versioned objects (`nova_object.*`), the shape both
the notifications and the hooks hand out.

Names, versions and fields are those of Nova 34 (nova/notifications/objects/*.py), so that a
consumer written against Nova's notification samples (Ceilometer, Watcher) reads ours. A field
Nova has and we have no value for is there with Nova's empty value (null, "" or []), never
left out: consumers index payloads directly. What we fill differently from Nova:
- `kernel_id`/`ramdisk_id` are "" (Nova's value for an image without them; ours are not on
  the instance row), `os_type` and `architecture` null, `shares` [] (no Manila).
- `block_devices` lists the instance's volumes (Nova does when `bdms_in_notifications` is on;
  its default is off, which gives null there). A payload built without them has null.
- a fault (`ExceptionPayload`) is built from the reason our error carries: its `exception`
  is our error's class name when known, `traceback` is "" (no Python traceback leaves the
  process, as Nova's `notify_on_state_change` also leaves it empty for most faults).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

NAMESPACE = "nova"

# Nova 34's version of each payload we emit.
VERSIONS: dict[str, str] = {
    "InstanceActionPayload": "1.9",
    "InstanceCreatePayload": "1.13",
    "InstanceUpdatePayload": "2.1",
    "InstanceActionRebuildPayload": "1.10",
    "InstanceActionResizePrepPayload": "1.4",
    "InstanceActionSnapshotPayload": "1.10",
    "InstanceActionRescuePayload": "1.4",
    "InstanceActionVolumePayload": "1.7",
    "InstanceStateUpdatePayload": "1.0",
    "AuditPeriodPayload": "1.0",
    "FlavorPayload": "1.4",
    "IpPayload": "1.0",
    "BlockDevicePayload": "1.0",
    "KeypairPayload": "1.0",
    "ExceptionPayload": "1.1",
    "ServiceStatusPayload": "1.1",
}

# Payloads that are an InstanceActionPayload (they carry `fault` and `request_id`).
_ACTION_PAYLOADS = {name for name in VERSIONS if name.startswith("InstanceAction")} | {"InstanceCreatePayload"}

# Nova's power_state names (nova/compute/power_state.py STATE_MAP), by our integer.
_POWER_STATES = {0: "pending", 1: "running", 3: "paused", 4: "shutdown", 6: "crashed", 7: "suspended"}


def versioned(name: str, version: str | None, data: dict[str, Any], *,
              namespace: str = NAMESPACE) -> dict[str, Any]:
    """An object as Nova serializes it on the wire (its version: Nova 34's when not given)."""
    return {"nova_object.name": name, "nova_object.namespace": namespace,
            "nova_object.version": version or VERSIONS[name], "nova_object.data": data}


def isotime(value: dt.datetime | None) -> str | None:
    """A time as Nova's DateTimeField serializes it: UTC, whole seconds, a Z."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def instance(row: Mapping[str, Any], *, name: str = "InstanceActionPayload", version: str | None = None,
             bdms: Iterable[Mapping[str, Any]] | None = None, fault: dict[str, Any] | None = None,
             request_id: str | None = None, user_id: str | None = None, project_id: str | None = None,
             **extra: Any) -> dict[str, Any]:
    """An instance row (the columns of `instances`) as the payload `name` of `version` (Nova
    34's by default). `bdms` are its block_device_mappings rows, `fault` an ExceptionPayload
    (see `fault`), `request_id`/`user_id`/`project_id` who asked (Nova's request_id and
    action_initiator_*); `extra` adds the fields that payload has beyond an instance's."""
    data = _instance_data(row, bdms)
    data.update(request_id=request_id, action_initiator_user=user_id, action_initiator_project=project_id)
    if name in _ACTION_PAYLOADS:
        data["fault"] = fault
    if name == "InstanceCreatePayload":
        data.update(keypairs=_keypairs(row), tags=list(row.get("tags") or []),
                    trusted_image_certificates=None, instance_name=f"instance-{row['uuid']}")
    elif name == "InstanceActionRebuildPayload":
        data["trusted_image_certificates"] = None
    elif name == "InstanceUpdatePayload":
        data.update(tags=list(row.get("tags") or []), old_display_name=None,
                    audit_period=audit_period(), state_update=state_update(row))
    data.update(extra)
    return versioned(name, version, data)


def _instance_data(row: Mapping[str, Any], bdms: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """InstancePayload's fields (Nova 34: version 1.9 of the common part)."""
    flavor = row.get("flavor") or {}
    return {
        # None only for an instance not written yet (a pre_create hook's)
        "uuid": None if row["uuid"] is None else str(row["uuid"]), "user_id": row.get("user_id"), "tenant_id": row.get("project_id"),
        "reservation_id": row.get("reservation_id"), "display_name": row.get("display_name"),
        "display_description": row.get("description"), "host_name": row.get("hostname"),
        "host": row.get("host"), "node": row.get("node"), "os_type": None, "architecture": None,
        # Nova's instance takes its host's zone when scheduled; ours keeps only a requested one,
        # and every host is in the default zone unless an aggregate says otherwise.
        "availability_zone": row.get("availability_zone") or ("nova" if row.get("host") else None),
        "flavor": flavor_payload(flavor) if flavor else None,
        "image_uuid": row.get("image_ref") or "", "key_name": row.get("key_name"),
        "kernel_id": "", "ramdisk_id": "",
        "created_at": isotime(row.get("created_at")), "launched_at": isotime(row.get("launched_at")),
        "terminated_at": isotime(row.get("terminated_at")), "deleted_at": isotime(row.get("deleted_at")),
        "updated_at": isotime(row.get("updated_at")),
        "state": row.get("vm_state"), "power_state": _POWER_STATES.get(row.get("power_state") or 0, "pending"),
        "task_state": row.get("task_state"), "progress": row.get("progress") or 0,
        "ip_addresses": ip_addresses(row.get("network_info") or []),
        "block_devices": None if bdms is None else block_devices(bdms),
        "metadata": {str(k): str(v) for k, v in (row.get("metadata") or {}).items()},
        "locked": bool(row.get("locked")),
        "auto_disk_config": "AUTO" if row.get("auto_disk_config") else "MANUAL",
        "locked_reason": None, "shares": [],
    }


def flavor_payload(flavor: Mapping[str, Any]) -> dict[str, Any]:
    """An instance's copy of its flavor (instances.flavor) as FlavorPayload. `projects` is
    left out as Nova leaves it out of an instance's flavor (never loaded there)."""
    return versioned("FlavorPayload", None, {
        "flavorid": flavor.get("id"), "name": flavor.get("name"), "memory_mb": flavor.get("memory_mb"),
        "vcpus": flavor.get("vcpus"), "root_gb": flavor.get("root_gb"),
        "ephemeral_gb": flavor.get("ephemeral_gb", 0), "swap": flavor.get("swap", 0),
        "rxtx_factor": 1.0, "vcpu_weight": 0, "disabled": False, "is_public": True,
        "extra_specs": {str(k): str(v) for k, v in (flavor.get("extra_specs") or {}).items()},
        "description": None,
    })


def ip_addresses(network_info: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One IpPayload per fixed address of each port (Nova's IpPayload.from_network_info), from
    the records compute keeps in instances.network_info."""
    return [versioned("IpPayload", None, {
        "label": vif.get("network_name") or "", "mac": vif.get("mac_address"), "meta": {},
        "port_uuid": vif.get("port_id"), "version": ip.get("version"), "address": ip.get("address"),
        "device_name": vif.get("tap") or None,
    }) for vif in network_info for ip in vif.get("ips") or []]


def block_devices(bdms: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The mappings that have a volume, as BlockDevicePayload (Nova skips the others)."""
    return [versioned("BlockDevicePayload", None, {
        "device_name": bdm.get("device_name"), "boot_index": bdm.get("boot_index"),
        "delete_on_termination": bool(bdm.get("delete_on_termination")),
        "volume_id": str(bdm["volume_id"]), "tag": bdm.get("tag"),
    }) for bdm in bdms if bdm.get("volume_id") is not None]


def _keypairs(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The key pair the server was booted with, as the instance keeps it (its name and public
    key; the fingerprint is not kept with the instance, so null)."""
    if not row.get("key_name"):
        return []
    return [versioned("KeypairPayload", None, {
        "user_id": row.get("user_id"), "name": row["key_name"], "fingerprint": None,
        "public_key": row.get("key_data"), "type": "ssh"})]


def fault(message: str, *, exception: str = "NovaAsyncError", module: str = "nova_async",
          function: str = "") -> dict[str, Any]:
    """ExceptionPayload: what failed, for an `.error` notification's `fault`."""
    return versioned("ExceptionPayload", None, {
        "module_name": module, "function_name": function, "exception": exception,
        "exception_message": message, "traceback": ""})


def state_update(row: Mapping[str, Any], *, old_state: str | None = None,
                 old_task_state: str | None = None) -> dict[str, Any]:
    """InstanceStateUpdatePayload: the vm_state/task_state before and now (an unknown before:
    the same as now, as Nova sends when nothing it knew of changed)."""
    state, task_state = row.get("vm_state"), row.get("task_state")
    return versioned("InstanceStateUpdatePayload", None, {
        "old_state": old_state if old_state is not None else state, "state": state,
        "old_task_state": old_task_state, "new_task_state": task_state})


def audit_period(now: dt.datetime | None = None) -> dict[str, Any]:
    """AuditPeriodPayload for Nova's default audit period (`instance_usage_audit_period` =
    month): from the start of this month to now."""
    now = now or dt.datetime.now(dt.UTC)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return versioned("AuditPeriodPayload", None, {
        "audit_period_beginning": isotime(start), "audit_period_ending": isotime(now)})


def service(row: Mapping[str, Any], *, report_count: int = 0) -> dict[str, Any]:
    """A `services` row as ServiceStatusPayload (`binary` as Nova names it: nova-compute, …).
    `version` is Nova's service version, an integer that grows with every release: ours is
    the highest migration the service's release ships (`schema_level`, 0070), 0 before."""
    version = row.get("schema_level") or 0
    return versioned("ServiceStatusPayload", None, {
        "host": row.get("host"), "binary": row.get("binary_name"), "topic": row.get("topic"),
        "report_count": report_count, "disabled": bool(row.get("disabled")),
        "disabled_reason": row.get("disabled_reason"), "availability_zone": row.get("zone"),
        "last_seen_up": isotime(row.get("last_seen_up")), "forced_down": bool(row.get("forced_down")),
        "version": version, "uuid": str(row["id"])})


# Our volume service's own events (volume.create.*, volume.attach.*, …) have no versioned object
# in Nova, and Cinder's are unversioned: they are this one object in our own namespace, so no
# consumer mistakes it for one of Nova's. Its fields are a subset of Cinder's volume usage
# payload's names (volume_id, status, size, tenant_id, instance_uuid…), plus what the event adds.
VOLUME_PAYLOAD = ("VolumePayload", "1.0", "nova_async")


def volume(volume_id: str, **fields: Any) -> dict[str, Any]:
    """A volume event's payload: `volume_id` and the fields the event carries
    (project_id is named tenant_id, as in Cinder's payloads)."""
    data: dict[str, Any] = {"volume_id": volume_id}
    for key, value in fields.items():
        data["tenant_id" if key == "project_id" else key] = value
    name, version, namespace = VOLUME_PAYLOAD
    return versioned(name, version, data, namespace=namespace)
