"""0048: servers of the demo image keep their config drive once drives are made only when
due. A site that registered the demo guest before learns that the image makes the drive
mandatory, and so do the specs of servers already booted from it (a rebuild reads those);
nothing else changes, and a property someone set by hand stays."""

import json
import uuid

from nova_async.db.migrate import migrate
from nova_async.image import demo
from tests.integration.db.test_migrate import new_database, replay  # noqa: F401 (fixture)

DEMO = demo.image_id(demo.NAME)


async def add_image(conn, image_id: str, name: str, properties: dict) -> None:
    await conn.execute("INSERT INTO images (id, name, status, disk_format, container_format, visibility,"
                       " properties) VALUES ($1, $2, 'active', 'raw', 'bare', 'public', $3)",
                       image_id, name, json.dumps(properties))


async def add_instance(conn, image_ref: str, spec: dict) -> str:
    instance_uuid = str(uuid.uuid4())
    await conn.execute(
        "INSERT INTO instances (uuid, display_name, project_id, user_id, reservation_id, flavor, image_ref,"
        " request_spec, vm_state) VALUES ($1, 'vm', 'proj', 'user', 'r-1', '{}', $2, $3, 'active')",
        instance_uuid, image_ref, json.dumps(spec))
    return instance_uuid


async def test_the_demo_image_and_its_servers_make_the_drive_mandatory(new_database):  # noqa: F811
    site = await new_database()
    await replay(site, upto=43)
    kernel_ids = {"kernel_id": "k", "ramdisk_id": "r"}
    await add_image(site, DEMO, demo.NAME, kernel_ids)
    other, chosen = str(uuid.uuid4()), str(uuid.uuid4())
    await add_image(site, other, "mine", {"kernel_id": "k"})
    await add_image(site, chosen, "chosen", {"img_config_drive": "optional"})
    booted = await add_instance(site, DEMO, {"image_id": DEMO, "image_properties": kernel_ids})
    elsewhere = await add_instance(site, other, {"image_id": other, "image_properties": {"kernel_id": "k"}})

    await migrate(site)

    props = {str(r["id"]): json.loads(r["properties"]) if isinstance(r["properties"], str) else r["properties"]
             for r in await site.fetch("SELECT id, properties FROM images")}
    assert props[DEMO] == {**kernel_ids, "img_config_drive": "mandatory"}
    assert props[other] == {"kernel_id": "k"}
    assert props[chosen] == {"img_config_drive": "optional"}
    specs = {str(r["uuid"]): json.loads(r["request_spec"]) if isinstance(r["request_spec"], str)
             else r["request_spec"] for r in await site.fetch("SELECT uuid, request_spec FROM instances")}
    assert specs[booted]["image_properties"] == {**kernel_ids, "img_config_drive": "mandatory"}
    assert specs[elsewhere]["image_properties"] == {"kernel_id": "k"}
