"""Shelve, shelveOffload and unshelve; rescue and unrescue: the states a user sees, what the
server holds in each (its image, its host, its claim in placement), the microversioned
unshelve body, the 409s for wrong states, and a restart in the middle finished."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from nova_async.compute.domain_xml import domain_name
from tests.harness import running
from tests.integration import test_server_lifecycle
from tests.integration.test_create_image import image_of
from tests.integration.test_resize import SIM1, action, allocations, boot
from tests.integration.test_server_lifecycle import ROLES, V, ok, seed, settled, sim_cloud, wait_status
from tests.waiting import until

cloud = test_server_lifecycle.cloud


async def shelved_images(h, name: str = "vm1-shelved") -> list[dict]:
    return (await ok(await h.http.get(f"/image/v2/images?name={name}", headers=h.alice), 200))["images"]


async def shelved_image_gone(h) -> None:
    """The shelved image is deleted just after the server is ACTIVE again, not before: the
    unshelve keeps it until the guest stands on its own disk (compute/shelve.unshelve)."""
    await until(lambda: shelved_images(h), lambda images: images == [], what="the shelved image deleted")


async def action_names(h, sid: str) -> list[tuple[str, str | None]]:
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    return [(a["action"], a["message"]) for a in actions]


async def post(h, sid: str, body: dict, status: int, headers=None, version: str = "2.96"):
    resp = await h.http.post(f"{V}/servers/{sid}/action", json=body,
                             headers={**(headers or h.alice), "OpenStack-API-Version": f"compute {version}"})
    assert resp.status == status, await resp.text()
    return await resp.json() if resp.content_type == "application/json" else None


async def test_shelve_offloads_then_unshelve_schedules_and_claims_again(cloud):
    h = cloud
    sid = await boot(h)
    held = await allocations(h, sid)
    await action(h, sid, {"shelve": None}, 202)
    server = await wait_status(h, sid, "SHELVED_OFFLOADED", "ERROR", headers=h.admin)
    assert server["status"] == "SHELVED_OFFLOADED" and server["OS-EXT-STS:task_state"] is None
    assert server["OS-EXT-SRV-ATTR:host"] is None and server["OS-EXT-SRV-ATTR:hypervisor_hostname"] is None
    [image] = await shelved_images(h)
    assert image["status"] == "active" and image["instance_uuid"] == sid and image["image_type"] == "snapshot"
    assert await allocations(h, sid) == {}          # its room is free for others
    assert not (h.deps.state_dir / "instances" / sid).exists()
    for host in h.roles["compute"].hosts.values():
        assert await host.hypervisor.is_running(domain_name(sid)) is None
    assert server["image"]["id"] == h.image       # still shows the image it was booted from
    assert server["OS-EXT-AZ:availability_zone"] == "nova" and server["hostId"] == ""

    await action(h, sid, {"unshelve": None}, 202)
    server = await wait_status(h, sid, "ACTIVE", "ERROR", headers=h.admin)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] and server["image"]["id"] == h.image
    assert list((await allocations(h, sid)).values()) == list(held.values())
    await image_of(h, image["id"], "GONE")          # the shelved image is deleted
    hypervisor = h.roles["compute"].hosts[server["OS-EXT-SRV-ATTR:host"]].hypervisor
    assert await hypervisor.is_running(domain_name(sid)) is True
    assert (await action_names(h, sid))[:2] == [("unshelve", None), ("shelve", None)]


async def test_shelved_server_stays_on_its_host_until_offloaded(pool, tmp_path):
    """compute.shelved_offload_time -1: SHELVED keeps its host and claim; shelveOffload (or an
    unshelve, which starts it where it is) follows."""
    async with sim_cloud(pool, tmp_path, compute={**SIM1, "shelved_offload_time": -1}) as h:
        sid = await boot(h)
        held = await allocations(h, sid)
        await action(h, sid, {"pause": None}, 202)
        await wait_status(h, sid, "PAUSED")
        await action(h, sid, {"shelve": {}}, 202)
        server = await wait_status(h, sid, "SHELVED", "ERROR", headers=h.admin)
        assert server["status"] == "SHELVED" and server["OS-EXT-SRV-ATTR:host"] == "sim-1"
        assert server["OS-EXT-STS:power_state"] == 4 and await allocations(h, sid) == held
        await post(h, sid, {"unshelve": {"availability_zone": "nova"}}, 409, version="2.77")  # not offloaded
        await action(h, sid, {"unshelve": None}, 202)
        server = await wait_status(h, sid, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE" and server["OS-EXT-STS:power_state"] == 1
        await shelved_image_gone(h)

        await action(h, sid, {"shelve": None}, 202)
        await wait_status(h, sid, "SHELVED")
        await action(h, sid, {"shelveOffload": None}, 202)
        server = await wait_status(h, sid, "SHELVED_OFFLOADED", headers=h.admin)
        assert server["OS-EXT-SRV-ATTR:host"] is None and await allocations(h, sid) == {}
        assert (await action_names(h, sid))[0] == ("shelveOffload", None)


async def test_a_shelved_server_is_offloaded_after_shelved_offload_time(pool, tmp_path):
    async with sim_cloud(pool, tmp_path, compute={**SIM1, "shelved_offload_time": 1}) as h:
        sid = await boot(h)
        await action(h, sid, {"shelve": None}, 202)
        server = await wait_status(h, sid, "SHELVED_OFFLOADED", "ERROR", headers=h.admin)
        assert server["OS-EXT-SRV-ATTR:host"] is None and await allocations(h, sid) == {}
        assert [a for a, _ in await action_names(h, sid)][:2] == ["shelveOffload", "shelve"]


async def test_unshelve_body_by_microversion(cloud):
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"shelve": None}, 202)
    await wait_status(h, sid, "SHELVED_OFFLOADED")
    await post(h, sid, {"unshelve": {}}, 400, version="2.77")                     # the zone is required
    await post(h, sid, {"unshelve": {"host": "sim-2"}}, 400, version="2.90")     # no host before 2.91
    await post(h, sid, {"unshelve": {"availability_zone": "nowhere"}}, 400, version="2.77")
    await post(h, sid, {"unshelve": {"host": "sim-2"}}, 403, version="2.91")     # admins only
    await post(h, sid, {"unshelve": {"host": "no-such-host"}}, 400, headers=h.admin, version="2.91")
    await post(h, sid, {"unshelve": {"bogus": 1}}, 400, version="2.91")
    for host in ("sim-2", "sim-1"):
        await post(h, sid, {"unshelve": {"host": host, "availability_zone": None}}, 202, headers=h.admin,
                   version="2.91")
        server = await wait_status(h, sid, "ACTIVE", "ERROR", headers=h.admin)
        assert server["OS-EXT-SRV-ATTR:host"] == host, server.get("fault")
        if host == "sim-2":
            await action(h, sid, {"shelve": None}, 202)
            await wait_status(h, sid, "SHELVED_OFFLOADED")


async def test_unshelve_with_no_host_to_take_it_stays_offloaded(cloud):
    """No host takes it (both disabled): still SHELVED_OFFLOADED, no task, no claim, and the
    action says Error; once a host is back, the unshelve works."""
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"shelve": None}, 202)
    await wait_status(h, sid, "SHELVED_OFFLOADED")
    new = {"OpenStack-API-Version": "compute 2.53"}   # service ids are uuids from 2.53
    services = (await ok(await h.http.get(f"{V}/os-services?binary=nova-compute", headers={**h.admin, **new}),
                         200))["services"]
    for service in services:
        await ok(await h.http.put(f"{V}/os-services/{service['id']}", headers={**h.admin, **new},
                                  json={"status": "disabled"}), 200)
    await action(h, sid, {"unshelve": None}, 202)
    server = await settled(h, sid, h.admin)
    assert server["status"] == "SHELVED_OFFLOADED" and server["OS-EXT-SRV-ATTR:host"] is None
    assert await allocations(h, sid) == {} and (await action_names(h, sid))[0] == ("unshelve", "Error")
    await ok(await h.http.put(f"{V}/os-services/{services[0]['id']}", headers={**h.admin, **new},
                              json={"status": "enabled"}), 200)
    await action(h, sid, {"unshelve": None}, 202)
    assert (await wait_status(h, sid, "ACTIVE", "ERROR"))["status"] == "ACTIVE"


async def test_wrong_states_are_409(cloud):
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"unshelve": None}, 409)
    await action(h, sid, {"shelveOffload": None}, 409)
    await action(h, sid, {"unrescue": None}, 409)
    await action(h, "00000000-0000-0000-0000-000000000000", {"shelve": None}, 404)
    await action(h, sid, {"shelve": None}, 404, headers=h.bob)
    await action(h, sid, {"lock": None}, 202)
    await action(h, sid, {"shelve": None}, 409)
    await action(h, sid, {"rescue": None}, 409)
    await action(h, sid, {"unlock": None}, 202)
    await action(h, sid, {"pause": None}, 202)
    await wait_status(h, sid, "PAUSED")
    await action(h, sid, {"rescue": None}, 409)
    await action(h, sid, {"unpause": None}, 202)
    await wait_status(h, sid, "ACTIVE")
    await action(h, sid, {"shelve": None}, 202)
    await wait_status(h, sid, "SHELVED_OFFLOADED")
    await action(h, sid, {"shelve": None}, 409)
    await action(h, sid, {"rescue": None}, 409)
    await action(h, sid, {"reboot": {"type": "HARD"}}, 409)


async def test_rescue_and_unrescue(cloud):
    h = cloud
    sid = await boot(h, stopped=True)
    answer = await post(h, sid, {"rescue": {"adminPass": "s3cret"}}, 200)
    assert answer == {"adminPass": "s3cret"}
    server = await wait_status(h, sid, "RESCUE", "ERROR", headers=h.admin)
    assert server["status"] == "RESCUE" and server["OS-EXT-STS:power_state"] == 1
    hypervisor = h.roles["compute"].hosts[server["OS-EXT-SRV-ATTR:host"]].hypervisor
    xml = await hypervisor.xml_of(domain_name(sid))
    rescue_at, own_at = xml.index("disk.rescue"), xml.index(f"{sid}/disk'")
    assert rescue_at < own_at and await hypervisor.is_running(domain_name(sid))
    await action(h, sid, {"reboot": {"type": "HARD"}}, 409)
    await action(h, sid, {"rebuild": {"imageRef": h.image}}, 409)
    await action(h, sid, {"rescue": None}, 409)
    await action(h, sid, {"unrescue": None}, 202)
    server = await wait_status(h, sid, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE"
    assert "disk.rescue" not in await hypervisor.xml_of(domain_name(sid))
    assert not (h.deps.state_dir / "instances" / sid / "disk.rescue").exists()
    assert (await action_names(h, sid))[:2] == [("unrescue", None), ("rescue", None)]

    generated = await post(h, sid, {"rescue": {"rescue_image_ref": h.image}}, 200)
    assert len(generated["adminPass"]) >= 8
    await wait_status(h, sid, "RESCUE")
    await action(h, sid, {"unrescue": {}}, 202)
    await wait_status(h, sid, "ACTIVE")
    await post(h, sid, {"rescue": {"rescue_image_ref": "9d0d6d5b-0000-4000-8000-000000000000"}}, 400)
    await post(h, sid, {"rescue": {"bogus": 1}}, 400)


@pytest.mark.parametrize("device,bus,target", [("disk", "scsi", "sda"), ("cdrom", "ide", "hda")])
async def test_stable_device_rescue_keeps_every_disk_in_place(cloud, device, bus, target):
    """A rescue image with hw_rescue_device and hw_rescue_bus: the server's own disks stay
    where they are and the rescue disk is added on that bus, booted first."""
    h = cloud
    sid = await boot(h)
    rescue_image = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "rescuer", "disk_format": "raw", "container_format": "bare",
        "hw_rescue_device": device, "hw_rescue_bus": bus}), 201)
    await ok(await h.http.put(f"/image/v2/images/{rescue_image['id']}/file", data=b"\0" * 65536,
                              headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    await post(h, sid, {"rescue": {"rescue_image_ref": rescue_image["id"]}}, 200, version="2.87")
    server = await wait_status(h, sid, "RESCUE", "ERROR", headers=h.admin)
    assert server["status"] == "RESCUE", server.get("fault")
    hypervisor = h.roles["compute"].hosts[server["OS-EXT-SRV-ATTR:host"]].hypervisor
    root = ET.fromstring(await hypervisor.xml_of(domain_name(sid)))
    shown = {d.find("target").get("dev"): (d.find("target").get("bus"), d.get("device"),
                                          d.find("source").get("file"), d.find("boot"))
             for d in root.findall("devices/disk")}
    assert shown["vda"][2].endswith(f"{sid}/disk") and shown["vda"][3] is None
    assert shown[target][:2] == (bus, device) and shown[target][3].get("order") == "1"
    await action(h, sid, {"unrescue": None}, 202)
    await wait_status(h, sid, "ACTIVE")
    root = ET.fromstring(await hypervisor.xml_of(domain_name(sid)))
    assert [d.find("target").get("dev") for d in root.findall("devices/disk")] == ["vda"]


async def test_delete_of_an_offloaded_server_lets_go_of_its_ports_and_image(cloud):
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"shelve": None}, 202)
    await wait_status(h, sid, "SHELVED_OFFLOADED")
    [image] = await shelved_images(h)
    ports = (await ok(await h.http.get(f"/network/v2.0/ports?device_id={sid}", headers=h.alice), 200))["ports"]
    assert len(ports) == 1      # kept while shelved: an unshelve binds them again
    resp = await h.http.delete(f"{V}/servers/{sid}", headers=h.alice)
    assert resp.status == 204
    await wait_status(h, sid, "GONE")
    await image_of(h, image["id"], "GONE")
    assert (await ok(await h.http.get(f"/network/v2.0/ports?device_id={sid}", headers=h.alice), 200))["ports"] == []


@pytest.mark.parametrize("interrupted", ["shelve", "unshelve-conductor", "unshelve-compute", "rescue"])
async def test_a_restart_in_the_middle_is_finished(pool, tmp_path, interrupted):
    """The work a request handed on went down with the process (the cast was lost): the next
    start finishes it, so the user gets what they asked for and nothing is held twice."""
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        await seed(h)
        sid = await boot(h)
        held = await allocations(h, sid)
        if interrupted.startswith("unshelve"):
            await action(h, sid, {"shelve": None}, 202)
            await wait_status(h, sid, "SHELVED_OFFLOADED")
    without = "conductor" if interrupted == "unshelve-conductor" else "compute"
    async with running(pool, [r for r in ROLES if r != without], tmp_path, compute=SIM1) as h:
        name = interrupted.split("-")[0]
        await action(h, sid, {name: None}, 200 if name == "rescue" else 202)
        if interrupted == "unshelve-compute":
            await until_placed(h, sid)
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        server = await settled(h, sid, h.admin)
        wanted = {"shelve": "SHELVED_OFFLOADED", "rescue": "RESCUE"}.get(interrupted, "ACTIVE")
        assert server["status"] == wanted, server.get("fault")
        if wanted == "ACTIVE":
            assert list((await allocations(h, sid)).values()) == list(held.values())
            await shelved_image_gone(h)
        if wanted == "SHELVED_OFFLOADED":
            assert await allocations(h, sid) == {} and len(await shelved_images(h)) == 1
        assert (await action_names(h, sid))[0][1] is None


async def test_a_shelved_image_a_restart_kept_is_deleted_at_the_next_start(pool, tmp_path):
    """Unshelved, but the process went down before its shelved image was deleted (the row
    still names it): the next start deletes it."""
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        await seed(h)
        sid = await boot(h)
        await action(h, sid, {"shelve": None}, 202)
        await wait_status(h, sid, "SHELVED_OFFLOADED")
        [image] = await shelved_images(h)
        await action(h, sid, {"unshelve": None}, 202)
        await wait_status(h, sid, "ACTIVE")
        # As if the delete had not happened: the image back, the row naming it.
        left = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
            "name": "vm1-shelved", "disk_format": "qcow2", "container_format": "bare"}), 201)
        await h.cell1.execute("UPDATE instances SET shelved_image_id = $2 WHERE uuid = $1", sid, left["id"])
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        await image_of(h, left["id"], "GONE")
        assert await h.cell1.fetchval("SELECT shelved_image_id FROM instances WHERE uuid = $1", sid) is None
        assert image["id"] != left["id"]


async def until_placed(h, sid: str) -> None:
    await until(lambda: h.cell1.fetchval("SELECT host FROM instances WHERE uuid = $1", sid), lambda host: host,
                what="the unshelve's host chosen")

