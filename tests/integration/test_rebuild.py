"""Rebuild: the same server (id, ports, host, claim) made anew from another image."""

from __future__ import annotations

import asyncio

import pytest

from nova_async.compute import disks
from tests.harness import running
from tests.integration import test_server_lifecycle
from tests.integration.test_resize import SIM1
from tests.integration.test_server_lifecycle import ROLES, V, boot_body, ok, seed, settled, wait_status

cloud = test_server_lifecycle.cloud


async def image(h, name: str) -> str:
    created = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": name, "disk_format": "raw", "container_format": "bare"}), 201)
    await ok(await h.http.put(f"/image/v2/images/{created['id']}/file", data=b"\1" * 4096,
                              headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    return created["id"]


@pytest.mark.parametrize("stopped", [False, True], ids=["active", "stopped"])
async def test_rebuild_keeps_the_server_and_changes_its_image(cloud, stopped):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    before = await wait_status(h, sid, "ACTIVE")
    if stopped:
        await ok(await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"os-stop": None}), 202)
        await wait_status(h, sid, "SHUTOFF")
    new = await image(h, "second")
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"rebuild": {
        "imageRef": new, "name": "reborn", "metadata": {"gen": "2"}}})
    assert resp.status == 202, await resp.text()
    body = (await resp.json())["server"]
    assert body["status"] == "REBUILD" and body["adminPass"]
    after = await settled(h, sid)
    assert after["status"] == ("SHUTOFF" if stopped else "ACTIVE"), after.get("fault")
    assert (after["image"]["id"], after["name"], after["metadata"]) == (new, "reborn", {"gen": "2"})
    assert after["addresses"] == before["addresses"]
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert actions[0]["action"] == "rebuild"


async def test_rebuild_refusals(cloud):
    h = cloud
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    sid = created["server"]["id"]
    await wait_status(h, sid, "ACTIVE")
    act = f"{V}/servers/{sid}/action"
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {
        "imageRef": "00000000-0000-0000-0000-000000000000"}})).status == 400
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {}})).status == 400
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {"imageRef": h.image,
                                                                       "key_name": "nope"}})).status == 400
    await ok(await h.http.post(act, headers=h.alice, json={"pause": None}), 202)
    await wait_status(h, sid, "PAUSED")
    assert (await h.http.post(act, headers=h.alice, json={"rebuild": {"imageRef": h.image}})).status == 409
    assert (await h.http.post(act, headers=h.bob, json={"rebuild": {"imageRef": h.image}})).status == 404


@pytest.mark.parametrize("preserve", [True, False], ids=["preserved", "made-anew"])
async def test_rebuild_can_keep_what_the_user_wrote_on_the_ephemeral_disk(cloud, preserve):
    """Nova's `preserve_ephemeral`: the root disk made anew from the image, the ephemeral disk
    kept as the user left it (RebuildInstance 1.1). Without it, a blank one."""
    h = cloud
    sid = await boot_with_ephemeral(h)
    assert await qemu_io(h, sid, "write -P 0x5a 0 64k")   # what the user keeps there
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"rebuild": {
        "imageRef": h.image, "preserve_ephemeral": preserve}})
    assert resp.status == 202, await resp.text()
    assert (await settled(h, sid))["status"] == "ACTIVE"
    assert await qemu_io(h, sid, "read -P 0x5a 0 64k") is preserve


async def boot_with_ephemeral(h) -> str:
    flavor = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1.eph", "ram": 512, "vcpus": 1, "disk": 1, "OS-FLV-EXT-DATA:ephemeral": 1}}), 200)
    created = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                         json=boot_body(h, flavorRef=flavor["flavor"]["id"])), 202)
    await wait_status(h, created["server"]["id"], "ACTIVE")
    return created["server"]["id"]


async def qemu_io(h, sid: str, command: str) -> bool:
    """qemu-io's `command` on the server's ephemeral disk; a read with -P: whether it matched."""
    eph = disks.instance_dir((h.deps.settings.state_path / "instances").resolve(), sid) / "disk.eph0"
    proc = await asyncio.create_subprocess_exec("qemu-io", "-f", "qcow2", "-c", command, str(eph),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    return proc.returncode == 0 and b"Pattern verification failed" not in out


async def test_a_restart_in_the_middle_of_a_rebuild_still_keeps_the_ephemeral_disk(pool, tmp_path):
    """The rebuild's cast went down with the process: the next start redoes it with the
    option the user gave (kept on the instance, 0071), not a blank ephemeral disk."""
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        await seed(h)
        sid = await boot_with_ephemeral(h)
        assert await qemu_io(h, sid, "write -P 0x5a 0 64k")
    async with running(pool, [r for r in ROLES if r != "compute"], tmp_path, compute=SIM1) as h:
        resp = await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"rebuild": {
            "imageRef": await image_id(h), "preserve_ephemeral": True}})
        assert resp.status == 202, await resp.text()
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        server = await settled(h, sid)
        assert server["status"] == "ACTIVE", server.get("fault")
        assert await qemu_io(h, sid, "read -P 0x5a 0 64k")


async def image_id(h) -> str:
    """The one image seed() made (a harness started again has no `h.image`)."""
    images = await ok(await h.http.get("/image/v2/images", headers=h.alice), 200)
    return images["images"][0]["id"]
