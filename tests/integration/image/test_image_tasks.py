"""Glance's tasks API (/v2/tasks): an import task makes an image from the bytes a URL serves.
The bytes come from an HTTP server this test starts on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator

import openstack
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.harness import running

# The SDK warns about its own optional parts (InfluxDB metrics) as it loads its config.
pytestmark = [pytest.mark.asyncio,
              pytest.mark.filterwarnings("ignore::openstack.warnings._RemovedInSDKWarning"),
              pytest.mark.filterwarnings("ignore::openstack.warnings.OpenStackDeprecationWarning")]

DATA = b"QFI\xfb" + bytes(range(256)) * 400     # a qcow2 magic, then anything
OTHER_ADMIN = {"X-Auth-Token": "admin:proj-ops"}


@pytest.fixture
async def origin() -> AsyncIterator[TestServer]:
    """A web server on loopback: /disk.qcow2 is DATA, anything else a 404."""
    app = web.Application()

    async def disk(_request: web.Request) -> web.Response:
        return web.Response(body=DATA, content_type="application/octet-stream")

    app.router.add_get("/disk.qcow2", disk)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield server
    await server.close()


def _task(url: str, **props: object) -> dict:
    return {"type": "import",
            "input": {"import_from": url, "import_from_format": "qcow2",
                      "image_properties": {"name": "imported", "disk_format": "qcow2",
                                           "container_format": "bare", **props}}}


async def _finished(h, task_id: str) -> dict:
    await h.roles["image"].work.idle()
    resp = await h.http.get(f"/image/v2/tasks/{task_id}", headers=h.admin)
    assert resp.status == 200
    return await resp.json()


async def test_import_task_makes_an_active_image_from_the_url(pool, tmp_path, origin):
    async with running(pool, ["image"], tmp_path) as h:
        url = str(origin.make_url("/disk.qcow2"))
        resp = await h.http.post("/image/v2/tasks", json=_task(url, visibility="public", os_distro="debian"),
                                 headers=h.admin)
        assert resp.status == 201, await resp.text()
        task = await resp.json()
        assert resp.headers["Location"].endswith(f"/image/v2/tasks/{task['id']}")
        assert task["type"] == "import" and task["status"] in ("pending", "processing", "success")
        assert task["input"]["import_from"] == url
        assert task["owner"] == "admin" and task["schema"] == "/v2/schemas/task"
        assert task["self"] == f"/v2/tasks/{task['id']}"

        done = await _finished(h, task["id"])
        assert done["status"] == "success", done["message"]
        assert done["message"] == "" and done["expires_at"] is not None
        image_id = done["result"]["image_id"]

        image = await (await h.http.get(f"/image/v2/images/{image_id}", headers=h.alice)).json()
        assert image["status"] == "active" and image["name"] == "imported"
        assert image["visibility"] == "public" and image["os_distro"] == "debian"
        assert image["size"] == len(DATA) and image["checksum"] == hashlib.md5(DATA).hexdigest()
        assert image["owner"] == "admin"
        file = await h.http.get(f"/image/v2/images/{image_id}/file", headers=h.alice)
        assert await file.read() == DATA

        # The image's tasks name the import that made it, for anyone who sees the image.
        listed = await (await h.http.get(f"/image/v2/images/{image_id}/tasks", headers=h.alice)).json()
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]


async def test_a_url_that_answers_404_fails_the_task_and_leaves_no_image(pool, tmp_path, origin):
    async with running(pool, ["image"], tmp_path) as h:
        resp = await h.http.post("/image/v2/tasks", json=_task(str(origin.make_url("/missing.qcow2"))),
                                 headers=h.admin)
        assert resp.status == 201
        done = await _finished(h, (await resp.json())["id"])
        assert done["status"] == "failure" and done["result"] is None
        assert "404" in done["message"]
        images = await (await h.http.get("/image/v2/images", headers=h.admin)).json()
        assert [i for i in images["images"] if i["name"] == "imported"] == []


@pytest.mark.parametrize("body", [
    _task("file:///etc/passwd"),
    _task("ftp://127.0.0.1/disk.qcow2"),
    _task("http:///no-host"),
    {"type": "copy", "input": _task("http://127.0.0.1/x")["input"]},
    {"type": "import"},
    {"type": "import", "input": {"import_from": "http://127.0.0.1/x", "import_from_format": "qcow2"}},
    {"type": "import", "input": {"import_from": "http://127.0.0.1/x", "import_from_format": "floppy",
                                 "image_properties": {}}},
    _task("http://127.0.0.1/x", visibility="everyone"),
    _task("http://127.0.0.1/x", status="active"),
    [1, 2],
])
async def test_bad_task_input_is_a_400_and_no_task(pool, tmp_path, body):
    async with running(pool, ["image"], tmp_path) as h:
        resp = await h.http.post("/image/v2/tasks", json=body, headers=h.admin)
        assert resp.status == 400, await resp.text()
        assert resp.content_type == "text/plain"
        listed = await (await h.http.get("/image/v2/tasks", headers=h.admin)).json()
        assert listed["tasks"] == []


async def test_tasks_are_for_admins_who_see_every_project_s(pool, tmp_path, origin):
    async with running(pool, ["image"], tmp_path) as h:
        body = _task(str(origin.make_url("/disk.qcow2")))
        assert (await h.http.post("/image/v2/tasks", json=body, headers=h.alice)).status == 403
        resp = await h.http.post("/image/v2/tasks", json=body, headers=h.admin)
        task_id = (await resp.json())["id"]
        await h.roles["image"].work.idle()
        assert (await h.http.get("/image/v2/tasks", headers=h.alice)).status == 403
        assert (await h.http.get(f"/image/v2/tasks/{task_id}", headers=h.alice)).status == 403

        listed = await (await h.http.get("/image/v2/tasks", headers=OTHER_ADMIN)).json()
        assert [t["id"] for t in listed["tasks"]] == [task_id]
        assert "input" not in listed["tasks"][0] and listed["schema"] == "/v2/schemas/tasks"
        assert (await h.http.get(f"/image/v2/tasks/{task_id}", headers=OTHER_ADMIN)).status == 200
        assert (await h.http.get(f"/image/v2/tasks/{uuid.uuid4()}", headers=h.admin)).status == 404
        assert (await h.http.get("/image/v2/tasks/not-a-uuid", headers=h.admin)).status == 404
        assert (await h.http.delete(f"/image/v2/tasks/{task_id}", headers=h.admin)).status == 405


async def test_task_lists_filter_sort_and_page(pool, tmp_path, origin):
    async with running(pool, ["image"], tmp_path) as h:
        ids = []
        for path in ("/disk.qcow2", "/missing.qcow2", "/disk.qcow2"):
            resp = await h.http.post("/image/v2/tasks", json=_task(str(origin.make_url(path))), headers=h.admin)
            ids.append((await resp.json())["id"])
            await h.roles["image"].work.idle()

        async def listed(query: str) -> dict:
            resp = await h.http.get(f"/image/v2/tasks?{query}", headers=h.admin)
            assert resp.status == 200, await resp.text()
            return await resp.json()

        assert {t["id"] for t in (await listed("status=success"))["tasks"]} == {ids[0], ids[2]}
        assert [t["id"] for t in (await listed("status=failure"))["tasks"]] == [ids[1]]
        assert [t["id"] for t in (await listed("sort_key=created_at&sort_dir=asc"))["tasks"]] == ids
        page = await listed("sort_dir=asc&limit=2")
        assert [t["id"] for t in page["tasks"]] == ids[:2] and "marker=" in page["next"]
        rest = await listed(f"sort_dir=asc&limit=2&marker={ids[1]}")
        assert [t["id"] for t in rest["tasks"]] == ids[2:] and "next" not in rest
        for bad in ("status=done", "type=copy", "sort_key=input", "sort_dir=up", "limit=-1", "limit=x",
                    "marker=nope", f"marker={uuid.uuid4()}"):
            assert (await h.http.get(f"/image/v2/tasks?{bad}", headers=h.admin)).status == 400, bad


async def test_task_schemas_are_served(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as h:
        task = await (await h.http.get("/image/v2/schemas/task", headers=h.alice)).json()
        assert task["name"] == "task" and "result" in task["properties"]
        tasks = await (await h.http.get("/image/v2/schemas/tasks", headers=h.alice)).json()
        assert tasks["name"] == "tasks" and "input" not in tasks["properties"]["tasks"]["items"]["properties"]


async def test_a_restart_fails_the_tasks_it_cut_off_and_takes_their_unfinished_images(pool, tmp_path):
    # What a crash leaves: a task still pending, and one that was downloading into its image.
    downloading, waiting, image_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await pool.execute("INSERT INTO images (id, name, disk_format, container_format, status, owner)"
                       " VALUES ($1, 'half', 'qcow2', 'bare', 'saving', 'admin')", image_id)
    task_input = _task("http://127.0.0.1:9/disk.qcow2")["input"]
    await pool.execute("INSERT INTO image_tasks (id, type, status, owner, input, image_id)"
                       " VALUES ($1, 'import', 'processing', 'admin', $2, $3)", downloading, task_input, image_id)
    await pool.execute("INSERT INTO image_tasks (id, type, owner, input) VALUES ($1, 'import', 'admin', $2)",
                       waiting, task_input)

    async with running(pool, ["image"], tmp_path) as h:
        for task_id, was in ((downloading, "processing"), (waiting, "pending")):
            task = await (await h.http.get(f"/image/v2/tasks/{task_id}", headers=h.admin)).json()
            assert task["status"] == "failure" and task["result"] is None
            assert "restarted" in task["message"] and was in task["message"]
            assert task["expires_at"] is not None
        assert (await h.http.get(f"/image/v2/images/{image_id}", headers=h.admin)).status == 404


def sdk_import(endpoint: str, body: dict) -> str:
    conn = openstack.connect(auth_type="admin_token", auth={"token": "admin", "endpoint": endpoint},
                             image_api_version="2")
    made = conn.image.create_task(**body)
    assert made.type == "import"
    return made.id


def sdk_look(endpoint: str, task_id: str) -> tuple[str, list[str], str, int]:
    conn = openstack.connect(auth_type="admin_token", auth={"token": "admin", "endpoint": endpoint},
                             image_api_version="2")
    shown = conn.image.get_task(task_id)
    image = conn.image.get_image(shown.result["image_id"])
    return shown.status, [t.id for t in conn.image.tasks()], image.status, image.size


async def test_openstacksdk_creates_lists_and_shows_tasks(pool, tmp_path, origin):
    async with running(pool, ["image"], tmp_path) as h:
        endpoint = str(h.http.make_url("/image/v2"))
        task_id = await asyncio.to_thread(sdk_import, endpoint, _task(str(origin.make_url("/disk.qcow2"))))
        await h.roles["image"].work.idle()
        seen = await asyncio.to_thread(sdk_look, endpoint, task_id)
        assert seen == ("success", [task_id], "active", len(DATA))
