"""Volumes made from images, the volume role's bus messages (boot from volume asks for a
volume and waits for it), and a restart finishing what a stop interrupted."""

from __future__ import annotations

import asyncio
import io
import subprocess
import uuid
from pathlib import Path

import pytest

from nova_async.common import errors
from nova_async.db.queries import queries
from nova_async.volume import messages as m
from nova_async.volume.client import VolumeClient
from tests.harness import locks_for, running
from tests.integration.volume.helpers import call, make_volume, settled

Q = queries("volume")


async def upload_qcow2(h, tmp_path: Path, data: bytes) -> str:
    raw = tmp_path / "disk.raw"
    raw.write_bytes(data.ljust(1024 * 1024, b"\0"))
    qcow = tmp_path / "disk.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(qcow)], check=True)
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "tiny", "disk_format": "qcow2", "container_format": "bare", "kernel_id": "k-1", "min_ram": 64})
    image = await resp.json()
    resp = await h.http.put(f"/image/v2/images/{image['id']}/file", data=io.BytesIO(qcow.read_bytes()),
                            headers={**h.alice, "Content-Type": "application/octet-stream"})
    assert resp.status == 204, await resp.text()
    return image["id"]


async def test_volume_from_an_image_is_bootable_and_keeps_its_metadata(pool, tmp_path):
    async with running(pool, ["volume", "image"], tmp_path) as h:
        image_id = await upload_qcow2(h, tmp_path, b"bootsector")
        vol = await make_volume(h, h.alice, imageRef=image_id, size=1)
        assert vol["status"] == "available" and vol["bootable"] == "true"
        meta = vol["volume_image_metadata"]
        assert meta["image_id"] == image_id and meta["kernel_id"] == "k-1" and meta["disk_format"] == "qcow2"
        path = h.roles["volume"].api.store.connection(vol["id"]).path
        with open(path, "rb") as f:
            assert f.read(10) == b"bootsector"
        status, body = await call(h, "POST", "/volumes", h.alice, {"volume": {"size": 1, "imageRef": str(uuid.uuid4())}})
        assert status == 404 and "itemNotFound" in body
        status, body = await call(h, "POST", "/volumes", h.bob, {"volume": {"size": 1, "imageRef": image_id}})
        assert status == 404  # alice's private image


async def test_bus_get_create_delete(pool, tmp_path):
    async with running(pool, ["volume", "image"], tmp_path) as h:
        client = VolumeClient(h.bus)
        image_id = await upload_qcow2(h, tmp_path, b"root")
        made = await client.create(m.CreateVolume(project_id="proj-a", user_id="alice", size=0,
                                                  source_type="image", source_id=image_id))
        assert made.status == "available" and made.bootable and made.size == 1
        assert made.image_id == image_id and made.image_metadata["kernel_id"] == "k-1"
        assert (await client.get(made.id, "proj-a")).id == made.id
        with pytest.raises(errors.NotFound):
            await client.get(made.id, "proj-b")
        await client.delete(made.id)
        await client.delete(made.id)  # idempotent
        with pytest.raises(errors.NotFound):
            await client.get(made.id, "proj-a", is_admin=True)
        # a create that cannot start raises, and leaves no volume behind
        with pytest.raises(errors.NotFound):
            await client.create(m.CreateVolume(project_id="proj-a", user_id="alice", size=1,
                                               source_type="snapshot", source_id=str(uuid.uuid4())))
        status, body = await call(h, "GET", "/volumes", h.alice)
        assert body["volumes"] == []
        await h.http.put("/volume/v3/os-quota-sets/proj-a", headers=h.admin, json={"quota_set": {"volumes": 0}})
        with pytest.raises(errors.Conflict):
            await client.create(m.CreateVolume(project_id="proj-a", user_id="alice", size=1))


async def test_restart_finishes_interrupted_creates_and_deletes(pool, tmp_path):
    async with running(pool, ["volume"], tmp_path) as h:
        gone = await make_volume(h, h.alice, name="to-delete")
        kept = await make_volume(h, h.alice, name="to-extend", size=1)
        path = Path(h.roles["volume"].api.store.connection(gone["id"]).path)
        assert path.exists()
        previous_run = h.roles["volume"].api.worker
    # What a stop in the middle leaves: a delete committed (by the previous run), a create and
    # an extend not yet done (no process recorded: rows from before workers were).
    await pool.execute("UPDATE volumes SET status = 'deleting', worker = $2 WHERE id = $1",
                       uuid.UUID(gone["id"]), previous_run)
    await pool.execute("UPDATE volumes SET status = 'extending', new_size = 2 WHERE id = $1", uuid.UUID(kept["id"]))
    new_id = uuid.uuid4()
    await pool.execute(
        "INSERT INTO volumes (id, project_id, user_id, name, size, backend) VALUES ($1, 'proj-a', 'alice', 'new', 1, 'file')",
        new_id)
    snap_id = uuid.uuid4()
    await pool.execute("INSERT INTO volume_snapshots (id, volume_id, project_id, user_id, size, backend) "
                       "VALUES ($1, $2, 'proj-a', 'alice', 1, 'file')", snap_id, uuid.UUID(kept["id"]))
    async with running(pool, ["volume"], tmp_path) as h:
        # recovery ran before the API served
        assert (await call(h, "GET", f"/volumes/{gone['id']}", h.alice))[0] == 404
        assert not path.exists()
        status, body = await call(h, "GET", f"/volumes/{new_id}", h.alice)
        assert body["volume"]["status"] == "available"
        assert Path(h.roles["volume"].api.store.connection(str(new_id)).path).exists()
        status, body = await call(h, "GET", f"/volumes/{kept['id']}", h.alice)
        assert body["volume"]["status"] == "available" and body["volume"]["size"] == 2
        status, body = await call(h, "GET", f"/snapshots/{snap_id}", h.alice)
        assert body["snapshot"]["status"] == "available"
        await settled(h)


async def test_another_copy_s_changes_are_left_alone_until_it_dies(pool, tmp_path):
    async with running(pool, ["volume"], tmp_path) as h:
        gone = await make_volume(h, h.alice, name="to-delete")
        kept = await make_volume(h, h.alice, name="to-extend", size=1)
        path = Path(h.roles["volume"].api.store.connection(gone["id"]).path)
    # Copy A of the volume role, on the same database, is in the middle of a delete, an
    # extend, a create and a snapshot when copy B starts.
    a_locks = locks_for(pool, "nova-async copy A")
    await a_locks.open()
    a = a_locks.incarnation
    await pool.execute("UPDATE volumes SET status = 'deleting', worker = $2 WHERE id = $1", uuid.UUID(gone["id"]), a)
    await pool.execute("UPDATE volumes SET status = 'extending', new_size = 2, worker = $2 WHERE id = $1",
                       uuid.UUID(kept["id"]), a)
    new_id, snap_id = uuid.uuid4(), uuid.uuid4()
    await pool.execute("INSERT INTO volumes (id, project_id, user_id, name, size, backend, worker)"
                       " VALUES ($1, 'proj-a', 'alice', 'new', 1, 'file', $2)", new_id, a)
    await pool.execute("INSERT INTO volume_snapshots (id, volume_id, project_id, user_id, size, backend, worker) "
                       "VALUES ($1, $2, 'proj-a', 'alice', 1, 'file', $3)", snap_id, uuid.UUID(kept["id"]), a)
    try:
        async with running(pool, ["volume"], tmp_path) as h:
            assert path.exists()
            for volume_id, status in ((gone["id"], "deleting"), (kept["id"], "extending"), (new_id, "creating")):
                assert (await call(h, "GET", f"/volumes/{volume_id}", h.alice))[1]["volume"]["status"] == status
            assert (await call(h, "GET", f"/snapshots/{snap_id}", h.alice))[1]["snapshot"]["status"] == "creating"
            # Nor does B's periodic look touch them while A lives.
            await h.roles["volume"].recover_dead_work()
            assert (await call(h, "GET", f"/volumes/{new_id}", h.alice))[1]["volume"]["status"] == "creating"

            # A dies: B's periodic look finishes what A left, as a restart of A would have.
            await a_locks.close()
            await h.roles["volume"].recover_dead_work()
            assert (await call(h, "GET", f"/volumes/{gone['id']}", h.alice))[0] == 404
            assert not path.exists()
            status, body = await call(h, "GET", f"/volumes/{new_id}", h.alice)
            assert body["volume"]["status"] == "available"
            status, body = await call(h, "GET", f"/volumes/{kept['id']}", h.alice)
            assert body["volume"]["status"] == "available" and body["volume"]["size"] == 2
            status, body = await call(h, "GET", f"/snapshots/{snap_id}", h.alice)
            assert body["snapshot"]["status"] == "available"
            me = h.roles["volume"].api.worker
            assert await pool.fetchval("SELECT worker FROM volumes WHERE id = $1", new_id) == me
            await settled(h)
    finally:
        await a_locks.close()


async def test_extend_in_use_tells_the_compute_host_and_notifications_say_so(pool, tmp_path):
    async with running(pool, ["volume"], tmp_path) as h:
        with h.bus.listen() as notes:
            vol = await make_volume(h, h.alice, size=1)
            instance = uuid.uuid4()
            # what an attach leaves (the attachment API is another part's): one attachment, in-use
            await pool.execute(
                "INSERT INTO volume_attachments (id, volume_id, instance_uuid, project_id, status, attached_host, "
                "mountpoint, attached_at, made_by)"
                " VALUES ($1, $2, $3, 'proj-a', 'attached', 'host-x', '/dev/vdb', now(), 'compute')",
                uuid.uuid4(), uuid.UUID(vol["id"]), instance)
            await pool.execute("UPDATE volumes SET status = 'in-use' WHERE id = $1", uuid.UUID(vol["id"]))
            status, body = await call(h, "GET", f"/volumes/{vol['id']}", h.alice)
            (att,) = body["volume"]["attachments"]
            assert att["server_id"] == str(instance) and att["host_name"] == "host-x" and att["device"] == "/dev/vdb"
            status, body = await call(h, "DELETE", f"/volumes/{vol['id']}", h.alice)
            assert status == 400 and "attached" in body["badRequest"]["message"]

            told: list = []
            heard, stop = asyncio.Event(), asyncio.Event()

            async def compute(msg, ctx):
                told.append(msg)
                heard.set()

            consumer = asyncio.create_task(h.bus.consume("compute.host-x", compute, until=stop))
            status, _ = await call(h, "POST", f"/volumes/{vol['id']}/action", h.alice, {"os-extend": {"new_size": 2}})
            assert status == 202
            await settled(h)
            await heard.wait()
            stop.set()
            await consumer
            assert (told[0].instance_uuid, told[0].volume_id, told[0].size_gb) == (str(instance), vol["id"], 2)
            status, body = await call(h, "GET", f"/volumes/{vol['id']}", h.alice)
            assert body["volume"]["status"] == "in-use" and body["volume"]["size"] == 2
            seen = []
            while not notes.empty():
                seen.append(notes.get_nowait().event_type)
        assert [e for e in seen if e.startswith("volume.")] == [
            "volume.create.start", "volume.create.end", "volume.resize.start", "volume.resize.end"]
