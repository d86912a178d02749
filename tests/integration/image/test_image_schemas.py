"""GET /v2/schemas/* and /v2/info/import: the documents python-glanceclient and Tempest
fetch. An image the API renders must validate against the published image schema, as
glanceclient's model checks."""

from __future__ import annotations

import jsonschema
import pytest

from tests.harness import running


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def _schema(h, name):
    resp = await h.http.get(f"/image/v2/schemas/{name}", headers=h.alice)
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_rendered_images_validate_against_the_published_schemas(h):
    resp = await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "cirros", "disk_format": "qcow2", "container_format": "bare", "colour": "red",
        "tags": ["a"]})
    image = await resp.json()
    schema = await _schema(h, "image")
    assert schema["name"] == "image"
    assert set(image) - {"colour"} <= set(schema["properties"])
    jsonschema.validate(image, schema)

    listing = await (await h.http.get("/image/v2/images", headers=h.alice)).json()
    images_schema = await _schema(h, "images")
    assert images_schema["name"] == "images"
    jsonschema.validate(listing, images_schema)


async def test_member_schemas_and_an_unknown_one(h):
    member = await _schema(h, "member")
    assert member["properties"]["status"]["enum"] == ["pending", "accepted", "rejected"]
    assert set(member["properties"]) == {"created_at", "image_id", "member_id", "schema",
                                         "status", "updated_at"}
    members = await _schema(h, "members")
    assert members["properties"]["members"]["items"] == member
    resp = await h.http.get("/image/v2/schemas/flavour", headers=h.alice)
    assert resp.status == 404


async def test_import_info_declares_no_import_methods(h):
    # Data only arrives by PUT …/file here; there is no /import call to offer.
    resp = await h.http.get("/image/v2/info/import", headers=h.alice)
    assert resp.status == 200
    assert (await resp.json())["import-methods"]["value"] == []
    resp = await h.http.post("/image/v2/images/00000000-0000-0000-0000-000000000000/import",
                             json={"method": {"name": "glance-direct"}}, headers=h.alice)
    assert resp.status in (404, 405)
