"""The payloads' shapes against Nova 34's: each object's name, version and exactly the fields
Nova 34 declares for it (nova/notifications/objects/*.py), so that a consumer written against
Nova's samples finds every key it indexes."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from nova_async.notifications import payloads

# Nova 34's fields, by payload.
INSTANCE = {
    "uuid", "user_id", "tenant_id", "reservation_id", "display_name", "display_description", "host_name",
    "host", "node", "os_type", "architecture", "availability_zone", "flavor", "image_uuid", "key_name",
    "kernel_id", "ramdisk_id", "created_at", "launched_at", "terminated_at", "deleted_at", "updated_at",
    "state", "power_state", "task_state", "progress", "ip_addresses", "block_devices", "metadata", "locked",
    "auto_disk_config", "request_id", "action_initiator_user", "action_initiator_project", "locked_reason",
    "shares"}
ACTION = INSTANCE | {"fault"}
NOVA_34 = {
    "InstanceActionPayload": ("1.9", ACTION),
    "InstanceCreatePayload": ("1.13", ACTION | {"keypairs", "tags", "trusted_image_certificates", "instance_name"}),
    "InstanceUpdatePayload": ("2.1", INSTANCE | {"state_update", "audit_period", "old_display_name", "tags"}),
    "InstanceActionRebuildPayload": ("1.10", ACTION | {"trusted_image_certificates"}),
    "InstanceActionSnapshotPayload": ("1.10", ACTION | {"snapshot_image_id"}),
    "InstanceActionRescuePayload": ("1.4", ACTION | {"rescue_image_ref"}),
    "InstanceActionVolumePayload": ("1.7", ACTION | {"volume_id"}),
}
EXTRA = {"InstanceActionSnapshotPayload": {"snapshot_image_id": str(uuid.uuid4())},
         "InstanceActionRescuePayload": {"rescue_image_ref": None},
         "InstanceActionVolumePayload": {"volume_id": str(uuid.uuid4())}}
# FlavorPayload 1.4 without `projects`, which Nova leaves out of an instance's flavor.
FLAVOR = {"flavorid", "memory_mb", "vcpus", "root_gb", "ephemeral_gb", "name", "swap", "rxtx_factor",
          "vcpu_weight", "disabled", "is_public", "extra_specs", "description"}
IP = {"label", "mac", "meta", "port_uuid", "version", "address", "device_name"}
BLOCK_DEVICE = {"device_name", "boot_index", "delete_on_termination", "volume_id", "tag"}
EXCEPTION = {"module_name", "function_name", "exception", "exception_message", "traceback"}
SERVICE = {"host", "binary", "topic", "report_count", "disabled", "disabled_reason", "availability_zone",
           "last_seen_up", "forced_down", "version", "uuid"}

WHEN = dt.datetime(2026, 11, 27, 9, 41, 7, 123456, tzinfo=dt.UTC)
ROW = {
    "uuid": uuid.uuid4(), "display_name": "web-1", "hostname": "web-1", "project_id": "proj", "user_id": "alice",
    "reservation_id": "r-1", "flavor": {"id": "f1", "name": "m1.small", "vcpus": 2, "memory_mb": 2048,
                                        "root_gb": 20, "ephemeral_gb": 0, "swap": 0, "extra_specs": {"a": 1}},
    "image_ref": "img-1", "network_info": [
        {"port_id": "p1", "network_id": "n1", "network_name": "private", "mac_address": "fa:16:3e:00:00:01",
         "ips": [{"address": "10.0.0.5", "version": 4, "subnet_id": "s1", "cidr": "10.0.0.0/24"},
                 {"address": "fd00::5", "version": 6, "subnet_id": "s2", "cidr": "fd00::/64"}],
         "bridge": "br1", "tap": "tapp1", "mtu": 1500}],
    "host": "edge-1", "node": "edge-1", "vm_state": "active", "task_state": None, "power_state": 1,
    "key_name": "k", "key_data": "ssh-ed25519 AAAA", "metadata": {"role": "web"}, "availability_zone": "nova",
    "locked": False, "progress": 0, "launched_at": WHEN, "created_at": WHEN, "updated_at": None,
    "terminated_at": None, "deleted_at": None, "tags": ["blue"], "description": None, "auto_disk_config": False,
}
BDMS = [{"device_name": "/dev/vda", "boot_index": 0, "delete_on_termination": True, "volume_id": uuid.uuid4(),
         "tag": None}, {"device_name": "/dev/vdb", "boot_index": None, "volume_id": None}]


def fields(obj: dict) -> set[str]:
    return set(obj["nova_object.data"])


@pytest.mark.parametrize("name", sorted(NOVA_34))
def test_each_instance_payload_has_novas_version_and_exactly_novas_fields(name):
    version, expected = NOVA_34[name]
    got = payloads.instance(ROW, name=name, bdms=BDMS, **EXTRA.get(name, {}))
    assert (got["nova_object.name"], got["nova_object.version"], got["nova_object.namespace"]) == (name, version, "nova")
    assert fields(got) == expected


def test_the_nested_objects_are_novas():
    data = payloads.instance(ROW, name="InstanceCreatePayload", bdms=BDMS,
                             fault=payloads.fault("boom", exception="BuildAbortException"))["nova_object.data"]
    assert (data["flavor"]["nova_object.name"], data["flavor"]["nova_object.version"]) == ("FlavorPayload", "1.4")
    assert fields(data["flavor"]) == FLAVOR
    assert data["flavor"]["nova_object.data"]["extra_specs"] == {"a": "1"}  # DictOfStringsField
    assert [ip["nova_object.data"]["address"] for ip in data["ip_addresses"]] == ["10.0.0.5", "fd00::5"]
    assert all(fields(ip) == IP and ip["nova_object.version"] == "1.0" for ip in data["ip_addresses"])
    assert data["ip_addresses"][0]["nova_object.data"]["label"] == "private"
    assert data["ip_addresses"][0]["nova_object.data"]["device_name"] == "tapp1"
    [bdm] = data["block_devices"]   # the mapping without a volume is not listed, as in Nova
    assert fields(bdm) == BLOCK_DEVICE and bdm["nova_object.data"]["volume_id"] == str(BDMS[0]["volume_id"])
    assert fields(data["fault"]) == EXCEPTION and data["fault"]["nova_object.version"] == "1.1"
    [key] = data["keypairs"]
    assert key["nova_object.name"] == "KeypairPayload" and key["nova_object.data"]["name"] == "k"


def test_values_read_as_novas():
    data = payloads.instance(ROW)["nova_object.data"]
    assert data["launched_at"] == "2026-11-27T09:41:07Z" and data["updated_at"] is None
    assert (data["state"], data["power_state"], data["task_state"]) == ("active", "running", None)
    assert (data["tenant_id"], data["host_name"], data["image_uuid"]) == ("proj", "web-1", "img-1")
    assert data["auto_disk_config"] == "MANUAL" and data["block_devices"] is None  # none given: Nova's default
    assert data["uuid"] == str(ROW["uuid"])


def test_instance_update_tells_old_and_new_state_and_the_audit_period():
    row = {**ROW, "vm_state": "active", "task_state": "powering-off"}
    data = payloads.instance(row, name="InstanceUpdatePayload", state_update=payloads.state_update(
        row, old_state="active", old_task_state=None))["nova_object.data"]
    assert data["state_update"]["nova_object.data"] == {
        "old_state": "active", "state": "active", "old_task_state": None, "new_task_state": "powering-off"}
    period = payloads.audit_period(WHEN)["nova_object.data"]
    assert period == {"audit_period_beginning": "2026-11-01T00:00:00Z", "audit_period_ending": "2026-11-27T09:41:07Z"}
    assert set(data["audit_period"]["nova_object.data"]) == set(period)


def test_service_status_and_volume_payloads():
    row = {"id": uuid.uuid4(), "host": "edge-1", "binary_name": "nova-compute", "topic": "compute",
           "zone": "nova", "disabled": True, "disabled_reason": "maintenance", "forced_down": False,
           "last_seen_up": WHEN}
    got = payloads.service(row)
    assert (got["nova_object.name"], got["nova_object.version"]) == ("ServiceStatusPayload", "1.1")
    assert fields(got) == SERVICE
    assert got["nova_object.data"]["binary"] == "nova-compute" and got["nova_object.data"]["disabled"] is True
    vol = payloads.volume("v1", size=1, project_id="proj", instance_uuid="i1")
    assert (vol["nova_object.name"], vol["nova_object.namespace"], vol["nova_object.version"]) == (
        "VolumePayload", "nova_async", "1.0")
    assert vol["nova_object.data"] == {"volume_id": "v1", "size": 1, "tenant_id": "proj", "instance_uuid": "i1"}
