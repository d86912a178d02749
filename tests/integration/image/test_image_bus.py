"""What other roles get when they ask the image service about an image over the bus."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest

from nova_async.common import errors
from nova_async.image.client import ImageClient
from tests.harness import running


async def test_get_image_over_the_bus(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as h:
        client = ImageClient(h.bus)
        resp = await h.http.post("/image/v2/images", headers=h.alice, json={
            "name": "tiny", "disk_format": "raw", "container_format": "bare", "min_ram": 64,
            "kernel_id": "k-1", "visibility": "private"})
        image = await resp.json()

        info = await client.get(image["id"], "proj-a")
        assert (info.name, info.status, info.path, info.min_ram) == ("tiny", "queued", "", 64)
        assert info.properties == {"kernel_id": "k-1"}

        await h.http.put(f"/image/v2/images/{image['id']}/file", data=io.BytesIO(b"disk" * 100),
                         headers={**h.alice, "Content-Type": "application/octet-stream"})
        info = await client.get(image["id"], "proj-a")
        assert info.status == "active" and info.size == 400
        assert Path(info.path).is_absolute() and Path(info.path).read_bytes() == b"disk" * 100

        # Another project cannot use a private image, unless it asks as an admin.
        with pytest.raises(errors.NotFound, match=image["id"]):
            await client.get(image["id"], "proj-b")
        assert (await client.get(image["id"], "proj-b", is_admin=True)).id == image["id"]
        for missing in (str(uuid.uuid4()), "cirros"):
            with pytest.raises(errors.NotFound):
                await client.get(missing, "proj-a")


async def test_public_images_are_usable_by_every_project(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as h:
        resp = await h.http.post("/image/v2/images", headers=h.admin,
                                 json={"name": "pub", "visibility": "public"})
        image = await resp.json()
        info = await ImageClient(h.bus).get(image["id"], "proj-b")
        assert info.name == "pub"
