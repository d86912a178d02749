"""Resource classes, traits, and a provider's traits and aggregates, table-driven in the
spirit of placement's gabbi files: each row a request and what must come back."""

from __future__ import annotations

import uuid

import pytest

from tests.harness import running

AGG1, AGG2 = str(uuid.uuid4()), str(uuid.uuid4())


@pytest.fixture
async def placement(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        rp = str(uuid.uuid4())
        resp = await h.http.post("/placement/resource_providers", headers={
            **h.admin, "OpenStack-API-Version": "placement 1.20"}, json={"name": "rp", "uuid": rp})
        assert resp.status == 200
        h.rp = rp
        yield h


async def call(h, method, path, version="1.39", body=None, who="admin"):
    headers = {**getattr(h, who), "OpenStack-API-Version": f"placement {version}"}
    resp = await h.http.request(method, "/placement" + path.replace("{rp}", h.rp), headers=headers,
                                json=body)
    data = await resp.json() if resp.content_type == "application/json" else None
    return resp.status, data


# (method, path, version, body, status, check on the JSON body or None)
STORY = [
    # resource classes
    ("GET", "/resource_classes", "1.2", None, 200,
     lambda b: {"VCPU", "MEMORY_MB", "DISK_GB"} <= {c["name"] for c in b["resource_classes"]}),
    ("GET", "/resource_classes", "1.1", None, 404, None),
    ("POST", "/resource_classes", "1.2", {"name": "CUSTOM_GPU"}, 201, None),
    ("POST", "/resource_classes", "1.2", {"name": "CUSTOM_GPU"}, 409,
     lambda b: b["errors"][0]["code"] == "placement.duplicate_name"),
    ("POST", "/resource_classes", "1.2", {"name": "GPU"}, 400, None),
    ("POST", "/resource_classes", "1.2", {"name": "custom_lower"}, 400, None),
    ("GET", "/resource_classes/CUSTOM_GPU", "1.2", None, 200, lambda b: b["name"] == "CUSTOM_GPU"),
    ("GET", "/resource_classes/VCPU", "1.2", None, 200, None),
    ("GET", "/resource_classes/CUSTOM_NONE", "1.2", None, 404, None),
    ("PUT", "/resource_classes/CUSTOM_FPGA", "1.7", None, 201, None),
    ("PUT", "/resource_classes/CUSTOM_FPGA", "1.7", None, 204, None),
    ("PUT", "/resource_classes/VCPU", "1.7", None, 400, None),
    ("DELETE", "/resource_classes/VCPU", "1.2", None, 400, None),
    # an inventory of a custom class keeps it from being deleted
    ("PUT", "/resource_providers/{rp}/inventories", "1.39",
     {"resource_provider_generation": 0, "inventories": {"CUSTOM_GPU": {"total": 2}}}, 200, None),
    ("DELETE", "/resource_classes/CUSTOM_GPU", "1.2", None, 409,
     lambda b: b["errors"][0]["code"] == "placement.resource_class.inuse"),
    ("DELETE", "/resource_classes/CUSTOM_FPGA", "1.2", None, 204, None),
    ("DELETE", "/resource_classes/CUSTOM_FPGA", "1.2", None, 404, None),
    # traits
    ("GET", "/traits", "1.5", None, 404, None),
    ("GET", "/traits?name=startswith:HW_CPU_X86_AVX", "1.6", None, 200,
     lambda b: "HW_CPU_X86_AVX2" in b["traits"] and all(t.startswith("HW_CPU_X86_AVX") for t in b["traits"])),
    ("GET", "/traits/HW_CPU_X86_AVX2", "1.6", None, 204, None),
    ("PUT", "/traits/CUSTOM_FAST", "1.6", None, 201, None),
    ("PUT", "/traits/CUSTOM_FAST", "1.6", None, 204, None),
    ("PUT", "/traits/FAST", "1.6", None, 400, None),
    ("GET", "/traits?name=in:CUSTOM_FAST,HW_CPU_X86_AVX2,NOPE", "1.6", None, 200,
     lambda b: b["traits"] == ["CUSTOM_FAST", "HW_CPU_X86_AVX2"]),
    ("GET", "/traits?name=CUSTOM_FAST", "1.6", None, 400, None),
    ("GET", "/traits?associated=maybe", "1.6", None, 400, None),
    # a provider's traits, with generations
    ("GET", "/resource_providers/{rp}/traits", "1.6", None, 200,
     lambda b: b == {"traits": [], "resource_provider_generation": 1}),
    ("PUT", "/resource_providers/{rp}/traits", "1.6",
     {"traits": ["CUSTOM_FAST", "HW_CPU_X86_AVX2"], "resource_provider_generation": 0}, 409,
     lambda b: b["errors"][0]["code"] == "placement.concurrent_update"),
    ("PUT", "/resource_providers/{rp}/traits", "1.6",
     {"traits": ["CUSTOM_NOPE"], "resource_provider_generation": 1}, 400, None),
    ("PUT", "/resource_providers/{rp}/traits", "1.6",
     {"traits": ["CUSTOM_FAST", "HW_CPU_X86_AVX2"], "resource_provider_generation": 1}, 200,
     lambda b: b == {"traits": ["CUSTOM_FAST", "HW_CPU_X86_AVX2"], "resource_provider_generation": 2}),
    ("GET", "/traits?associated=true", "1.6", None, 200,
     lambda b: b["traits"] == ["CUSTOM_FAST", "HW_CPU_X86_AVX2"]),
    ("DELETE", "/traits/CUSTOM_FAST", "1.6", None, 409,
     lambda b: b["errors"][0]["code"] == "placement.trait.inuse"),
    ("DELETE", "/traits/HW_CPU_X86_AVX2", "1.6", None, 400, None),
    ("GET", "/allocation_candidates?resources=CUSTOM_GPU:1&required=CUSTOM_FAST", "1.17", None, 200,
     lambda b: len(b["allocation_requests"]) == 1),
    ("GET", "/allocation_candidates?resources=CUSTOM_GPU:1&required=!CUSTOM_FAST", "1.22", None, 200,
     lambda b: b["allocation_requests"] == []),
    ("DELETE", "/resource_providers/{rp}/traits", "1.6", None, 204, None),
    ("DELETE", "/traits/CUSTOM_FAST", "1.6", None, 204, None),
    ("GET", "/traits/CUSTOM_FAST", "1.6", None, 404, None),
    # aggregates: a plain list before 1.19, with generations after
    ("GET", "/resource_providers/{rp}/aggregates", "1.1", None, 200, lambda b: b == {"aggregates": []}),
    # (before 1.19 a PUT neither checks nor bumps the generation, as upstream)
    ("PUT", "/resource_providers/{rp}/aggregates", "1.1", [AGG1], 200, lambda b: b == {"aggregates": [AGG1]}),
    ("GET", "/resource_providers/{rp}/aggregates", "1.19", None, 200,
     lambda b: b == {"aggregates": [AGG1], "resource_provider_generation": 3}),
    ("PUT", "/resource_providers/{rp}/aggregates", "1.19",
     {"aggregates": [AGG1, AGG2], "resource_provider_generation": 99}, 409, None),
    ("PUT", "/resource_providers/{rp}/aggregates", "1.19",
     {"aggregates": [AGG2, AGG1], "resource_provider_generation": 3}, 200,
     lambda b: b["aggregates"] == [AGG2, AGG1] and b["resource_provider_generation"] == 4),
    ("PUT", "/resource_providers/{rp}/aggregates", "1.19",
     {"aggregates": ["not-a-uuid"], "resource_provider_generation": 4}, 400,
     lambda b: "is not a 'uuid'" in b["errors"][0]["detail"]),
    ("GET", f"/resource_providers?member_of={AGG2}", "1.3", None, 200,
     lambda b: len(b["resource_providers"]) == 1),
    ("GET", f"/allocation_candidates?resources=CUSTOM_GPU:1&member_of=!{AGG1}", "1.32", None, 200,
     lambda b: b["allocation_requests"] == []),
    ("GET", "/resource_providers/00000000-0000-0000-0000-000000000000/traits", "1.6", None, 404, None),
    ("GET", "/resource_providers/00000000-0000-0000-0000-000000000000/aggregates", "1.1", None, 404, None),
    # members of a project may not touch any of it
    ("GET", "/traits", "1.6", None, 403, None),
]


async def test_catalog_story(placement):
    h = placement
    for i, (method, path, version, body, status, check) in enumerate(STORY):
        who = "alice" if status == 403 else "admin"
        got, data = await call(h, method, path, version, body, who)
        assert got == status, (i, method, path, version, got, data)
        if check is not None:
            assert check(data), (i, method, path, data)


async def test_inventories_refuse_unknown_classes_and_go_one_class_at_a_time(placement):
    h = placement
    got, data = await call(h, "PUT", "/resource_providers/{rp}/inventories", "1.39", {
        "resource_provider_generation": 0, "inventories": {"CUSTOM_UNKNOWN": {"total": 1}}})
    assert got == 400 and "CUSTOM_UNKNOWN" in data["errors"][0]["detail"], data
    # PUT changes a class the provider has; one it lacks is POSTed (upstream refuses the PUT)
    got, data = await call(h, "PUT", "/resource_providers/{rp}/inventories/VCPU", "1.39",
                           {"resource_provider_generation": 0, "total": 8, "allocation_ratio": 2.0})
    assert got == 400 and "No inventory record with resource class" in data["errors"][0]["detail"], data
    got, data = await call(h, "POST", "/resource_providers/{rp}/inventories", "1.39",
                           {"resource_class": "VCPU", "total": 8, "allocation_ratio": 2.0})
    assert got == 201 and data["total"] == 8 and data["resource_provider_generation"] == 1, data
    got, data = await call(h, "PUT", "/resource_providers/{rp}/inventories/VCPU", "1.39",
                           {"resource_provider_generation": 0, "total": 8})
    assert got == 409, data
    got, data = await call(h, "POST", "/resource_providers/{rp}/inventories", "1.39",
                           {"resource_class": "MEMORY_MB", "total": 1024})
    assert got == 201, data
    got, data = await call(h, "PUT", "/resource_providers/{rp}/inventories/VCPU", "1.39",
                           {"resource_provider_generation": 2, "total": 8, "allocation_ratio": 2.0})
    assert got == 200 and data["resource_provider_generation"] == 3, data
    got, data = await call(h, "GET", "/resource_providers/{rp}/inventories/VCPU")
    assert (got, data["allocation_ratio"], data["resource_provider_generation"]) == (200, 2.0, 3), data
    got, data = await call(h, "GET", "/resource_providers/{rp}/inventories")
    assert set(data["inventories"]) == {"VCPU", "MEMORY_MB"}
    assert (await call(h, "DELETE", "/resource_providers/{rp}/inventories/VCPU"))[0] == 204
    assert (await call(h, "DELETE", "/resource_providers/{rp}/inventories/VCPU"))[0] == 404
    assert (await call(h, "GET", "/resource_providers/{rp}/inventories/VCPU"))[0] == 404
    assert (await call(h, "DELETE", "/resource_providers/{rp}/inventories", "1.4"))[0] == 405
    assert (await call(h, "DELETE", "/resource_providers/{rp}/inventories", "1.5"))[0] == 204
    got, data = await call(h, "GET", "/resource_providers/{rp}/inventories")
    assert data["inventories"] == {}
