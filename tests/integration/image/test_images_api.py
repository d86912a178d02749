"""The Glance v2 subset as the OpenStack clients drive it: create, upload, show, list,
update and delete, with the projects kept apart."""

from __future__ import annotations

import asyncio
import hashlib
import io
import uuid
from collections.abc import AsyncIterator

import pytest

from nova_async.common.context import RequestContext
from nova_async.image import store
from nova_async.image.blobs import ImageFiles
from tests.harness import locks_for, running

DATA = bytes(range(256)) * 4096 + b"tail"  # 1 MiB and a bit, so it crosses a chunk edge


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def create(h, headers, **body):
    body.setdefault("name", "cirros")
    body.setdefault("disk_format", "qcow2")
    body.setdefault("container_format", "bare")
    resp = await h.http.post("/image/v2/images", json=body, headers=headers)
    assert resp.status == 201, await resp.text()
    return await resp.json()


async def upload(h, headers, image_id, data=DATA):
    return await h.http.put(f"/image/v2/images/{image_id}/file", data=io.BytesIO(data),
                            headers={**headers, "Content-Type": "application/octet-stream"})


async def test_version_discovery_points_back_at_this_server(h):
    for path in ("/image", "/image/", "/image/v2"):
        resp = await h.http.get(path)
        assert resp.status == 300
        versions = (await resp.json())["versions"]
        current = [v for v in versions if v["status"] == "CURRENT"]
        assert current[0]["id"] == "v2.17"
        assert current[0]["links"][0]["href"] == f"{h.deps.settings.base_url}/image/v2/"


async def test_create_upload_show_like_openstack_image_create(h):
    image = await create(h, h.alice, **{"owner_specified.openstack.md5": "",
                                        "owner_specified.openstack.object": "images/cirros"})
    assert image["status"] == "queued"
    assert image["size"] is None and image["visibility"] == "shared"
    assert image["owner"] == "proj-a"
    assert image["owner_specified.openstack.object"] == "images/cirros"
    assert image["self"] == f"/v2/images/{image['id']}"

    resp = await upload(h, h.alice, image["id"])
    assert resp.status == 204

    resp = await h.http.get(f"/image/v2/images/{image['id']}", headers=h.alice)
    shown = await resp.json()
    assert shown["status"] == "active"
    assert shown["size"] == len(DATA)
    assert shown["checksum"] == hashlib.md5(DATA).hexdigest()
    assert shown["os_hash_algo"] == "sha512"
    assert shown["os_hash_value"] == hashlib.sha512(DATA).hexdigest()
    assert shown["owner_specified.openstack.md5"] == ""

    resp = await h.http.get(f"/image/v2/images/{image['id']}/file", headers=h.alice)
    assert resp.status == 200
    assert await resp.read() == DATA
    stored = h.deps.settings.state_path / "images" / image["id"]
    assert stored.read_bytes() == DATA


async def test_qcow2_virtual_size_comes_from_its_header(h):
    image = await create(h, h.alice)
    header = b"QFI\xfb" + b"\x00\x00\x00\x03" + bytes(16) + (1 << 30).to_bytes(8, "big") + bytes(64)
    assert (await upload(h, h.alice, image["id"], header)).status == 204
    shown = await (await h.http.get(f"/image/v2/images/{image['id']}", headers=h.alice)).json()
    assert shown["virtual_size"] == 1 << 30
    assert shown["size"] == len(header)


async def test_second_upload_is_a_conflict(h):
    image = await create(h, h.alice)
    assert (await upload(h, h.alice, image["id"])).status == 204
    resp = await upload(h, h.alice, image["id"], b"other")
    assert resp.status == 409
    assert "queued" in await resp.text()
    shown = await (await h.http.get(f"/image/v2/images/{image['id']}", headers=h.alice)).json()
    assert shown["checksum"] == hashlib.md5(DATA).hexdigest()


async def test_download_before_upload_has_no_content(h):
    image = await create(h, h.alice)
    resp = await h.http.get(f"/image/v2/images/{image['id']}/file", headers=h.alice)
    assert resp.status == 204


async def test_chosen_id_and_duplicate_id(h):
    wanted = str(uuid.uuid4())
    image = await create(h, h.alice, id=wanted)
    assert image["id"] == wanted
    resp = await h.http.post("/image/v2/images", json={"id": wanted}, headers=h.alice)
    assert resp.status == 409


async def test_name_lookup_then_filtered_list(h):
    image = await create(h, h.alice, name="cirros")
    await create(h, h.alice, name="debian")
    resp = await h.http.get("/image/v2/images/cirros", headers=h.alice)
    assert resp.status == 404
    assert resp.content_type == "text/plain"
    assert "cirros" in await resp.text()

    resp = await h.http.get("/image/v2/images", params={"name": "cirros"}, headers=h.alice)
    body = await resp.json()
    assert [i["id"] for i in body["images"]] == [image["id"]]
    assert body["first"] == "/v2/images" and body["schema"] == "/v2/schemas/images"
    assert "next" not in body


async def test_list_by_id_in(h):
    a = await create(h, h.alice, name="a")
    b = await create(h, h.alice, name="b")
    await create(h, h.alice, name="c")
    resp = await h.http.get("/image/v2/images", params={"id": f"in:{a['id']},{b['id']},not-a-uuid"},
                            headers=h.alice)
    assert sorted(i["name"] for i in (await resp.json())["images"]) == ["a", "b"]


async def test_list_filters_and_paging(h):
    for n in range(5):
        await create(h, h.alice, name=f"img{n}", tags=["gold"] if n % 2 else [], os_distro="cirros")
    await create(h, h.alice, name="hidden", os_hidden=True)

    async def names(**params):
        resp = await h.http.get("/image/v2/images", params=params, headers=h.alice)
        assert resp.status == 200, await resp.text()
        return sorted(i["name"] for i in (await resp.json())["images"])

    assert "hidden" not in await names()
    assert await names(os_hidden="True") == ["hidden"]
    assert await names(tag="gold") == ["img1", "img3"]
    assert await names(os_distro="cirros") == [f"img{n}" for n in range(5)]
    assert await names(status="active") == []
    assert await names(name="in:img0,img4") == ["img0", "img4"]

    seen, params = [], {"limit": "2"}
    while True:
        resp = await h.http.get("/image/v2/images", params=params, headers=h.alice)
        body = await resp.json()
        seen += [i["name"] for i in body["images"]]
        if "next" not in body:
            break
        params = dict(p.split("=") for p in body["next"].split("?", 1)[1].split("&"))
    assert sorted(seen) == [f"img{n}" for n in range(5)]
    assert len(seen) == 5


async def test_projects_do_not_see_each_others_images(h):
    private = await create(h, h.alice, name="alices", visibility="private")
    shared = await create(h, h.alice, name="alices-shared")
    community = await create(h, h.alice, name="alices-community", visibility="community")
    public = await create(h, h.admin, name="everyones", visibility="public")

    for image in (private, shared):
        resp = await h.http.get(f"/image/v2/images/{image['id']}", headers=h.bob)
        assert resp.status == 404
        resp = await h.http.delete(f"/image/v2/images/{image['id']}", headers=h.bob)
        assert resp.status == 404
        assert (await upload(h, h.bob, image["id"])).status == 404
    for image in (community, public):
        resp = await h.http.get(f"/image/v2/images/{image['id']}", headers=h.bob)
        assert resp.status == 200
    resp = await h.http.delete(f"/image/v2/images/{public['id']}", headers=h.bob)
    assert resp.status == 403

    bobs = await (await h.http.get("/image/v2/images", headers=h.bob)).json()
    assert [i["name"] for i in bobs["images"]] == ["everyones"]
    community_list = await (await h.http.get("/image/v2/images", params={"visibility": "community"},
                                             headers=h.bob)).json()
    assert [i["name"] for i in community_list["images"]] == ["alices-community"]
    # Community images are listed only when asked for, even to an admin.
    default = await (await h.http.get("/image/v2/images", headers=h.admin)).json()
    assert len(default["images"]) == 3
    everything = await (await h.http.get("/image/v2/images", params={"visibility": "all"},
                                         headers=h.admin)).json()
    assert len(everything["images"]) == 4


async def test_only_admin_publishes(h):
    resp = await h.http.post("/image/v2/images", json={"name": "x", "visibility": "public"}, headers=h.alice)
    assert resp.status == 403
    resp = await h.http.post("/image/v2/images", json={"name": "x", "owner": "proj-b"}, headers=h.alice)
    assert resp.status == 403


async def test_delete_removes_the_file_and_protected_images_stay(h):
    image = await create(h, h.alice, protected=True)
    await upload(h, h.alice, image["id"])
    stored = h.deps.settings.state_path / "images" / image["id"]
    assert stored.exists()
    resp = await h.http.delete(f"/image/v2/images/{image['id']}", headers=h.alice)
    assert resp.status == 403
    assert "protected" in await resp.text()

    resp = await h.http.patch(f"/image/v2/images/{image['id']}",
                              json=[{"op": "replace", "path": "/protected", "value": False}],
                              headers={**h.alice, "Content-Type": "application/openstack-images-v2.1-json-patch"})
    assert resp.status == 200, await resp.text()
    resp = await h.http.delete(f"/image/v2/images/{image['id']}", headers=h.alice)
    assert resp.status == 204
    assert not stored.exists()
    assert (await h.http.get(f"/image/v2/images/{image['id']}", headers=h.alice)).status == 404


async def test_json_patch_sets_and_removes_properties(h):
    image = await create(h, h.alice, os_distro="cirros")
    patch_headers = {**h.alice, "Content-Type": "application/openstack-images-v2.1-json-patch"}
    url = f"/image/v2/images/{image['id']}"
    resp = await h.http.patch(url, headers=patch_headers, json=[
        {"op": "replace", "path": "/name", "value": "renamed"},
        {"op": "add", "path": "/hw_disk_bus", "value": "virtio"},
        {"op": "remove", "path": "/os_distro"},
        {"op": "replace", "path": "/tags", "value": ["a", "b", "a"]},
    ])
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["name"] == "renamed" and body["hw_disk_bus"] == "virtio"
    assert "os_distro" not in body and body["tags"] == ["a", "b"]

    cases = [
        ([{"op": "replace", "path": "/status", "value": "active"}], 403),
        ([{"op": "remove", "path": "/nope"}], 409),
        ([{"op": "replace", "path": "/min_ram", "value": "lots"}], 400),
        ([{"op": "replace", "path": "/visibility", "value": "public"}], 403),
        ([{"op": "move", "path": "/name"}], 400),
    ]
    for ops, status in cases:
        resp = await h.http.patch(url, headers=patch_headers, json=ops)
        assert resp.status == status, (ops, await resp.text())
    resp = await h.http.patch(url, headers=h.alice, json=[])
    assert resp.status == 415


BAD_BODIES = [
    (b"{not json", 400, "JSON"),
    (b'["a list"]', 400, "body"),
    (b'{"name": 5}', 400, "name"),
    (b'{"min_ram": "big"}', 400, "min_ram"),
    (b'{"min_disk": -1}', 400, "min_disk"),
    (b'{"disk_format": "floppy"}', 400, "disk_format"),
    (b'{"visibility": "everyone"}', 400, "visibility"),
    (b'{"protected": "yes"}', 400, "protected"),
    (b'{"tags": "one"}', 400, "tags"),
    (b'{"id": "not-a-uuid"}', 400, "id"),
    (b'{"hw_cpu_cores": 4}', 400, "hw_cpu_cores"),
    (b'{"status": "active"}', 403, "read-only"),
    (b'{"size": 5}', 403, "read-only"),
    (b'{"os_glance_import_task": "x"}', 403, "reserved"),
]


async def test_bad_create_bodies_are_refused_in_plain_text(h):
    for body, status, words in BAD_BODIES:
        resp = await h.http.post("/image/v2/images", data=body,
                                 headers={**h.alice, "Content-Type": "application/json"})
        assert resp.status == status, body
        assert resp.content_type == "text/plain"
        text = await resp.text()
        assert text.startswith(f"{status} ")
        assert words in text, (body, text)
    listed = await (await h.http.get("/image/v2/images", headers=h.alice)).json()
    assert listed["images"] == []


async def test_bad_requests_never_500(h):
    image = await create(h, h.alice)
    checks = [
        h.http.get("/image/v2/images", params={"limit": "many"}, headers=h.alice),
        h.http.get("/image/v2/images", params={"visibility": "nope"}, headers=h.alice),
        h.http.get("/image/v2/images", params={"marker": str(uuid.uuid4())}, headers=h.alice),
        h.http.get("/image/v2/images", params={"os_hidden": "maybe"}, headers=h.alice),
        h.http.put(f"/image/v2/images/{image['id']}/file", data=b"x",
                   headers={**h.alice, "Content-Type": "text/plain"}),
        h.http.put("/image/v2/images/nope/file", data=b"x",
                   headers={**h.alice, "Content-Type": "application/octet-stream"}),
        h.http.get("/image/v2/nowhere", headers=h.alice),
        h.http.post(f"/image/v2/images/{image['id']}", headers=h.alice),
        h.http.get("/image/v2/images", headers={}),
    ]
    statuses = []
    for call in checks:
        resp = await call
        statuses.append(resp.status)
        assert resp.content_type == "text/plain"
    assert statuses == [400, 400, 400, 400, 415, 404, 404, 405, 401]


async def test_an_upload_cut_short_by_a_restart_can_be_retried(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as h:
        image = await create(h, h.alice)
        previous_run = h.roles["image"].files.worker
    # As if the process died mid-upload: the row says saving and a partial file lies around.
    await pool.execute("UPDATE images SET status = 'saving', worker = $2 WHERE id = $1", image["id"], previous_run)
    leftover = tmp_path / "images" / f".{image['id']}.0000.part"
    leftover.write_bytes(b"half")
    async with running(pool, ["image"], tmp_path) as h:
        shown = await (await h.http.get(f"/image/v2/images/{image['id']}", headers=h.alice)).json()
        assert shown["status"] == "queued"
        assert not leftover.exists()
        assert (await upload(h, h.alice, image["id"])).status == 204


async def test_another_copy_s_uploads_are_left_alone_until_it_dies(pool, tmp_path):
    # Copy A of the image role shares the database and the image directory, and is uploading
    # (its stream held open) when copy B starts: B's start-up recovery must leave it alone.
    a_locks = locks_for(pool, "nova-async copy A")
    await a_locks.open()
    a_files = ImageFiles(tmp_path / "images", worker=a_locks.incarnation)
    admin = RequestContext(user_id="", project_id="", roles=("admin",))
    live = await store.create(pool, admin, {"name": "live", "disk_format": "raw",
                                            "container_format": "bare", "owner": "p"}, {})
    fed, more = asyncio.Event(), asyncio.Event()

    async def held_open() -> AsyncIterator[bytes]:
        yield b"x" * (5 << 20)   # more than a batch: the .part file is written before the next
        fed.set()
        await more.wait()
        yield b"tail"

    uploading = asyncio.create_task(store.upload(pool, admin, str(live["id"]), held_open(), a_files))
    await fed.wait()
    assert len(a_files.unfinished()) == 1
    # And what A leaves when it is killed: a second upload, a task downloading into a third
    # image, a task still pending. A stray .part file no upload names goes at once.
    cut, downloading, waiting, into = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for image_id in (cut, into):
        await pool.execute("INSERT INTO images (id, name, disk_format, container_format, status, owner, worker)"
                           " VALUES ($1, 'half', 'raw', 'bare', 'saving', 'p', $2)", image_id, a_locks.incarnation)
    task_input = {"import_from": "http://127.0.0.1:9/disk.raw", "import_from_format": "raw",
                  "image_properties": {"disk_format": "raw", "container_format": "bare"}}
    await pool.execute("INSERT INTO image_tasks (id, type, status, owner, input, image_id, worker)"
                       " VALUES ($1, 'import', 'processing', 'p', $2, $3, $4)",
                       downloading, task_input, into, a_locks.incarnation)
    await pool.execute("INSERT INTO image_tasks (id, type, owner, input, worker) VALUES ($1, 'import', 'p', $2, $3)",
                       waiting, task_input, a_locks.incarnation)
    cut_part = tmp_path / "images" / f".{cut}.0000.part"
    cut_part.write_bytes(b"half")
    stray = tmp_path / "images" / f".{uuid.uuid4()}.0000.part"
    stray.write_bytes(b"nobody's")
    try:
        async with running(pool, ["image"], tmp_path) as h:
            status = {r["id"]: r["status"] for r in await pool.fetch(
                "SELECT id, status FROM images WHERE id = ANY($1::uuid[])", [live["id"], cut, into])}
            assert status == {live["id"]: "saving", cut: "saving", into: "saving"}
            tasks_now = {r["id"]: r["status"] for r in await pool.fetch(
                "SELECT id, status FROM image_tasks WHERE id = ANY($1::uuid[])", [downloading, waiting])}
            assert tasks_now == {downloading: "processing", waiting: "pending"}
            assert cut_part.exists() and len(a_files.unfinished()) == 2 and not stray.exists()

            # A's live upload ends well, whatever B did at its start.
            more.set()
            assert (await uploading)["status"] == "active"

            # A dies (its locks go with its connection): B's periodic look ends what it left.
            await a_locks.close()
            await h.roles["image"].recover_dead_work()
            assert await pool.fetchval("SELECT status FROM images WHERE id = $1", cut) == "queued"
            assert not cut_part.exists()
            assert await pool.fetchval("SELECT count(*) FROM images WHERE id = $1", into) == 0
            for task_id in (downloading, waiting):
                assert await pool.fetchval("SELECT status FROM image_tasks WHERE id = $1", task_id) == "failure"
            assert (await upload(h, h.admin, str(cut))).status == 204
    finally:
        more.set()
        await a_locks.close()
