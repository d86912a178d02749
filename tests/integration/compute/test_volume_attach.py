"""Volumes on existing servers, as a user drives them: `os-volume_attachments` attach, list,
show and detach through the whole cloud (two simulated test-driver hosts) and the real
volume role (file backend), the disk in the guest's live and persistent definitions,
`volumes_attached` in the server's views, Nova's answers to what cannot be done, a server
delete that frees (or deletes) its volumes, and a compute restart that finds attaches and
detaches cut off. What the volume service holds is read through its own API."""

from __future__ import annotations

import dataclasses
import uuid as uuidlib
import xml.etree.ElementTree as ET

import libvirt
import pytest

from nova_async.compute.domain_xml import Disk, DomainSpec, domain_name, domain_xml
from nova_async.volume.client import VolumeClient
from tests.harness import running
from tests.integration.compute.support import (FLAVOR, add_instance, bfv_body, boot_bfv, new_volume, volume,
                                               volume_attachments, volume_path, volume_status)
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, sim_cloud, wait_status
from tests.integration.test_server_lifecycle import ROLES as CLOUD_ROLES
from tests.waiting import until

V1 = {"OpenStack-API-Version": "compute 2.1"}
V79 = {"OpenStack-API-Version": "compute 2.79"}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, CLOUD_ROLES + ["volume"]) as h:
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


async def finished_events(h, server_id: str, action: str) -> dict[str, str]:
    """action_events once the action has events and every one has its result."""
    return await until(lambda: action_events(h, server_id, action), lambda e: e and None not in e.values(),
                       what=f"the {action} action's events finished")


async def test_attach_list_show_detach(cloud):
    h = cloud
    server_id, host = await boot(h)
    volume_id = await new_volume(h, name="data")

    created = await ok(await attach(h, server_id, volume_id, tag="data"), 200)
    assert created == {"volumeAttachment": {"device": "/dev/vdb", "id": volume_id, "serverId": server_id,
                                            "volumeId": volume_id, "tag": "data",
                                            "delete_on_termination": False}}
    await volume_status(h, volume_id, "in-use")
    path = volume_path(h, volume_id)
    disks = guest_disks(h, host, server_id)
    for view in ("live", "persistent"):
        assert disks[view]["vdb"] == {"serial": volume_id, "source": path}, view
        assert "vda" in disks[view]
    # The step ends just after the volume shows in-use (its completion is a step of it), as
    # in Nova: a client reading it at once may still see it running.
    assert await finished_events(h, server_id, "attach_volume") == {"compute_attach_volume": "Success"}

    # 2.89: the attachment's and the mapping's ids instead of `id`
    listed = await ok(await h.http.get(attachments_url(server_id), headers={**h.alice, **MV}), 200)
    (one,) = listed["volumeAttachments"]
    bdm = await h.cell1.fetchrow("SELECT * FROM block_device_mappings WHERE volume_id = $1", volume_id)
    assert one == {"device": "/dev/vdb", "serverId": server_id, "volumeId": volume_id, "tag": "data",
                   "delete_on_termination": False, "attachment_id": str(bdm["attachment_id"]),
                   "bdm_uuid": str(bdm["id"])}
    [held] = await volume_attachments(h, volume_id)
    assert (held["id"], held["instance"], held["status"]) == (str(bdm["attachment_id"]), server_id, "attached")
    assert held["connection_info"]["data"]["device_path"] == path
    shown = await volume(h, volume_id)
    assert [(a["server_id"], a["host_name"], a["attachment_id"]) for a in shown["attachments"]] == [
        (server_id, host, str(bdm["attachment_id"]))]
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
    second = await new_volume(h)
    assert (await ok(await attach(h, server_id, second), 200))["volumeAttachment"]["device"] == "/dev/vdc"
    await volume_status(h, second, "in-use")

    resp = await h.http.delete(attachments_url(server_id, volume_id), headers={**h.alice, **MV})
    assert resp.status == 202, await resp.text()
    await volume_status(h, volume_id, "available")
    disks = guest_disks(h, host, server_id)
    for view in ("live", "persistent"):
        assert "vdb" not in disks[view] and disks[view]["vdc"]["serial"] == second, view
    assert await volume_attachments(h, volume_id) == []
    assert (await volume(h, volume_id))["attachments"] == []
    assert await finished_events(h, server_id, "detach_volume") == {"compute_detach_volume": "Success"}
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
    volume_id = await new_volume(h)
    # From 2.101 the attach is accepted (202) with no body.
    resp = await attach(h, server_id, volume_id, headers={"OpenStack-API-Version": "compute 2.101"})
    assert resp.status == 202 and await resp.read() == b""
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
    volume_id = await new_volume(h)
    bobs = await new_volume(h, h.bob)
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
    assert (await volume(h, volume_id))["status"] == "available"

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
    assert (await volume(h, volume_id))["status"] == "available" and await volume_attachments(h) == []

    await ok(await attach(h, server_id, volume_id, device="/dev/vdd"), 200)
    await volume_status(h, volume_id, "in-use")
    # already attached here (Nova: 400), or in use by another server (400)
    await fault(await attach(h, server_id, volume_id), 400, "badRequest")
    other_id, _ = await boot(h, "vm2")
    await fault(await attach(h, other_id, volume_id), 400, "badRequest")
    listed = await ok(await h.http.get(url, headers={**h.alice, **MV}), 200)
    assert [a["device"] for a in listed["volumeAttachments"]] == ["/dev/vdd"]

    # a server whose state forbids it, or locked
    spare = await new_volume(h)
    resp = await h.http.post(f"{V}/servers/{other_id}/action", headers=h.alice, json={"suspend": None})
    assert resp.status == 202
    await wait_status(h, other_id, "SUSPENDED")
    await fault(await attach(h, other_id, spare), 409, "conflictingRequest")
    resp = await h.http.post(f"{V}/servers/{server_id}/action", headers=h.admin, json={"lock": None})
    assert resp.status == 202
    await fault(await attach(h, server_id, spare), 409, "conflictingRequest")
    await fault(await h.http.delete(attachments_url(server_id, volume_id), headers=h.alice), 409,
                "conflictingRequest")
    assert (await volume(h, spare))["status"] == "available"
    assert (await volume(h, volume_id))["status"] == "in-use"
    assert [a["volume_id"] for a in await volume_attachments(h)] == [volume_id]


async def test_the_root_volume_is_not_detached(cloud):
    h = cloud
    root = await new_volume(h, imageRef=h.image, name="root")
    server_id = await boot_bfv(h, bfv_body(h, [{"boot_index": 0, "uuid": root, "source_type": "volume",
                                                "destination_type": "volume"}]))
    await wait_status(h, server_id, "ACTIVE")
    message = await fault(await h.http.delete(attachments_url(server_id, root), headers=h.alice), 400,
                          "badRequest")
    assert message == "Cannot detach a root device volume"
    assert (await volume(h, root))["status"] == "in-use"
    shown = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **MV}), 200))["server"]
    assert shown["os-extended-volumes:volumes_attached"] == [{"id": root, "delete_on_termination": False}]
    # the next volume goes after it (vda)
    second = await new_volume(h)
    assert (await ok(await attach(h, server_id, second), 200))["volumeAttachment"]["device"] == "/dev/vdb"
    await volume_status(h, second, "in-use")


async def test_update_changes_delete_on_termination_only(cloud):
    h = cloud
    server_id, _ = await boot(h)
    volume_id = await new_volume(h)
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
    other = await new_volume(h)
    await fault(await put({"volumeId": other}), 403, "forbidden")                 # a swap: admins only
    await fault(await put({"volumeId": other}, who=h.admin), 409, "conflictingRequest")  # and not done here
    await fault(await h.http.put(attachments_url(server_id, other), headers={**h.alice, **V85},
                                 json={"volumeAttachment": {"volumeId": other}}), 404, "itemNotFound")


async def test_a_failed_attach_gives_the_volume_back(cloud, tmp_path):
    """The attach fails after the volume service connected the volume: the guest's definition
    already has a disk at vdb, the device the API chose (someone's `virsh attach-disk
    --config`), so libvirt refuses the volume's. The attachment goes and the volume is
    available again; the server is as it was."""
    h = cloud
    server_id, host = await boot(h)
    volume_id = await new_volume(h)
    theirs = tmp_path / "not-nova.raw"
    theirs.write_bytes(b"\0" * 4096)
    dom = h.roles["compute"].hosts[host].hypervisor.conn.lookupByName(domain_name(server_id))
    definition = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
    definition.find("devices").append(ET.fromstring(
        f"<disk type='file' device='disk'><source file='{theirs}'/><target dev='vdb' bus='virtio'/></disk>"))
    dom.connect().defineXML(ET.tostring(definition, encoding="unicode"))

    assert (await ok(await attach(h, server_id, volume_id), 200))["volumeAttachment"]["device"] == "/dev/vdb"
    events = await until(lambda: action_events(h, server_id, "attach_volume"),
                         lambda e: e.get("compute_attach_volume") == "Error")
    assert events == {"compute_attach_volume": "Error"}
    await volume_status(h, volume_id, "available")
    assert await volume_attachments(h, volume_id) == []
    server = (await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.alice, **MV}), 200))["server"]
    assert server["status"] == "ACTIVE" and server["os-extended-volumes:volumes_attached"] == []
    disks = guest_disks(h, host, server_id)
    assert "vdb" not in disks["live"]
    assert disks["persistent"]["vdb"] == {"serial": "", "source": str(theirs)}
    assert await h.cell1.fetchval("SELECT count(*) FROM block_device_mappings") == 0


async def test_deleting_a_server_frees_its_volumes(cloud):
    h = cloud
    server_id, _ = await boot(h)
    kept, dropped = await new_volume(h), await new_volume(h)
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
    assert (await volume(h, kept))["status"] == "available"
    await volume_status(h, dropped, "gone")
    assert await volume_attachments(h) == []
    assert await h.cell1.fetchval("SELECT count(*) FROM block_device_mappings") == 0


# -- start-up recovery: one host on the shared test:///default; the volume role (its state in
# the database, its files in the state directory) outlives the restart as it would.

HOST = "volume-recovery-host"
COMPUTE_ROLES = ["image", "network", "placement", "volume", "compute"]
PROJECT = {"X-Auth-Token": "user:proj"}   # add_instance's project


async def test_restart_finishes_or_undoes_cut_off_attaches_and_detaches(pool, tmp_path, cell1, fake_roles):
    # How far each attach or detach got before the crash, by the volume role's own steps
    # (reserve; connect: attaching; complete then begin_detach: detaching — the attachment
    # and the volume change together), and whether the guest has the disk.
    cases = {"attaching-with-disk": ("attaching", True),
             "attaching-without-disk": ("attaching", False),
             "reserved": ("reserved", False),
             "detaching-gone": ("detaching", False),
             "detaching-still-there": ("detaching", True),
             # cut off between the persistent half and the live one
             "detaching-half-done": ("detaching", True)}
    conn = libvirt.open("test:///default")
    async with running(pool, COMPUTE_ROLES, tmp_path, compute={"host": HOST}) as h:
        volume_ids = {case: await new_volume(h, PROJECT) for case in cases}  # the host registers meanwhile
        paths = {case: volume_path(h, v) for case, v in volume_ids.items()}
    node = str(await pool.fetchval("SELECT uuid FROM compute_nodes WHERE host = $1", HOST))
    uuid, _ = await add_instance(cell1, host=HOST, vm_state="active", task_state=None,
                                 flavor={**FLAVOR, "ephemeral_gb": 0, "swap": 0})
    disks, attachment_ids = [], {}
    async with running(pool, ["volume"], tmp_path) as h:
        client = VolumeClient(h.bus)
        for n, (case, (reached, has_disk)) in enumerate(cases.items()):
            volume_id, device = volume_ids[case], f"/dev/vd{'bcdefg'[n]}"
            attachment_id = (await client.reserve(volume_id, uuid, "proj", is_admin=True)).attachment_id
            info = None
            if reached != "reserved":
                info = (await client.connect(attachment_id, {"host": HOST}, device)).as_cinder()
            if reached == "detaching":
                await client.complete(attachment_id)
                await client.begin_detach(attachment_id)
            await cell1.execute(
                "INSERT INTO block_device_mappings (id, instance_uuid, source_type, destination_type, device_name,"
                " volume_id, attachment_id, connection_info) VALUES ($1, $2, 'volume', 'volume', $3, $4, $5, $6)",
                str(uuidlib.uuid4()), uuid, device, volume_id, attachment_id, info)
            if has_disk:
                disks.append(Disk(path=paths[case], target=device[5:], format="raw", serial=volume_id))
            attachment_ids[case] = attachment_id
        assert {case: (await volume(h, volume_ids[case]))["status"] for case in cases} == {
            case: reached for case, (reached, _) in cases.items()}
    spec = DomainSpec(instance_uuid=uuid, display_name="vm", memory_mb=64, vcpus=1, domain_type="test", node=node,
                      disks=tuple(disks))
    dom = conn.defineXML(domain_xml(spec))
    dom.create()
    half = volume_ids["detaching-half-done"]
    conn.defineXML(domain_xml(dataclasses.replace(spec, disks=tuple(d for d in disks if d.serial != half))))
    try:
        async with running(pool, COMPUTE_ROLES, tmp_path, compute={"host": HOST}) as h:
            outcome = {}
            for case in cases:
                held = {a["id"]: a["status"] for a in await volume_attachments(h, volume_ids[case])}
                outcome[case] = ((await volume(h, volume_ids[case]))["status"], held.get(attachment_ids[case]))
            mapped = {str(r["volume_id"]) for r in await cell1.fetch(
                "SELECT volume_id FROM block_device_mappings WHERE instance_uuid = $1", uuid)}
            persistent = ET.fromstring(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE))
            serials = {d.findtext("serial") for d in persistent.iterfind("devices/disk")}
        assert outcome == {"attaching-with-disk": ("in-use", "attached"),
                           "attaching-without-disk": ("available", None),
                           "reserved": ("available", None), "detaching-gone": ("available", None),
                           "detaching-still-there": ("in-use", "attached"),
                           "detaching-half-done": ("in-use", "attached")}
        assert mapped == {volume_ids["attaching-with-disk"], volume_ids["detaching-still-there"], half}
        assert half in serials  # the guest still has it: so does its definition again
    finally:
        if dom.isActive():
            dom.destroy()
        dom.undefine()


async def test_assisted_volume_snapshots_are_checked_and_acknowledged(cloud):
    # Only a volume service that needs the hypervisor's help calls this; the volume role here
    # never does, so an attached volume's request is acknowledged and nothing else changes.
    h = cloud
    server_id, _ = await boot(h)
    volume_id = await new_volume(h)
    await ok(await attach(h, server_id, volume_id), 200)
    await volume_status(h, volume_id, "in-use")
    snapshot_id = "0b1f0c57-4a39-4d5f-9a0e-2f7f5a1c9e11"
    body = {"snapshot": {"volume_id": volume_id, "create_info": {
        "snapshot_id": snapshot_id, "type": "qcow2", "new_file": "new_file"}}}
    made = await ok(await h.http.post(f"{V}/os-assisted-volume-snapshots", headers=h.admin, json=body), 200)
    assert made == {"snapshot": {"id": snapshot_id, "volumeId": volume_id}}
    await fault(await h.http.post(f"{V}/os-assisted-volume-snapshots", headers=h.alice, json=body), 403, "forbidden")
    other = await new_volume(h, name="loose")
    await fault(await h.http.post(f"{V}/os-assisted-volume-snapshots", headers=h.admin, json={"snapshot": {
        **body["snapshot"], "volume_id": other}}), 400, "badRequest")      # attached to nothing
    url = f"{V}/os-assisted-volume-snapshots/{snapshot_id}"
    resp = await h.http.delete(url, headers=h.admin, params={"delete_info": f'{{"volume_id": "{volume_id}"}}'})
    assert resp.status == 204
    await fault(await h.http.delete(url, headers=h.admin, params={"delete_info": f'{{"volume_id": "{other}"}}'}),
                404, "itemNotFound")
    await fault(await h.http.delete(url, headers=h.admin, params={"delete_info": "nope"}), 400, "badRequest")
    await volume_status(h, volume_id, "in-use")
