"""Volumes on existing servers, as a user drives them: `os-volume_attachments` attach, list,
show and detach through the whole cloud (two simulated test-driver hosts), the disk in the
guest's live and persistent definitions, `volumes_attached` in the server's views, Nova's
answers to what cannot be done, a server delete that frees (or deletes) its volumes, and a
compute restart that finds attaches and detaches cut off.

The volume service is the contract's stand-in (fakes.FakeVolume: sparse files, the states
the volume role promises), so these tests do not depend on how the volume role is built."""

from __future__ import annotations

import dataclasses
import json
import uuid as uuidlib
import xml.etree.ElementTree as ET

import libvirt
import pytest

from nova_async import service
from nova_async.compute.domain_xml import Disk, DomainSpec, domain_name, domain_xml
from tests.harness import running
from tests.integration.compute import fakes
from tests.integration.compute.support import FLAVOR, add_instance
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, wait_status
from tests.integration.test_server_lifecycle import ROLES as CLOUD_ROLES
from tests.waiting import until

V1 = {"OpenStack-API-Version": "compute 2.1"}
V79 = {"OpenStack-API-Version": "compute 2.79"}


@pytest.fixture
def fake_volume(monkeypatch):
    monkeypatch.setitem(service.ROLE_CLASSES, "volume", f"{fakes.__name__}:FakeVolume")


@pytest.fixture
async def cloud(pool, tmp_path, fake_volume):
    async with running(pool, CLOUD_ROLES + ["volume"], tmp_path,
                       compute={"simulate_hosts": 2, "sim_vcpus": 4, "sim_memory_mb": 4096, "sim_disk_gb": 50}) as h:
        flavor = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1.small", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
        h.flavor = flavor["flavor"]["id"]
        image = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
            "name": "demo", "disk_format": "raw", "container_format": "bare"}), 201)
        await ok(await h.http.put(f"/image/v2/images/{image['id']}/file", data=b"\0" * 65536,
                                  headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
        h.image = image["id"]
        net = await ok(await h.http.post("/network/v2.0/networks", headers=h.alice,
                                         json={"network": {"name": "net1"}}), 201)
        h.net = net["network"]["id"]
        await ok(await h.http.post("/network/v2.0/subnets", headers=h.alice, json={"subnet": {
            "network_id": h.net, "cidr": "10.0.0.0/24", "ip_version": 4}}), 201)
        h.volumes = h.roles["volume"]
        yield h


async def boot(h, name: str = "vm1") -> tuple[str, str]:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, name=name)), 202)
    server_id = created["server"]["id"]
    server = await wait_status(h, server_id, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    admin_view = await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **MV}), 200)
    return server_id, admin_view["server"]["OS-EXT-SRV-ATTR:host"]


def attachments_url(server_id: str, volume_id: str = "") -> str:
    return f"{V}/servers/{server_id}/os-volume_attachments" + (f"/{volume_id}" if volume_id else "")


def attach(h, server_id: str, volume_id: str, headers=None, **extra):
    return h.http.post(attachments_url(server_id), headers={**h.alice, **(headers or MV)},
                       json={"volumeAttachment": {"volumeId": volume_id, **extra}})


async def volume_status(h, volume_id: str, *wanted: str) -> str:
    return await until(lambda: (h.volumes.volumes.get(volume_id) or {"status": "gone"})["status"],
                       lambda s: s in wanted, what=f"volume {volume_id} {' or '.join(wanted)}")


def guest_disks(h, host: str, server_id: str) -> dict[str, dict[str, dict[str, str]]]:
    """libvirt's view of the guest's disks, live and persistent: target → {serial, source}."""
    dom = h.roles["compute"].hosts[host].hypervisor.conn.lookupByName(domain_name(server_id))
    out = {}
    for view, flags in (("live", 0), ("persistent", libvirt.VIR_DOMAIN_XML_INACTIVE)):
        disks = {}
        for disk in ET.fromstring(dom.XMLDesc(flags)).iterfind("devices/disk"):
            source = disk.find("source")
            disks[disk.find("target").get("dev")] = {
                "serial": disk.findtext("serial") or "",
                "source": (source.get("file") or source.get("dev")) if source is not None else ""}
        out[view] = disks
    return out


async def action_events(h, server_id: str, action: str) -> dict[str, str]:
    actions = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions", headers={**h.alice, **MV}),
                       200)
    (found,) = [a for a in actions["instanceActions"] if a["action"] == action]
    shown = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions/{found['request_id']}",
                                      headers={**h.admin, **MV}), 200)
    return {e["event"]: e["result"] for e in shown["instanceAction"]["events"]}


async def test_attach_list_show_detach(cloud):
    h = cloud
    server_id, host = await boot(h)
    volume_id = h.volumes.add("proj-a", size=1)

    created = await ok(await attach(h, server_id, volume_id, tag="data"), 200)
    assert created == {"volumeAttachment": {"device": "/dev/vdb", "id": volume_id, "serverId": server_id,
                                            "volumeId": volume_id, "tag": "data",
                                            "delete_on_termination": False}}
    await volume_status(h, volume_id, "in-use")
    path = h.volumes.volumes[volume_id]["path"]
    disks = guest_disks(h, host, server_id)
    for view in ("live", "persistent"):
        assert disks[view]["vdb"] == {"serial": volume_id, "source": path}, view
        assert "vda" in disks[view]
    assert await action_events(h, server_id, "attach_volume") == {"compute_attach_volume": "Success"}

    # 2.89: the attachment's and the mapping's ids instead of `id`
    listed = await ok(await h.http.get(attachments_url(server_id), headers={**h.alice, **MV}), 200)
    (one,) = listed["volumeAttachments"]
    bdm = await h.cell1.fetchrow("SELECT * FROM block_device_mappings WHERE volume_id = $1", volume_id)
    assert one == {"device": "/dev/vdb", "serverId": server_id, "volumeId": volume_id, "tag": "data",
                   "delete_on_termination": False, "attachment_id": str(bdm["attachment_id"]),
                   "bdm_uuid": str(bdm["id"])}
    assert str(bdm["attachment_id"]) in h.volumes.attachments
    old = await ok(await h.http.get(attachments_url(server_id, volume_id), headers={**h.alice, **V1}), 200)
    assert old == {"volumeAttachment": {"device": "/dev/vdb", "id": volume_id, "serverId": server_id,
                                        "volumeId": volume_id}}

    shown = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **MV}), 200))["server"]
    assert shown["os-extended-volumes:volumes_attached"] == [{"id": volume_id, "delete_on_termination": False}]
    shown = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **V1}), 200))["server"]
    assert shown["os-extended-volumes:volumes_attached"] == [{"id": volume_id}]
    renamed = await ok(await h.http.put(f"{V}/servers/{server_id}", headers={**h.alice, **MV},
                                        json={"server": {"name": "renamed"}}), 200)
    assert renamed["server"]["os-extended-volumes:volumes_attached"] == [
        {"id": volume_id, "delete_on_termination": False}]
    other_id, _ = await boot(h, "vm2")
    detail = await ok(await h.http.get(f"{V}/servers/detail", headers={**h.alice, **MV}), 200)
    assert {s["id"]: s["os-extended-volumes:volumes_attached"] for s in detail["servers"]} == {
        server_id: [{"id": volume_id, "delete_on_termination": False}], other_id: []}

    # a second volume goes to the next free device
    second = h.volumes.add("proj-a")
    assert (await ok(await attach(h, server_id, second), 200))["volumeAttachment"]["device"] == "/dev/vdc"
    await volume_status(h, second, "in-use")

    resp = await h.http.delete(attachments_url(server_id, volume_id), headers={**h.alice, **MV})
    assert resp.status == 202, await resp.text()
    await volume_status(h, volume_id, "available")
    disks = guest_disks(h, host, server_id)
    for view in ("live", "persistent"):
        assert "vdb" not in disks[view] and disks[view]["vdc"]["serial"] == second, view
    assert h.volumes.attachments.keys().isdisjoint({str(bdm["attachment_id"])})
    assert await action_events(h, server_id, "detach_volume") == {"compute_detach_volume": "Success"}
    listed = await ok(await h.http.get(attachments_url(server_id), headers={**h.alice, **MV}), 200)
    assert [a["volumeId"] for a in listed["volumeAttachments"]] == [second]

    # the same bytes, in another server
    assert (await ok(await attach(h, other_id, volume_id), 200))["volumeAttachment"]["device"] == "/dev/vdb"
    await volume_status(h, volume_id, "in-use")


async def test_attach_to_a_stopped_server_changes_its_definition(cloud):
    h = cloud
    server_id, host = await boot(h)
    resp = await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, json={"os-stop": None})
    assert resp.status == 202
    await wait_status(h, server_id, "SHUTOFF")
    volume_id = h.volumes.add("proj-a")
    await ok(await attach(h, server_id, volume_id), 200)
    await volume_status(h, volume_id, "in-use")
    assert guest_disks(h, host, server_id)["persistent"]["vdb"]["serial"] == volume_id
    state = await h.roles["compute"].hosts[host].hypervisor.guest_state(domain_name(server_id))
    assert state.state == libvirt.VIR_DOMAIN_SHUTOFF
    resp = await h.http.delete(attachments_url(server_id, volume_id), headers=h.alice)
    assert resp.status == 202
    await volume_status(h, volume_id, "available")
    assert "vdb" not in guest_disks(h, host, server_id)["persistent"]


async def fault(resp, status: int, name: str) -> str:
    assert resp.status == status, await resp.text()
    body = await resp.json()
    assert list(body) == [name] and body[name]["code"] == status, body
    return body[name]["message"]


async def test_what_cannot_be_attached_or_detached(cloud):
    h = cloud
    server_id, _ = await boot(h)
    volume_id = h.volumes.add("proj-a")
    bobs = h.volumes.add("proj-b")
    url = attachments_url(server_id)

    # bad input: Nova's 400, in its fault format
    for body, headers in [
        ({}, MV), ({"volumeAttachment": {}}, MV), ({"volumeAttachment": {"volumeId": "not-a-uuid"}}, MV),
        ({"volumeAttachment": {"volumeId": volume_id, "bogus": 1}}, MV),
        ({"volumeAttachment": {"volumeId": volume_id, "tag": "t"}}, V1),       # tag from 2.49
        ({"volumeAttachment": {"volumeId": volume_id, "tag": "a/b"}}, MV),
        ({"volumeAttachment": {"volumeId": volume_id, "delete_on_termination": True}}, V1),
        ({"volumeAttachment": {"volumeId": volume_id, "delete_on_termination": "yes"}}, MV),
        ({"volumeAttachment": {"volumeId": volume_id, "device": "vdb"}}, MV),
        ({"volumeAttachment": {"volumeId": 7}}, MV), ([], MV),
    ]:
        await fault(await h.http.post(url, headers={**h.alice, **headers}, json=body), 400, "badRequest")
    await fault(await h.http.post(url, headers={**h.alice, **MV}, data=b"{nope"), 400, "badRequest")
    assert h.volumes.volumes[volume_id]["status"] == "available"

    # not found: the volume, another project's volume, the server, another project's server
    await fault(await attach(h, server_id, str(uuidlib.uuid4())), 404, "itemNotFound")
    await fault(await attach(h, server_id, bobs), 404, "itemNotFound")
    await fault(await attach(h, str(uuidlib.uuid4()), volume_id), 404, "itemNotFound")
    await fault(await h.http.post(url, headers={**h.bob, **MV}, json={"volumeAttachment": {"volumeId": bobs}}),
                404, "itemNotFound")
    await fault(await h.http.get(attachments_url(server_id, volume_id), headers=h.alice), 404, "itemNotFound")
    await fault(await h.http.get(attachments_url(server_id, "nope"), headers=h.alice), 404, "itemNotFound")
    await fault(await h.http.delete(attachments_url(server_id, volume_id), headers=h.alice), 404, "itemNotFound")
    await fault(await h.http.get(url, headers=h.bob), 404, "itemNotFound")

    # a requested device in use is a conflict; the volume is not left reserved
    await fault(await attach(h, server_id, volume_id, device="/dev/vda"), 409, "conflictingRequest")
    assert h.volumes.volumes[volume_id]["status"] == "available" and not h.volumes.attachments

    await ok(await attach(h, server_id, volume_id, device="/dev/vdd"), 200)
    await volume_status(h, volume_id, "in-use")
    # already attached here (Nova: 400), or in use by another server (400)
    await fault(await attach(h, server_id, volume_id), 400, "badRequest")
    other_id, _ = await boot(h, "vm2")
    await fault(await attach(h, other_id, volume_id), 400, "badRequest")
    listed = await ok(await h.http.get(url, headers={**h.alice, **MV}), 200)
    assert [a["device"] for a in listed["volumeAttachments"]] == ["/dev/vdd"]

    # a server whose state forbids it, or locked
    spare = h.volumes.add("proj-a")
    resp = await h.http.post(f"{V}/servers/{other_id}/action", headers=h.alice, json={"suspend": None})
    assert resp.status == 202
    await wait_status(h, other_id, "SUSPENDED")
    await fault(await attach(h, other_id, spare), 409, "conflictingRequest")
    resp = await h.http.post(f"{V}/servers/{server_id}/action", headers=h.admin, json={"lock": None})
    assert resp.status == 202
    await fault(await attach(h, server_id, spare), 409, "conflictingRequest")
    await fault(await h.http.delete(attachments_url(server_id, volume_id), headers=h.alice), 409,
                "conflictingRequest")
    assert h.volumes.volumes[spare]["status"] == "available"
    assert h.volumes.volumes[volume_id]["status"] == "in-use"


async def test_the_root_volume_is_not_detached(cloud):
    h = cloud
    server_id, _ = await boot(h)
    root = h.volumes.add("proj-a")
    # as a boot from volume leaves it (block_device_mapping_v2, boot_index 0)
    await h.cell1.execute(
        "INSERT INTO block_device_mappings (id, instance_uuid, source_type, destination_type, boot_index,"
        " device_name, volume_id, attachment_id) VALUES ($1, $2, 'volume', 'volume', 0, '/dev/vda', $3, $4)",
        str(uuidlib.uuid4()), server_id, root, str(uuidlib.uuid4()))
    message = await fault(await h.http.delete(attachments_url(server_id, root), headers=h.alice), 400,
                          "badRequest")
    assert message == "Cannot detach a root device volume"
    shown = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **MV}), 200))["server"]
    assert shown["os-extended-volumes:volumes_attached"] == [{"id": root, "delete_on_termination": False}]
    # the next volume goes after it and the local disks
    second = h.volumes.add("proj-a")
    assert (await ok(await attach(h, server_id, second), 200))["volumeAttachment"]["device"] == "/dev/vdb"


async def test_update_changes_delete_on_termination_only(cloud):
    h = cloud
    server_id, _ = await boot(h)
    volume_id = h.volumes.add("proj-a")
    await ok(await attach(h, server_id, volume_id), 200)
    await volume_status(h, volume_id, "in-use")
    url = attachments_url(server_id, volume_id)
    V85 = {"OpenStack-API-Version": "compute 2.85"}

    def put(body, headers=V85, who=None):
        return h.http.put(url, headers={**(who or h.alice), **headers}, json={"volumeAttachment": body})

    resp = await put({"volumeId": volume_id, "delete_on_termination": True, "device": "/dev/vdb"})
    assert resp.status == 202, await resp.text()
    shown = await ok(await h.http.get(url, headers={**h.alice, **MV}), 200)
    assert shown["volumeAttachment"]["delete_on_termination"] is True
    await fault(await put({"volumeId": volume_id, "device": "/dev/vdc"}), 400, "badRequest")
    await fault(await put({"volumeId": volume_id, "delete_on_termination": False}, headers=V79), 400,
                "badRequest")
    other = h.volumes.add("proj-a")
    await fault(await put({"volumeId": other}), 403, "forbidden")                 # a swap: admins only
    await fault(await put({"volumeId": other}, who=h.admin), 409, "conflictingRequest")  # and not done here
    await fault(await h.http.put(attachments_url(server_id, other), headers={**h.alice, **V85},
                                 json={"volumeAttachment": {"volumeId": other}}), 404, "itemNotFound")


async def test_a_failed_attach_gives_the_volume_back(cloud):
    h = cloud
    server_id, host = await boot(h)
    volume_id = h.volumes.add("proj-a")
    h.volumes.refuse_connect.add(volume_id)
    await ok(await attach(h, server_id, volume_id), 200)
    await until(lambda: not h.volumes.attachments, what="the attachment deleted")
    assert h.volumes.volumes[volume_id]["status"] == "available"
    events = await until(lambda: action_events(h, server_id, "attach_volume"),
                         lambda e: e.get("compute_attach_volume") == "Error")
    assert events == {"compute_attach_volume": "Error"}
    server = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **MV}), 200))["server"]
    assert server["status"] == "ACTIVE" and server["os-extended-volumes:volumes_attached"] == []
    assert "vdb" not in guest_disks(h, host, server_id)["live"]
    assert await h.cell1.fetchval("SELECT count(*) FROM block_device_mappings") == 0


async def test_deleting_a_server_frees_its_volumes(cloud):
    h = cloud
    server_id, _ = await boot(h)
    kept, dropped = h.volumes.add("proj-a"), h.volumes.add("proj-a")
    await ok(await attach(h, server_id, kept, headers=V79), 200)
    created = await ok(await attach(h, server_id, dropped, headers=V79, delete_on_termination=True), 200)
    assert created["volumeAttachment"]["delete_on_termination"] is True
    await volume_status(h, kept, "in-use")
    await volume_status(h, dropped, "in-use")
    shown = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **MV}), 200))["server"]
    assert sorted((v["id"], v["delete_on_termination"]) for v in shown["os-extended-volumes:volumes_attached"]) \
        == sorted([(kept, False), (dropped, True)])

    resp = await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)
    assert resp.status == 204
    await wait_status(h, server_id, "GONE")
    assert h.volumes.volumes[kept]["status"] == "available"
    assert dropped not in h.volumes.volumes
    assert not h.volumes.attachments
    assert await h.cell1.fetchval("SELECT count(*) FROM block_device_mappings") == 0


# -- start-up recovery: one host on the shared test:///default, the volume stand-in's state
# kept across the restart.

HOST = "volume-recovery-host"
COMPUTE_ROLES = ["image", "network", "placement", "volume", "compute"]


async def test_restart_finishes_or_undoes_cut_off_attaches_and_detaches(pool, tmp_path, cell1, fake_roles,
                                                                        fake_volume):
    # (the attachment's status, the volume's, whether the guest has the disk) as a crash left them
    cases = {"attaching-with-disk": ("attaching", "attaching", True),
             "attaching-without-disk": ("attaching", "attaching", False),
             "reserved": ("reserved", "reserved", False),
             "detaching-gone": ("attached", "detaching", False),
             "detaching-still-there": ("attached", "detaching", True),
             # cut off between the persistent half and the live one
             "detaching-half-done": ("detaching", "detaching", True)}
    conn = libvirt.open("test:///default")
    async with running(pool, COMPUTE_ROLES, tmp_path, compute={"host": HOST}) as h:
        volume_ids = {case: h.roles["volume"].add("proj") for case in cases}  # the host registers meanwhile
    node = str(await pool.fetchval("SELECT uuid FROM compute_nodes WHERE host = $1", HOST))
    uuid, _ = await add_instance(cell1, host=HOST, vm_state="active", task_state=None,
                                 flavor={**FLAVOR, "ephemeral_gb": 0, "swap": 0})
    state_file = tmp_path / "fake-volumes" / "state.json"
    saved = json.loads(state_file.read_text())
    disks, attachment_ids = [], {}
    for n, (case, (status, volume_status_, has_disk)) in enumerate(cases.items()):
        volume_id, attachment_id, device = volume_ids[case], str(uuidlib.uuid4()), f"/dev/vd{'bcdefg'[n]}"
        path = saved["volumes"][volume_id]["path"]
        info = {"driver_volume_type": "file", "serial": volume_id,
                "data": {"device_path": path, "disk_kind": "file", "format": "raw", "volume_id": volume_id,
                         "access_mode": "rw"}}
        connected = status != "reserved"
        saved["volumes"][volume_id]["status"] = volume_status_
        saved["attachments"][attachment_id] = {"volume_id": volume_id, "instance_uuid": uuid, "status": status,
                                               "connection": info if connected else {}}
        await cell1.execute(
            "INSERT INTO block_device_mappings (id, instance_uuid, source_type, destination_type, device_name,"
            " volume_id, attachment_id, connection_info) VALUES ($1, $2, 'volume', 'volume', $3, $4, $5, $6)",
            str(uuidlib.uuid4()), uuid, device, volume_id, attachment_id, info if connected else None)
        if has_disk:
            disks.append(Disk(path=path, target=device[5:], format="raw", serial=volume_id))
        attachment_ids[case] = attachment_id
    state_file.write_text(json.dumps(saved))
    spec = DomainSpec(instance_uuid=uuid, display_name="vm", memory_mb=64, vcpus=1, domain_type="test", node=node,
                      disks=tuple(disks))
    dom = conn.defineXML(domain_xml(spec))
    dom.create()
    half = volume_ids["detaching-half-done"]
    conn.defineXML(domain_xml(dataclasses.replace(spec, disks=tuple(d for d in disks if d.serial != half))))
    try:
        async with running(pool, COMPUTE_ROLES, tmp_path, compute={"host": HOST}) as h:
            fake = h.roles["volume"]
            outcome = {case: (fake.volumes[volume_ids[case]]["status"], attachment_ids[case] in fake.attachments)
                       for case in cases}
            mapped = {str(r["volume_id"]) for r in await cell1.fetch(
                "SELECT volume_id FROM block_device_mappings WHERE instance_uuid = $1", uuid)}
            persistent = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
            serials = {d.findtext("serial") for d in persistent.iterfind("devices/disk")}
        assert outcome == {"attaching-with-disk": ("in-use", True), "attaching-without-disk": ("available", False),
                           "reserved": ("available", False), "detaching-gone": ("available", False),
                           "detaching-still-there": ("in-use", True), "detaching-half-done": ("in-use", True)}
        assert mapped == {volume_ids["attaching-with-disk"], volume_ids["detaching-still-there"], half}
        assert half in serials  # the guest still has it: so does its definition again
    finally:
        if dom.isActive():
            dom.destroy()
        dom.undefine()
