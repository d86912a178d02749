"""What upstream Placement's own gabbi files (conformance/placement_gabbi.py) showed we did
differently, one behaviour per test, against one running placement: the words of refusals
that clients and those files look for, when a provider's generation moves, which microversion
allows what, and which answers carry cache headers or refuse a non-JSON Accept."""

from __future__ import annotations

import uuid
from typing import Any

from tests.integration.placement.test_http import placement  # noqa: F401

RP = "/placement/resource_providers"


async def call(h, method: str, url: str, version: str = "1.39", data: Any = None, *,
               headers: dict[str, str] | None = None, raw: bytes | None = None,
               as_: str = "admin"):
    sent = {**getattr(h, as_), "OpenStack-API-Version": f"placement {version}", **(headers or {})}
    if raw is not None:
        sent.setdefault("Content-Type", "application/json")
        resp = await h.http.request(method, url, headers=sent, data=raw)
    else:
        resp = await h.http.request(method, url, headers=sent, json=data)
    body = await resp.json() if resp.content_type == "application/json" else await resp.text()
    return resp, body


async def refused(h, method: str, url: str, status: int, *texts: str, **kw) -> None:
    """The request is refused with `status`, and the fault's detail says each of `texts`."""
    resp, body = await call(h, method, url, **kw)
    assert resp.status == status, (method, url, resp.status, body)
    detail = body["errors"][0]["detail"] if isinstance(body, dict) else body  # a text/* fault
    for text in texts:
        assert text in detail, (text, detail)


async def generation(h, rp: str) -> int:
    return (await call(h, "GET", f"{RP}/{rp}"))[1]["generation"]


async def test_refused_bodies_in_upstream_words(placement):
    """Not JSON: "Malformed JSON: …" (an empty body too); against the schema: "JSON does not
    validate: " and jsonschema's account (which check, where), UUIDs checked as a format."""
    h, names = placement
    rp = names["rp2"]
    await refused(h, "POST", RP, 400, "Malformed JSON:", raw=b"{not json")
    await refused(h, "PUT", "/placement/resource_classes/CUSTOM_COW", 400, "Malformed JSON:",
                  version="1.6", raw=b"")
    await refused(h, "POST", f"{RP}/{rp}/inventories", 400,
                  "JSON does not validate: 0 is less than the minimum of 1",
                  "Failed validating 'minimum' in schema", data={"resource_class": "VCPU", "total": 0})
    await refused(h, "POST", RP, 400, "JSON does not validate", "Failed validating 'format'",
                  data={"name": "x", "uuid": "this is not a uuid"})
    await refused(h, "PUT", f"{RP}/{rp}/aggregates", 400, "is not a 'uuid'", version="1.19",
                  data={"aggregates": [str(uuid.uuid4()), "sally"], "resource_provider_generation": 0})
    await refused(h, "PUT", "/placement/allocations/" + str(uuid.uuid4()), 400,
                  "Failed validating 'required' in schema", version="1.8",
                  data={"allocations": [{"resource_provider": {"uuid": rp}, "resources": {"VCPU": 1}}]})
    # the provider is looked up before the body is read: an unknown one is a 404 whatever was sent
    await refused(h, "PUT", f"{RP}/{names['missing']}/aggregates", 404, "", version="1.1", data=[])


async def test_generation_counts_what_a_provider_holds(placement):
    """As upstream: a rename or a move leaves the generation; every inventory write bumps it,
    even one that changes nothing; traits bump it only when they change; aggregates only from
    1.19 (where the client names the generation); giving allocations back does not."""
    h, names = placement
    rp, child = names["rp2"], names["child"]
    start = await generation(h, rp)
    resp, body = await call(h, "PUT", f"{RP}/{rp}", data={"name": "host-b2"})
    assert resp.status == 200 and body["generation"] == start
    await call(h, "POST", RP, data={"name": "kid", "uuid": child})
    resp, _ = await call(h, "PUT", f"{RP}/{child}", data={"name": "kid", "parent_provider_uuid": rp})
    assert resp.status == 200 and await generation(h, rp) == start

    _, inv = await call(h, "GET", f"{RP}/{rp}/inventories")
    resp, body = await call(h, "PUT", f"{RP}/{rp}/inventories", data=inv)
    assert resp.status == 200 and body["resource_provider_generation"] == start + 1

    traits = {"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": start + 1}
    assert (await call(h, "PUT", f"{RP}/{rp}/traits", data=traits))[1]["resource_provider_generation"] == start + 2
    traits["resource_provider_generation"] = start + 2
    assert (await call(h, "PUT", f"{RP}/{rp}/traits", data=traits))[1]["resource_provider_generation"] == start + 2
    await refused(h, "PUT", f"{RP}/{rp}/traits", 409, "Resource provider's generation already changed",
                  data={**traits, "resource_provider_generation": start})

    agg = str(uuid.uuid4())
    assert (await call(h, "PUT", f"{RP}/{rp}/aggregates", "1.1", [agg]))[0].status == 200
    assert await generation(h, rp) == start + 2
    resp, body = await call(h, "PUT", f"{RP}/{rp}/aggregates", "1.19",
                            {"aggregates": [agg], "resource_provider_generation": start + 2})
    assert body == {"aggregates": [agg], "resource_provider_generation": start + 3}

    consumer = str(uuid.uuid4())
    resp, _ = await call(h, "PUT", f"/placement/allocations/{consumer}", data={
        "allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert resp.status == 204 and await generation(h, rp) == start + 4
    assert (await call(h, "DELETE", f"/placement/allocations/{consumer}"))[0].status == 204
    assert await generation(h, rp) == start + 4


async def test_inventory_capacity_and_classes_by_microversion(placement):
    """Before 1.26 reserved must leave some capacity; from 1.26 it may take it all. A PUT of
    one class the provider lacks is a 400 (POST adds one); the capacity is checked first."""
    h, names = placement
    rp = names["rp2"]
    gen = await generation(h, rp)
    whole = {"resource_provider_generation": gen, "inventories": {"DISK_GB": {"total": 100, "reserved": 100}}}
    await refused(h, "PUT", f"{RP}/{rp}/inventories", 400, "Unable to update inventory",
                  "greater than or equal to total", version="1.25", data=whole)
    resp, body = await call(h, "PUT", f"{RP}/{rp}/inventories", "1.26", whole)
    assert resp.status == 200, body
    over = {"resource_provider_generation": gen + 1, "total": 10, "reserved": 20}
    await refused(h, "PUT", f"{RP}/{rp}/inventories/VCPU", 400, "Unable to update inventory",
                  "The reserved value is greater than total", data=over)
    await refused(h, "PUT", f"{RP}/{rp}/inventories/VCPU", 400,
                  "No inventory record with resource class", data={**over, "reserved": 0})
    await refused(h, "GET", f"{RP}/{rp}/inventories/VCPU", 404, f"No inventory of class VCPU for {rp}")
    await refused(h, "DELETE", f"{RP}/{rp}/inventories/VCPU", 404, "No inventory of class VCPU found for delete")


async def test_resource_classes_renamed_before_1_7(placement):
    """1.2-1.6: PUT renames a custom class (the body names it anew); 1.7+ makes the class in
    the path. Deleting a standard one, or one in use, says why in upstream's words."""
    h, _ = placement
    rc = "/placement/resource_classes"
    assert (await call(h, "POST", rc, "1.6", {"name": "CUSTOM_OLD"}))[0].status == 201
    assert (await call(h, "POST", rc, "1.6", {"name": "CUSTOM_TAKEN"}))[0].status == 201
    resp, body = await call(h, "PUT", f"{rc}/CUSTOM_OLD", "1.6", {"name": "CUSTOM_NEW"})
    assert resp.status == 200 and body["name"] == "CUSTOM_NEW"
    assert (await call(h, "GET", f"{rc}/CUSTOM_OLD", "1.6"))[0].status == 404
    await refused(h, "PUT", f"{rc}/CUSTOM_NEW", 409, "Resource class already exists: CUSTOM_TAKEN",
                  version="1.6", data={"name": "CUSTOM_TAKEN"})
    await refused(h, "PUT", f"{rc}/VCPU", 400, "Cannot update standard resource class VCPU",
                  version="1.6", data={"name": "CUSTOM_X"})
    await refused(h, "PUT", f"{rc}/CUSTOM_NEW", 400, "JSON does not validate", version="1.6",
                  data={"name": "VCPU"})
    await refused(h, "PUT", f"{rc}/VCPU", 400, "Failed validating 'pattern'", version="1.7")
    await refused(h, "DELETE", f"{rc}/VCPU", 400, "Cannot delete standard resource class VCPU")
    assert (await call(h, "PUT", f"{rc}/CUSTOM_NEW", "1.7"))[0].status == 204


async def test_allocation_refusals_in_upstream_words(placement):
    h, names = placement
    rp, consumer = names["rp2"], str(uuid.uuid4())
    url = f"/placement/allocations/{consumer}"

    def body(resources: dict, provider: str = rp, generation: int | None = None) -> dict:
        return {"allocations": {provider: {"resources": resources}}, "project_id": "p", "user_id": "u",
                "consumer_generation": generation, "consumer_type": "INSTANCE"}

    await refused(h, "PUT", url, 400, f"Unable to allocate inventory for consumer {consumer}: "
                  "No such resource class CUSTOM_PONY", data=body({"CUSTOM_PONY": 1}))
    await refused(h, "PUT", url, 400, f"Allocation for resource provider '{names['missing']}' that "
                  "does not exist", data=body({"VCPU": 1}, names["missing"]))
    other = f"/placement/allocations/{uuid.uuid4()}"
    assert (await call(h, "PUT", other, data=body({"VCPU": 10})))[0].status == 204
    await refused(h, "PUT", url, 409, "Unable to allocate inventory: Unable to create allocation "
                  f"for 'VCPU' on resource provider '{rp}'. The requested amount would exceed the "
                  "capacity", data=body({"VCPU": 10}))
    await refused(h, "PUT", url, 409, f"Inventory for 'PCI_DEVICE' on resource provider '{rp}' invalid",
                  data=body({"PCI_DEVICE": 1}))
    assert (await call(h, "PUT", url, data=body({"VCPU": 1})))[0].status == 204
    await refused(h, "PUT", url, 409, "consumer generation conflict - expected 1 but got 3",
                  data=body({"VCPU": 2}, generation=3))
    await refused(h, "PUT", "/placement/allocations/not-a-uuid", 400, "Malformed consumer_uuid: not-a-uuid",
                  data=body({"VCPU": 1}))


async def test_accept_is_checked_only_where_json_is_answered(placement):
    """An Accept JSON cannot satisfy refuses a GET of a representation (406), not an unknown
    URL (404), a write answered without a body, a trait's 204 or the version document."""
    h, names = placement
    plain = {"Accept": "text/plain"}
    assert (await call(h, "GET", f"{RP}/{names['rp1']}", headers=plain))[0].status == 406
    assert (await call(h, "GET", "/placement/moo", headers=plain))[0].status == 404
    assert (await call(h, "POST", "/placement/resource_classes", data={"name": "CUSTOM_A"},
                       headers=plain))[0].status == 201
    await refused(h, "POST", "/placement/resource_classes", 400, "JSON does not validate",
                  data={"name": "FOO"}, headers=plain)
    assert (await call(h, "GET", "/placement/traits/HW_CPU_X86_AVX2", headers=plain))[0].status == 204
    assert (await call(h, "GET", "/placement/", headers=plain))[0].status == 200


async def test_cache_headers_on_representations_only(placement):
    """From 1.15: a trait's GET and PUT carry Cache-Control and Last-Modified (upstream sends
    them there, bodiless as they are); a resource class made by POST or PUT does not."""
    h, _ = placement
    for method, url in (("PUT", "/placement/traits/CUSTOM_CACHED"), ("GET", "/placement/traits/CUSTOM_CACHED")):
        resp, _ = await call(h, method, url, "1.15")
        assert resp.headers["Cache-Control"] == "no-cache" and "Last-Modified" in resp.headers, method
    for method, url, data in (("PUT", "/placement/resource_classes/CUSTOM_MOO", None),
                              ("POST", "/placement/resource_classes", {"name": "CUSTOM_ALPHA"})):
        resp, _ = await call(h, method, url, "1.15", data)
        assert resp.status == 201
        assert "Cache-Control" not in resp.headers and "Last-Modified" not in resp.headers, method


async def test_version_document_and_vary(placement):
    """The version document's self link is the empty relative URL, as upstream's (it points
    back at itself wherever placement is mounted); Vary names the header in lower case."""
    h, _ = placement
    resp, body = await call(h, "GET", "/placement/")
    assert body["versions"][0]["links"] == [{"rel": "self", "href": ""}]
    assert resp.headers["Vary"] == "openstack-api-version"


async def test_query_strings_in_upstream_words(placement):
    h, names = placement
    agg = str(uuid.uuid4())
    await refused(h, "GET", f"{RP}?member_of=!{agg}", 400,
                  "Forbidden member_of parameters are not supported in the specified microversion",
                  version="1.31")
    await refused(h, "GET", f"/placement/allocation_candidates?resources=VCPU:1&member_of=!in:{agg}", 400,
                  "Forbidden member_of parameters are not supported in the specified microversion",
                  version="1.31")
    await refused(h, "GET", f"{RP}?member_of=in:{agg},!{agg}", 400,
                  "Invalid query string parameters: Expected 'member_of' parameter to contain valid UUID(s).")
    await refused(h, "GET", f"{RP}?required=!HW_CPU_X86_AVX2", 400, "Expected 'required' parameter "
                  "value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !HW_CPU_X86_AVX2", version="1.21")
    await refused(h, "GET", f"{RP}?required=HW_CPU_X86_AVX2,,STORAGE_DISK_SSD", 400,
                  "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC.")
    await refused(h, "GET", f"{RP}?required=lower", 400, "No such trait(s): lower")
    await refused(h, "GET", "/placement/usages?project_id=", 400, "Failed validating 'minLength'",
                  version="1.9")
    await refused(h, "GET", "/placement/usages?project_id=p&user_id=" + "u" * 256, 400,
                  "Failed validating 'maxLength'", version="1.9")
    await refused(h, "GET", "/placement/traits?associated=yes", 400,
                  'The query parameter "associated" only accepts "true" or "false"')
    await refused(h, "PUT", "/placement/traits/TRAIT_X", 400, "The trait is invalid.")


async def test_faults_in_the_media_type_asked_for(placement):
    """As upstream (webob): a fault is JSON unless the Accept prefers HTML (a browser) or
    takes neither HTML nor JSON (plain text); its status, title and detail are in any case."""
    h, _ = placement
    for accept, media in ((None, "application/json"), ("*/*", "application/json"),
                          ("application/json", "application/json"), ("text/html", "text/html"),
                          ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "text/html"),
                          ("text/html;q=0.5, application/json", "application/json"),
                          ("text/plain", "text/plain")):
        resp, _ = await call(h, "GET", "/placement/no-such-thing", headers={"Accept": accept} if accept else {})
        assert (resp.status, resp.content_type) == (404, media), accept
        text = await resp.text()
        assert "The resource could not be found." in text, (accept, text)
        if media == "text/html":
            assert "<title>404 Not Found</title>" in text
    resp, _ = await call(h, "GET", "/placement/", "0.5", headers={"Accept": "text/html"})
    assert (resp.status, resp.content_type) == (406, "text/html")
    assert "Unacceptable version header: 0.5" in await resp.text()
