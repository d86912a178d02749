"""Placement's HTTP API, driven like placement's own gabbi files: each story is a list of
requests run in order against one running placement, each with the answer it must get.

`{rp1}`-style placeholders are filled in from the story's fixtures; an expected body is a
subset of the actual one (dicts may have more keys, lists must match item by item), ABSENT
says a key must not be there, ANY accepts whatever value."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from nova_async.placement import messages as m
from nova_async.placement.client import PlacementClient
from tests.harness import running

ANY = object()
ABSENT = object()


def fill(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {fill(k, names): fill(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    return value


def assert_matches(expected: Any, actual: Any, where: str = "body") -> None:
    if expected is ANY:
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        for key, want in expected.items():
            if want is ABSENT:
                assert key not in actual, f"{where}.{key} should be absent, got {actual[key]!r}"
                continue
            assert key in actual, f"{where}.{key} missing from {sorted(actual)}"
            assert_matches(want, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), \
            f"{where}: expected {len(expected)} items, got {actual!r}"
        for i, (want, got) in enumerate(zip(expected, actual)):
            assert_matches(want, got, f"{where}[{i}]")
    else:
        assert expected == actual, f"{where}: expected {expected!r}, got {actual!r}"


async def play(h, story: list[dict], names: dict[str, str]) -> None:
    for case in story:
        headers = dict(getattr(h, case.get("as", "admin"))) if case.get("as", "admin") else {}
        version = case.get("version", "1.39")
        if version:
            headers["OpenStack-API-Version"] = f"placement {version}"
        resp = await h.http.request(case.get("method", "GET"), fill(case["url"], names),
                                    headers=headers, json=fill(case.get("data"), names)
                                    if "data" in case else None)
        text = await resp.text()
        label = f"{case['name']}: {case.get('method', 'GET')} {case['url']}"
        assert resp.status == case.get("status", 200), f"{label} → {resp.status} {text}"
        for header, want in case.get("headers", {}).items():
            got = resp.headers.get(header)
            if header == "Location":  # absolute, ending in the path (see handlers/common.absolute)
                assert got.startswith("http://") and got.endswith(fill(want, names)), f"{label}: {got!r}"
            else:
                assert got == fill(want, names), f"{label}: header {header} = {got!r}"
        if "body" in case:
            assert_matches(fill(case["body"], names), await resp.json(), label)
        if resp.status >= 400:
            body = await resp.json()
            fault = body["errors"][0]
            assert fault["status"] == resp.status and fault["request_id"].startswith("req-"), label
            assert fault["code"].startswith("placement."), label


def fault(status: int, code: str = "placement.undefined_code", **more: Any) -> dict:
    return {"errors": [{"status": status, "code": code, **more}]}


def rp_body(name: str, rp: str) -> dict:
    return {"uuid": rp, "name": name, "generation": ANY, "parent_provider_uuid": None,
            "root_provider_uuid": rp, "links": [
                {"rel": "self", "href": f"/placement/resource_providers/{rp}"},
                {"rel": "inventories", "href": f"/placement/resource_providers/{rp}/inventories"},
                {"rel": "usages", "href": f"/placement/resource_providers/{rp}/usages"},
                {"rel": "aggregates", "href": f"/placement/resource_providers/{rp}/aggregates"},
                {"rel": "traits", "href": f"/placement/resource_providers/{rp}/traits"},
                {"rel": "allocations", "href": f"/placement/resource_providers/{rp}/allocations"}]}


READING = [
    # version negotiation, as osc-placement does it
    dict(name="version document is public", url="/placement/", as_=None, version=None,
         body={"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0",
                             "status": "CURRENT", "links": ANY}]}),
    dict(name="osc-placement's probe at 1.29", url="/placement/", version="1.29",
         headers={"OpenStack-API-Version": "placement 1.29", "Vary": "openstack-api-version"}),
    dict(name="too new a version", url="/placement/", version="1.40", status=406,
         body=fault(406, max_version="1.39", min_version="1.0",
                    detail="Unacceptable version header: 1.40")),
    dict(name="latest is 1.39", url="/placement/resource_providers", version="latest",
         headers={"OpenStack-API-Version": "placement 1.39"}),
    dict(name="no header means 1.0", url="/placement/resource_providers", version=None,
         headers={"OpenStack-API-Version": "placement 1.0"},
         body={"resource_providers": [{"uuid": "{rp1}", "parent_provider_uuid": ABSENT}, ANY]}),
    dict(name="garbage version", url="/placement/", version="1.x", status=400, body=fault(400)),
    # who may ask
    dict(name="no token", url="/placement/resource_providers", as_=None, status=401, body=fault(401)),
    dict(name="members may not", url="/placement/resource_providers", as_="alice", status=403,
         body=fault(403)),
    # providers
    dict(name="list", url="/placement/resource_providers",
         body={"resource_providers": [rp_body("host-a", "{rp1}"), rp_body("host-b", "{rp2}")]}),
    dict(name="list by name", url="/placement/resource_providers?name=host-b",
         body={"resource_providers": [rp_body("host-b", "{rp2}")]}),
    dict(name="list by uuid", url="/placement/resource_providers?uuid={rp1}",
         body={"resource_providers": [{"uuid": "{rp1}", "name": "host-a"}]}),
    dict(name="list in_tree", url="/placement/resource_providers?in_tree={rp2}",
         body={"resource_providers": [{"uuid": "{rp2}"}]}),
    dict(name="list by nobody's name", url="/placement/resource_providers?name=nope",
         body={"resource_providers": []}),
    dict(name="list by a bad uuid", url="/placement/resource_providers?uuid=nope", status=400,
         body=fault(400, code="placement.query.bad_value")),
    dict(name="unknown filter", url="/placement/resource_providers?colour=red", status=400),
    dict(name="in_tree before 1.14", url="/placement/resource_providers?in_tree={rp1}",
         version="1.13", status=400),
    dict(name="show", url="/placement/resource_providers/{rp1}", body=rp_body("host-a", "{rp1}")),
    dict(name="show a missing one", url="/placement/resource_providers/{missing}", status=404,
         body=fault(404, code="placement.resource_provider.not_found")),
    dict(name="show a malformed uuid", url="/placement/resource_providers/nope", status=404),
    dict(name="method not allowed", method="PATCH", url="/placement/resource_providers", status=405),
    dict(name="unknown url", url="/placement/nothing-here", status=404),
    # inventories and usages
    dict(name="inventories", url="/placement/resource_providers/{rp1}/inventories",
         body={"resource_provider_generation": ANY, "inventories": {
             "VCPU": {"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1,
                      "allocation_ratio": 4.0},
             "MEMORY_MB": {"total": 4096, "reserved": 512, "min_unit": 1, "max_unit": 4096,
                           "step_size": 1, "allocation_ratio": 1.0}}}),
    dict(name="inventories of a missing one", url="/placement/resource_providers/{missing}/inventories",
         status=404),
    dict(name="usages", url="/placement/resource_providers/{rp1}/usages",
         body={"resource_provider_generation": ANY, "usages": {"VCPU": 2, "MEMORY_MB": 1024}}),
    dict(name="usages of an idle one", url="/placement/resource_providers/{rp2}/usages",
         body={"usages": {"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}}),
    # allocation candidates
    dict(name="candidates", url="/placement/allocation_candidates?resources=VCPU:1,MEMORY_MB:512",
         body={"allocation_requests": [
                   {"allocations": {"{rp1}": {"resources": {"VCPU": 1, "MEMORY_MB": 512}}},
                    "mappings": {"": ["{rp1}"]}},
                   {"allocations": {"{rp2}": {"resources": {"VCPU": 1, "MEMORY_MB": 512}}},
                    "mappings": {"": ["{rp2}"]}}],
               "provider_summaries": {
                   "{rp1}": {"resources": {"VCPU": {"capacity": 32, "used": 2},
                                           "MEMORY_MB": {"capacity": 3584, "used": 1024}},
                             "traits": [], "parent_provider_uuid": None, "root_provider_uuid": "{rp1}"},
                   "{rp2}": {"resources": {"VCPU": {"capacity": 16, "used": 0},
                                           "MEMORY_MB": {"capacity": 8192, "used": 0},
                                           "DISK_GB": {"capacity": 100, "used": 0}}}}}),
    dict(name="candidates at 1.29, as osc-placement asks",
         url="/placement/allocation_candidates?resources=DISK_GB:10", version="1.29",
         body={"allocation_requests": [{"allocations": {"{rp2}": {"resources": {"DISK_GB": 10}}},
                                        "mappings": ABSENT}],
               "provider_summaries": {"{rp2}": {"root_provider_uuid": "{rp2}"}}}),
    dict(name="candidates at 1.10, list-shaped and requested classes only",
         url="/placement/allocation_candidates?resources=DISK_GB:10", version="1.10",
         body={"allocation_requests": [{"allocations": [
                   {"resource_provider": {"uuid": "{rp2}"}, "resources": {"DISK_GB": 10}}]}],
               "provider_summaries": {"{rp2}": {"resources": {"DISK_GB": {"capacity": 100, "used": 0},
                                                              "VCPU": ABSENT},
                                                "traits": ABSENT}}}),
    dict(name="candidates need 1.10", url="/placement/allocation_candidates?resources=VCPU:1",
         version="1.9", status=404),
    dict(name="candidates limited", url="/placement/allocation_candidates?resources=VCPU:1&limit=1",
         body={"allocation_requests": [ANY], "provider_summaries": {"{rp1}": ANY}}),
    dict(name="no room anywhere", url="/placement/allocation_candidates?resources=MEMORY_MB:9000",
         body={"allocation_requests": [], "provider_summaries": {}}),
    dict(name="full is full", url="/placement/allocation_candidates?resources=MEMORY_MB:2561,VCPU:1",
         body={"allocation_requests": [{"allocations": {"{rp2}": ANY}}]}),
    dict(name="badly formed resources", url="/placement/allocation_candidates?resources=VCPU",
         status=400, body=fault(400, code="placement.query.bad_value")),
    dict(name="zero is not an amount", url="/placement/allocation_candidates?resources=VCPU:0",
         status=400),
    dict(name="resources are required", url="/placement/allocation_candidates", status=400),
    # allocations
    dict(name="a consumer's allocations", url="/placement/allocations/{consumer}",
         body={"allocations": {"{rp1}": {"generation": ANY, "resources": {"VCPU": 2, "MEMORY_MB": 1024}}},
               "project_id": "proj-a", "user_id": "alice", "consumer_generation": 1}),
    dict(name="allocations before 1.12", url="/placement/allocations/{consumer}", version="1.11",
         body={"allocations": {"{rp1}": ANY}, "project_id": ABSENT}),
    dict(name="an unknown consumer has none", url="/placement/allocations/{missing}",
         body={"allocations": {}, "project_id": ABSENT}),
]


WRITING = [
    dict(name="create", method="POST", url="/placement/resource_providers",
         data={"name": "host-c", "uuid": "{rp3}"},
         body=rp_body("host-c", "{rp3}") | {"generation": 0},
         headers={"Location": "/placement/resource_providers/{rp3}"}),
    dict(name="create before 1.20 answers 201 without a body", method="POST",
         url="/placement/resource_providers", version="1.19", data={"name": "host-d"}, status=201),
    dict(name="create a child", method="POST", url="/placement/resource_providers",
         data={"name": "host-c-gpu", "uuid": "{child}", "parent_provider_uuid": "{rp3}"},
         body={"parent_provider_uuid": "{rp3}", "root_provider_uuid": "{rp3}"}),
    dict(name="the tree", url="/placement/resource_providers?in_tree={child}",
         body={"resource_providers": [{"uuid": "{rp3}"}, {"uuid": "{child}"}]}),
    dict(name="a duplicate name", method="POST", url="/placement/resource_providers",
         data={"name": "host-c"}, status=409, body=fault(409, code="placement.duplicate_name")),
    dict(name="a body that is not an object", method="POST", url="/placement/resource_providers",
         data="nope", status=400),
    dict(name="an unknown field", method="POST", url="/placement/resource_providers",
         data={"name": "x", "colour": "red"}, status=400),
    dict(name="set inventories", method="PUT", url="/placement/resource_providers/{rp3}/inventories",
         data={"resource_provider_generation": 0,
               "inventories": {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 2048, "reserved": 256}}},
         body={"resource_provider_generation": 1, "inventories": {
             "VCPU": {"total": 4, "reserved": 0, "max_unit": 2147483647, "allocation_ratio": 1.0},
             "MEMORY_MB": {"total": 2048, "reserved": 256}}}),
    dict(name="a stale generation", method="PUT", url="/placement/resource_providers/{rp3}/inventories",
         data={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
         status=409, body=fault(409, code="placement.concurrent_update")),
    dict(name="reserved above total", method="PUT", url="/placement/resource_providers/{rp3}/inventories",
         data={"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 8, "reserved": 9}}},
         status=400),
    dict(name="claim with PUT", method="PUT", url="/placement/allocations/{consumer2}",
         data={"allocations": {"{rp3}": {"resources": {"VCPU": 2, "MEMORY_MB": 1024}}},
               "project_id": "proj-b", "user_id": "bob", "consumer_generation": None,
               "consumer_type": "INSTANCE"}, status=204),
    dict(name="see it", url="/placement/allocations/{consumer2}",
         body={"allocations": {"{rp3}": {"generation": 2, "resources": {"VCPU": 2, "MEMORY_MB": 1024}}},
               "consumer_generation": 1, "consumer_type": "INSTANCE"}),
    dict(name="a claim that does not fit", method="PUT", url="/placement/allocations/{consumer3}",
         data={"allocations": {"{rp3}": {"resources": {"VCPU": 3}}},
               "project_id": "proj-b", "user_id": "bob", "consumer_generation": None,
               "consumer_type": "INSTANCE"}, status=409),
    dict(name="a stale consumer generation", method="PUT", url="/placement/allocations/{consumer2}",
         data={"allocations": {"{rp3}": {"resources": {"VCPU": 1}}},
               "project_id": "proj-b", "user_id": "bob", "consumer_generation": None,
               "consumer_type": "INSTANCE"}, status=409,
         body=fault(409, code="placement.concurrent_update")),
    dict(name="shrink it", method="PUT", url="/placement/allocations/{consumer2}",
         data={"allocations": {"{rp3}": {"resources": {"VCPU": 1}}},
               "project_id": "proj-b", "user_id": "bob", "consumer_generation": 1,
               "consumer_type": "INSTANCE"}, status=204),
    dict(name="usage follows", url="/placement/resource_providers/{rp3}/usages",
         body={"usages": {"VCPU": 1, "MEMORY_MB": 0}}),
    dict(name="old-style PUT", method="PUT", url="/placement/allocations/{consumer3}", version="1.7",
         data={"allocations": [{"resource_provider": {"uuid": "{rp3}"}, "resources": {"VCPU": 1}}]},
         status=204),
    dict(name="an inventory in use cannot go", method="PUT",
         url="/placement/resource_providers/{rp3}/inventories",
         data={"resource_provider_generation": 4, "inventories": {"MEMORY_MB": {"total": 2048}}},
         status=409, body=fault(409, code="placement.inventory.inuse")),
    dict(name="a provider in use cannot go", method="DELETE", url="/placement/resource_providers/{rp3}",
         status=409, body=fault(409, code="placement.resource_provider.inuse")),
    dict(name="release", method="DELETE", url="/placement/allocations/{consumer2}", status=204),
    dict(name="release again", method="DELETE", url="/placement/allocations/{consumer2}", status=404),
    dict(name="release the old-style one", method="DELETE", url="/placement/allocations/{consumer3}",
         status=204),
    dict(name="a parent cannot go before its child", method="DELETE",
         url="/placement/resource_providers/{rp3}", status=409,
         body=fault(409, code="placement.resource_provider.cannot_delete_parent")),
    dict(name="the child goes", method="DELETE", url="/placement/resource_providers/{child}", status=204),
    dict(name="then the parent", method="DELETE", url="/placement/resource_providers/{rp3}", status=204),
    dict(name="and it is gone", url="/placement/resource_providers/{rp3}", status=404),
    dict(name="members may not write", method="DELETE", url="/placement/resource_providers/{rp1}",
         as_="alice", status=403),
]


@pytest.fixture
async def placement(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        names = {k: str(uuid.uuid4()) for k in
                 ("rp1", "rp2", "rp3", "child", "missing", "consumer", "consumer2", "consumer3")}
        client = PlacementClient(h.bus)
        await client.ensure_provider(names["rp1"], "host-a", {
            "VCPU": m.InventoryRecord(total=8, allocation_ratio=4.0),
            "MEMORY_MB": m.InventoryRecord(total=4096, reserved=512)})
        await client.ensure_provider(names["rp2"], "host-b", {
            "VCPU": m.InventoryRecord(total=16), "MEMORY_MB": m.InventoryRecord(total=8192),
            "DISK_GB": m.InventoryRecord(total=100)})
        result = await client.claim(names["consumer"], names["rp1"], {"VCPU": 2, "MEMORY_MB": 1024},
                                    "proj-a", "alice")
        assert result.ok
        yield h, names


def _normalise(story: list[dict]) -> list[dict]:
    # `as` is a keyword; the tables say `as_`
    return [{("as" if k == "as_" else k): v for k, v in case.items()} for case in story]


async def test_reading(placement):
    h, names = placement
    await play(h, _normalise(READING), names)


async def test_writing(placement):
    h, names = placement
    await play(h, _normalise(WRITING), names)
