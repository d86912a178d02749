"""createImage: a server's root disk becomes an image in the image service, which boots."""

from __future__ import annotations

import json
import subprocess

from tests.harness import running
from tests.integration import test_server_lifecycle
from tests.integration.test_resize import SIM1, _setup, action, boot
from tests.integration.test_server_lifecycle import MV, ROLES, V, boot_body, ok, settled, wait_status
from tests.waiting import until

cloud = test_server_lifecycle.cloud


async def image_of(h, image_id: str, status: str = "active") -> dict:
    """The image once its status is `status` ("GONE": deleted, returns {})."""
    async def show() -> dict | None:
        resp = await h.http.get(f"/image/v2/images/{image_id}", headers=h.alice)
        if resp.status == 404 and status == "GONE":
            return None
        return await ok(resp, 200)

    image = await until(show, lambda i: (i["status"] if i else "GONE") == status,
                        what=f"image {image_id} {status}")
    return image or {}


async def test_snapshot_boots_a_new_server(cloud):
    h = cloud
    sid = await boot(h)
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV}, json={
        "createImage": {"name": "snap1", "metadata": {"purpose": "test"}}})
    assert resp.status == 202, await resp.text()
    image_id = (await resp.json())["image_id"]
    image = await image_of(h, image_id)
    assert image["name"] == "snap1" and image["disk_format"] == "qcow2" and image["visibility"] == "private"
    assert (image["image_type"], image["instance_uuid"], image["base_image_ref"], image["purpose"]) == \
        ("snapshot", sid, h.image, "test")
    assert image["size"] > 0 and image["checksum"]
    # The caller's metadata wins over what the snapshot records of itself, as in Nova.
    await until(lambda: settled(h, sid), lambda s: s["OS-EXT-STS:task_state"] is None, what="the snapshot done")
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV}, json={
        "createImage": {"name": "snap2", "metadata": {"image_type": "test"}}})
    assert resp.status == 202, await resp.text()
    assert (await image_of(h, (await resp.json())["image_id"]))["image_type"] == "test"
    await until(lambda: settled(h, sid), lambda s: s["OS-EXT-STS:task_state"] is None, what="the snapshot done")
    stored = h.deps.state_dir / "images" / image_id
    info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", str(stored)], check=True,
                                     capture_output=True, text=True).stdout)
    assert info["format"] == "qcow2" and "backing-filename" not in info   # standalone
    server = await settled(h, sid)
    assert server["status"] == "ACTIVE"
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert actions[0]["action"] == "createImage" and actions[0]["message"] is None
    assert not list((h.deps.state_dir / "instances" / sid).glob("snapshot-*"))

    created = await ok(await h.http.post(V + "/servers", headers=h.alice,
                                         json=boot_body(h, name="from-snap", imageRef=image_id)), 202)
    again = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
    assert again["status"] == "ACTIVE", again.get("fault")
    assert again["image"]["id"] == image_id


async def test_snapshot_of_a_stopped_server_before_2_45(cloud):
    h = cloud
    sid = await boot(h, stopped=True)
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, "OpenStack-API-Version": "compute 2.44"},
                             json={"createImage": {"name": "snap2"}})
    assert resp.status == 202, await resp.text()
    location = resp.headers["Location"]
    image_id = location.rsplit("/", 1)[-1]
    assert location.endswith(f"/image/v2/images/{image_id}")
    await image_of(h, image_id)
    assert (await settled(h, sid))["status"] == "SHUTOFF"


async def test_create_image_refusals(cloud):
    h = cloud
    sid = await boot(h)
    await action(h, sid, {"createImage": {}}, 400)
    await action(h, sid, {"createImage": {"name": "x"}}, 404, headers=h.bob)
    await action(h, sid, {"lock": None}, 202)
    await action(h, sid, {"createImage": {"name": "x"}}, 409)
    await action(h, sid, {"unlock": None}, 202)
    await h.cell1.execute("UPDATE instances SET vm_state = 'error' WHERE uuid = $1", sid)
    await action(h, sid, {"createImage": {"name": "x"}}, 409)
    # a refused snapshot leaves no image behind
    assert (await ok(await h.http.get("/image/v2/images?name=x", headers=h.alice), 200))["images"] == []


async def test_a_snapshot_cut_short_by_a_restart_is_abandoned(pool, tmp_path):
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        await _setup(h)
        sid = await boot(h)
    async with running(pool, [r for r in ROLES if r != "compute"], tmp_path, compute=SIM1) as h:
        resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                                 json={"createImage": {"name": "lost"}})
        assert resp.status == 202
        image_id = (await resp.json())["image_id"]
        assert (await ok(await h.http.get(f"/image/v2/images/{image_id}", headers=h.alice), 200))["status"] \
            == "queued"
    async with running(pool, ROLES, tmp_path, compute=SIM1) as h:
        server = await settled(h, sid)
        assert server["status"] == "ACTIVE"
        assert (await h.http.get(f"/image/v2/images/{image_id}", headers=h.alice)).status == 404
        actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                            200))["instanceActions"]
        assert actions[0]["action"] == "createImage" and actions[0]["message"] == "Error"
        assert await h.pool.fetchval("SELECT count(*) FROM instance_snapshots") == 0


async def test_create_backup_keeps_the_newest_rotation_backups(cloud):
    h = cloud
    sid = await boot(h)
    made = []
    for n in range(3):
        resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV}, json={
            "createBackup": {"name": f"daily-{n}", "backup_type": "daily", "rotation": "2"}})
        assert resp.status == 202, await resp.text()
        made.append((await resp.json())["image_id"])
        image = await image_of(h, made[-1])
        assert (image["image_type"], image["backup_type"], image["instance_uuid"]) == ("backup", "daily", sid)
        await until(lambda: settled(h, sid), lambda s: s["OS-EXT-STS:task_state"] is None, what="the backup done")
    # The first is rotated out once the third is up; the other two stay.
    await image_of(h, made[0], "GONE")
    for image_id in made[1:]:
        await image_of(h, image_id)
    # A weekly backup with rotation 1 leaves the daily ones alone.
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV}, json={
        "createBackup": {"name": "weekly", "backup_type": "weekly", "rotation": 1}})
    await image_of(h, (await resp.json())["image_id"])
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert actions[0]["action"] == "createBackup"
    for image_id in made[1:]:
        await image_of(h, image_id)
    for bad in ({"name": "x", "backup_type": "daily"}, {"name": "x", "backup_type": "daily", "rotation": -1},
                {"name": "x", "backup_type": "daily", "rotation": "two"}):
        resp = await h.http.post(f"{V}/servers/{sid}/action", headers=h.alice, json={"createBackup": bad})
        assert resp.status == 400, bad
