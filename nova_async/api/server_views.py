"""How a server looks in the compute API, per microversion (the 2.96 shape is in
../shared/clients-examples.json; older versions drop fields)."""

from __future__ import annotations

import enum
import hashlib
import ipaddress
from typing import Any

from nova_async.api.links import bookmark, links
from nova_async.api.microversion import Version
from nova_async.common.context import RequestContext
from nova_async.common.states import TaskState, VmState
from nova_async.common.timeutil import iso, iso_micro

_ACTIVE_TASKS = {TaskState.REBOOTING: "REBOOT", TaskState.REBOOT_PENDING: "REBOOT",
                 TaskState.REBOOT_STARTED: "REBOOT", TaskState.REBOOTING_HARD: "HARD_REBOOT",
                 TaskState.REBOOT_PENDING_HARD: "HARD_REBOOT", TaskState.REBOOT_STARTED_HARD: "HARD_REBOOT",
                 TaskState.REBUILDING: "REBUILD", TaskState.REBUILD_BLOCK_DEVICE_MAPPING: "REBUILD",
                 TaskState.REBUILD_SPAWNING: "REBUILD", TaskState.MIGRATING: "MIGRATING",
                 TaskState.RESIZE_PREP: "RESIZE", TaskState.RESIZE_MIGRATING: "RESIZE",
                 TaskState.RESIZE_MIGRATED: "RESIZE", TaskState.RESIZE_FINISH: "RESIZE",
                 TaskState.PASSWORD: "PASSWORD"}
_VM_STATES = {VmState.ACTIVE: "ACTIVE", VmState.BUILDING: "BUILD", VmState.STOPPED: "SHUTOFF",
              VmState.RESIZED: "VERIFY_RESIZE", VmState.PAUSED: "PAUSED", VmState.SUSPENDED: "SUSPENDED",
              VmState.RESCUED: "RESCUE", VmState.ERROR: "ERROR", VmState.DELETED: "DELETED",
              VmState.SOFT_DELETED: "SOFT_DELETED", VmState.SHELVED: "SHELVED",
              VmState.SHELVED_OFFLOADED: "SHELVED_OFFLOADED"}
_RESIZING = (TaskState.RESIZE_PREP, TaskState.RESIZE_MIGRATING, TaskState.RESIZE_MIGRATED, TaskState.RESIZE_FINISH)
_REBUILDING = (TaskState.REBUILDING, TaskState.REBUILD_BLOCK_DEVICE_MAPPING, TaskState.REBUILD_SPAWNING)

# The status a task gives a server in a vm_state; any other task (none included) shows the
# vm_state's own status (_VM_STATES). Nova's table (nova/api/openstack/common.py) in ours.
_TASK_STATUSES: dict[str, dict[str, str]] = {
    VmState.ACTIVE: _ACTIVE_TASKS,
    VmState.STOPPED: {**{t: "RESIZE" for t in _RESIZING}, **{t: "REBUILD" for t in _REBUILDING}},
    VmState.RESIZED: {TaskState.RESIZE_REVERTING: "REVERT_RESIZE"},
    VmState.PAUSED: {TaskState.MIGRATING: "MIGRATING"},
    VmState.ERROR: {t: "REBUILD" for t in _REBUILDING},
}


def status(vm_state: str, task_state: str | None) -> str:
    return _TASK_STATUSES.get(vm_state, {}).get(task_state) or _VM_STATES.get(vm_state, "UNKNOWN")


def status_filter(statuses: list[str]) -> tuple[list[str], list[str] | None]:
    """What `?status=` (repeatable) selects, as Nova reads it: the vm_states any of them
    names, and the task_states they name, unless one of them is a vm_state's own status
    (then, as in Nova, no task is filtered on: ACTIVE lists rebooting servers too). No
    vm_state at all: a status nothing shows."""
    wanted = {s.upper() for s in statuses}
    vm_states, task_states, plain = set(), set(), False
    for vm_state, shown in _VM_STATES.items():
        if shown in wanted:
            vm_states.add(vm_state)
            plain = True
        for task_state, task_shown in _TASK_STATUSES.get(vm_state, {}).items():
            if task_shown in wanted:
                vm_states.add(vm_state)
                task_states.add(task_state)
    return sorted(vm_states), None if plain else sorted(task_states)


def host_id(project_id: str, host: str | None) -> str:
    if not host:
        return ""
    return hashlib.sha224((project_id + host).encode()).hexdigest()


def addresses(network_info: list[dict[str, Any]], extended: bool = True) -> dict[str, list[dict[str, Any]]]:
    """Per network, its addresses; `extended` adds the type and MAC (OS-EXT-IPS*), which
    update and rebuild answers leave out before 2.75."""
    fixed: dict[str, list[dict[str, Any]]] = {}
    floating: dict[str, list[dict[str, Any]]] = {}
    for vif in network_info:
        name, mac = vif["network_name"], vif["mac_address"]
        fixed.setdefault(name, []).extend(
            _address_entry(ip["version"], ip["address"], "fixed", mac, extended) for ip in vif.get("ips", []))
        floating.setdefault(name, []).extend(
            _address_entry(4, address, "floating", mac, extended) for address in vif.get("floating_ips", []))
    # A network's floating addresses follow all its fixed ones, as Nova lists them
    # (network/instance_addresses.py keeps each port's floating_ips current).
    return {name: entries + floating[name] for name, entries in fixed.items()}


def _address_entry(version: int, address: str, kind: str, mac: str, extended: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"version": version, "addr": address}
    if extended:
        entry.update({"OS-EXT-IPS:type": kind, "OS-EXT-IPS-MAC:mac_addr": mac})
    return entry


def _address(written: str | None) -> str:
    """An access address in its canonical form, as Nova (an IP column) answers it whatever
    the request wrote: '2001:DB8:0::1' is '2001:db8::1'."""
    if not written:
        return ""
    try:
        return str(ipaddress.ip_address(written))
    except ValueError:
        return written


def summary(row, base: str) -> dict[str, Any]:
    uuid = str(row["uuid"])
    return {"id": uuid, "name": row["display_name"], "links": links(base, "servers", uuid)}


def _flavor(row, base: str, version: Version) -> dict[str, Any]:
    flavor = row["flavor"]
    if version < (2, 47):
        return {"id": flavor["id"], "links": bookmark(base, "flavors", flavor["id"])}
    return {"vcpus": flavor["vcpus"], "ram": flavor["memory_mb"], "disk": flavor["root_gb"],
            "ephemeral": flavor["ephemeral_gb"], "swap": flavor["swap"], "original_name": flavor["name"],
            "extra_specs": flavor.get("extra_specs", {})}


def _fault(row, ctx: RequestContext) -> dict[str, Any] | None:
    if row["vm_state"] != VmState.ERROR or row.get("fault_message") is None:
        return None
    fault = {"code": row["fault_code"], "created": iso(row["fault_created_at"]),
             "message": row["fault_message"]}
    if fault_details_shown(row["fault_code"], ctx.is_admin):
        fault["details"] = row["fault_details"]
    return fault


def fault_details_shown(code: int, is_admin: bool) -> bool:
    """Whether a fault's details (a traceback, for a 500) are shown: to admins, or when the
    fault is not an internal error, as Nova."""
    return is_admin or code != 500


# The image properties Nova knows by name (its ImageMetaProps): from 2.98 a server's image shows
# those of them its image had at boot, and no others.
_KNOWN_PROPERTY_PREFIXES = ("hw_", "os_", "img_")
_KNOWN_PROPERTIES = frozenset({"architecture", "auto_disk_config", "hypervisor_type", "hypervisor_version_requires",
                               "ipxe_boot", "root_device_name", "traits_required", "vm_mode"})


def image_properties(request_spec: dict[str, Any] | None) -> dict[str, str]:
    """The image properties (2.98) of a server, from what its request spec kept at boot."""
    kept = (request_spec or {}).get("image_properties") or {}
    return {k: str(v)[:255] for k, v in kept.items()
            if v is not None and (k.startswith(_KNOWN_PROPERTY_PREFIXES) or k in _KNOWN_PROPERTIES)}


class View(enum.Enum):
    """Which answer a server is rendered for. Nova's update and rebuild answers carry only
    the base fields (plus the microversioned ones) before 2.75, every show field from 2.75;
    rebuild shows key_name from 2.54 and user_data (top level, not OS-EXT-SRV-ATTR) from 2.57."""
    SHOW = "show"          # show and list detail
    UPDATE = "update"      # PUT /servers/{id}
    REBUILD = "rebuild"    # the rebuild action


def detail(row, base: str, version: Version, ctx: RequestContext,
           security_groups: list[str] | None = None, volumes: list[Any] | None = None,
           view: View = View.SHOW) -> dict[str, Any]:
    """A server as show and detail render it (or update and rebuild, `view`); `security_groups`
    are the names of the groups on its ports (shown only when it has any, as Nova; update and
    rebuild show none); `volumes` its attached volumes' mappings (volume_id, delete_on_termination)."""
    uuid = str(row["uuid"])
    image: dict[str, Any] | str = ({"id": row["image_ref"], "links": bookmark(base, "images", row["image_ref"])}
                                   if row["image_ref"] else "")
    if image and version >= (2, 98):
        image["properties"] = image_properties(row["request_spec"])
    full = view is View.SHOW or version >= (2, 75)
    out: dict[str, Any] = {
        "id": uuid, "name": row["display_name"], "status": status(row["vm_state"], row["task_state"]),
        "tenant_id": row["project_id"], "user_id": row["user_id"], "metadata": row["metadata"],
        "hostId": host_id(row["project_id"], row["host"]), "image": image,
        "flavor": _flavor(row, base, version), "created": iso(row["created_at"]),
        "updated": iso(row["updated_at"] or row["created_at"]),
        "addresses": addresses(row["network_info"], extended=full),
        "accessIPv4": _address(row["access_ip_v4"]), "accessIPv6": _address(row["access_ip_v6"]),
        "links": links(base, "servers", uuid), "OS-DCF:diskConfig": "AUTO" if row["auto_disk_config"] else "MANUAL",
    }
    if full:
        out.update({
            # The zone it was placed in (only "nova" here unless pinned); a shelved offloaded
            # server keeps the one it was in, as Nova's instance row does.
            "OS-EXT-AZ:availability_zone": row["availability_zone"] or (
                "nova" if row["host"] or row["vm_state"] == VmState.SHELVED_OFFLOADED else ""),
            "config_drive": row["config_drive"], "key_name": row["key_name"],
            "OS-SRV-USG:launched_at": iso_micro(row["launched_at"]),
            "OS-SRV-USG:terminated_at": iso_micro(row["terminated_at"]),
            "OS-EXT-STS:task_state": row["task_state"], "OS-EXT-STS:vm_state": row["vm_state"],
            "OS-EXT-STS:power_state": row["power_state"],
            "os-extended-volumes:volumes_attached": [
                {"id": str(v["volume_id"]), **({"delete_on_termination": v["delete_on_termination"]}
                                               if version >= (2, 3) else {})}
                for v in volumes or ()],
        })
    elif view is View.REBUILD and version >= (2, 54):
        out["key_name"] = row["key_name"]
    if security_groups and full:
        out["security_groups"] = [{"name": name} for name in security_groups]
    if row["vm_state"] in (VmState.BUILDING, VmState.ACTIVE):
        out["progress"] = row["progress"]
    fault = _fault(row, ctx)
    if fault:
        out["fault"] = fault
    extended_attributes = ctx.is_admin and full
    if extended_attributes:
        out["OS-EXT-SRV-ATTR:host"] = row["host"]
        out["OS-EXT-SRV-ATTR:instance_name"] = f"instance-{uuid}"
        out["OS-EXT-SRV-ATTR:hypervisor_hostname"] = row["node"]
    if version >= (2, 3) and extended_attributes:
        out.update({"OS-EXT-SRV-ATTR:reservation_id": row["reservation_id"],
                    "OS-EXT-SRV-ATTR:launch_index": row["launch_index"],
                    "OS-EXT-SRV-ATTR:kernel_id": "", "OS-EXT-SRV-ATTR:ramdisk_id": "",
                    "OS-EXT-SRV-ATTR:hostname": row["hostname"],
                    "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda"})
        if view is not View.REBUILD:   # rebuild has its own user_data from 2.57
            out["OS-EXT-SRV-ATTR:user_data"] = row["user_data"]
    if version >= (2, 90) and not extended_attributes:
        out["OS-EXT-SRV-ATTR:hostname"] = row["hostname"]   # every caller's from 2.90
    if version >= (2, 9):
        out["locked"] = row["locked"]
    if version >= (2, 16) and extended_attributes and row["host"]:
        out["host_status"] = "UP"
    if version >= (2, 19):
        out["description"] = row["description"]
    if version >= (2, 26):
        out["tags"] = list(row["tags"])
    if version >= (2, 73):
        out["locked_reason"] = row["locked_reason"]
    if version >= (2, 63):
        out["trusted_image_certificates"] = None
    if version >= (2, 71) and "server_groups" in row.keys():
        out["server_groups"] = list(row["server_groups"])  # in show, update and rebuild; not in lists
    if version >= (2, 96) and full:
        out["pinned_availability_zone"] = row["availability_zone"]
    if version >= (2, 100) and full:
        out["scheduler_hints"] = dict((row["request_spec"] or {}).get("scheduler_hints") or {})
    if view is View.REBUILD and version >= (2, 57):
        out["user_data"] = row["user_data"]
    return out
