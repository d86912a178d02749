"""The metadata definitions catalog (/v2/metadefs) as Glance serves it: admins build
namespaces of properties, objects and tags tied to resource types; everyone reads the
public ones and their own; a protected namespace is not deleted; the schema documents under
/v2/schemas/metadefs/ describe it all."""

from __future__ import annotations

import pytest

from tests.harness import running

NS = "/image/v2/metadefs/namespaces"


@pytest.fixture
async def h(pool, tmp_path):
    async with running(pool, ["image"], tmp_path) as harness:
        yield harness


async def call(h, method, path, headers, body=None):
    resp = await h.http.request(method, path, headers=headers, json=body)
    text = await resp.text()
    return resp.status, (await resp.json() if text and resp.content_type == "application/json" else text)


async def test_namespace_life(h):
    status, body = await call(h, "GET", "/image/v2/metadefs/resource_types", h.alice)
    assert status == 200 and "OS::Glance::Image" in [t["name"] for t in body["resource_types"]]

    ns = {"namespace": "Tempest-ns", "display_name": "T", "description": "d", "visibility": "public",
          "protected": True, "resource_type_associations": [{"name": "OS::Glance::Image", "prefix": "hw_"}]}
    assert (await call(h, "POST", NS, h.alice, ns))[0] == 403       # admins only
    status, made = await call(h, "POST", NS, h.admin, ns)
    assert status == 201 and made["namespace"] == "Tempest-ns" and made["self"] == "/v2/metadefs/namespaces/Tempest-ns"
    assert made["resource_type_associations"][0]["prefix"] == "hw_"
    assert (await call(h, "POST", NS, h.admin, ns))[0] == 409
    assert (await call(h, "POST", NS, h.admin, {"visibility": "public"}))[0] == 400

    status, body = await call(h, "GET", NS, h.alice)    # public: everyone sees it
    assert "Tempest-ns" in [n["namespace"] for n in body["namespaces"]]
    status, body = await call(h, "GET", f"{NS}?resource_types=OS::Nova::Flavor", h.alice)
    assert body["namespaces"] == []
    assert (await call(h, "DELETE", f"{NS}/Tempest-ns", h.admin))[0] == 403   # protected

    status, body = await call(h, "PUT", f"{NS}/Tempest-ns", h.admin,
                              {"namespace": "Tempest-ns", "visibility": "private", "protected": False})
    assert status == 200 and body["visibility"] == "private" and body["protected"] is False
    assert (await call(h, "GET", f"{NS}/Tempest-ns", h.alice))[0] == 404   # private now, and not hers
    assert (await call(h, "DELETE", f"{NS}/Tempest-ns", h.admin))[0] == 204
    assert (await call(h, "GET", f"{NS}/Tempest-ns", h.admin))[0] == 404


async def test_objects_properties_tags_and_associations(h):
    assert (await call(h, "POST", NS, h.admin, {"namespace": "ns1"}))[0] == 201
    # objects
    status, obj = await call(h, "POST", f"{NS}/ns1/objects", h.admin,
                             {"name": "obj1", "properties": {"p": {"title": "P", "type": "string"}}})
    assert status == 201 and obj["self"] == "/v2/metadefs/namespaces/ns1/objects/obj1"
    status, obj = await call(h, "PUT", f"{NS}/ns1/objects/obj1", h.admin, {"name": "obj2"})
    assert status == 200 and obj["name"] == "obj2"
    status, body = await call(h, "GET", f"{NS}/ns1/objects", h.alice)
    assert status == 404                                   # private namespace of the admin's
    status, body = await call(h, "GET", f"{NS}/ns1/objects", h.admin)
    assert [o["name"] for o in body["objects"]] == ["obj2"]
    assert (await call(h, "GET", f"{NS}/ns1/objects/obj1", h.admin))[0] == 404
    # properties, named like resource types too
    prop = {"name": "OS::Glance::Image", "title": "t", "type": "string", "enum": ["kvm", "qemu"]}
    status, body = await call(h, "POST", f"{NS}/ns1/properties", h.admin, prop)
    assert status == 201 and body["title"] == "t"
    assert (await call(h, "POST", f"{NS}/ns1/properties", h.admin, {"name": "x", "type": "string"}))[0] == 400
    status, body = await call(h, "GET", f"{NS}/ns1/properties/OS::Glance::Image", h.admin)
    assert body["name"] == "OS::Glance::Image" and body["enum"] == ["kvm", "qemu"]
    status, body = await call(h, "PUT", f"{NS}/ns1/properties/OS::Glance::Image", h.admin, {**prop, "title": "u"})
    assert status == 200 and body["title"] == "u"
    status, body = await call(h, "GET", f"{NS}/ns1/properties", h.admin)
    assert body["properties"]["OS::Glance::Image"]["title"] == "u"
    assert (await call(h, "DELETE", f"{NS}/ns1/properties/OS::Glance::Image", h.admin))[0] == 204
    # tags: a list replaces them all, one more by URL, renamed, all deleted
    status, body = await call(h, "POST", f"{NS}/ns1/tags", h.admin, {"tags": [{"name": "a"}, {"name": "b"}]})
    assert status == 201 and [t["name"] for t in body["tags"]] == ["a", "b"]
    assert (await call(h, "POST", f"{NS}/ns1/tags/c", h.admin))[0] == 201
    status, body = await call(h, "PUT", f"{NS}/ns1/tags/c", h.admin, {"name": "d"})
    assert status == 200 and body["name"] == "d"
    status, body = await call(h, "GET", f"{NS}/ns1", h.admin)
    assert sorted(t["name"] for t in body["tags"]) == ["a", "b", "d"] and body["objects"][0]["name"] == "obj2"
    assert (await call(h, "DELETE", f"{NS}/ns1/tags", h.admin))[0] == 204
    assert (await call(h, "GET", f"{NS}/ns1/tags", h.admin))[1] == {"tags": []}
    # resource type associations
    status, body = await call(h, "POST", f"{NS}/ns1/resource_types", h.admin, {"name": "OS::Nova::Flavor"})
    assert status == 201 and body["name"] == "OS::Nova::Flavor"
    status, body = await call(h, "GET", f"{NS}/ns1/resource_types", h.admin)
    assert [a["name"] for a in body["resource_type_associations"]] == ["OS::Nova::Flavor"]
    assert (await call(h, "DELETE", f"{NS}/ns1/resource_types/OS::Nova::Flavor", h.admin))[0] == 204
    assert (await call(h, "DELETE", f"{NS}/ns1/resource_types/OS::Nova::Flavor", h.admin))[0] == 404
    assert (await call(h, "DELETE", f"{NS}/ns1", h.admin))[0] == 204


@pytest.mark.parametrize("name,title", [
    ("namespace", "namespace"), ("namespaces", "namespaces"), ("resource_type", "resource_type_association"),
    ("resource_types", "resource_type_associations"), ("object", "object"), ("objects", "objects"),
    ("property", "property"), ("properties", "properties"), ("tag", "tag"), ("tags", "tags")])
async def test_schema_documents(h, name, title):
    status, body = await call(h, "GET", f"/image/v2/schemas/metadefs/{name}", h.alice)
    assert status == 200 and body["name"] == title
