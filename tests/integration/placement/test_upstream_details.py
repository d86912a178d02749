"""Details of placement's API that upstream Placement's own gabbi files check
(conformance/placement_gabbi.py) and our older stories did not: one story per behaviour,
played with test_http's player against one running placement."""

from __future__ import annotations

import re

from tests.integration.placement.test_http import ANY, _normalise, fault, play, placement  # noqa: F401


async def test_post_one_inventory(placement):
    """POST /resource_providers/{uuid}/inventories adds one class: 201, its URL in Location,
    no generation needed; a class it already has is a conflict, an unknown one or a reserved
    over the total a 400 that says it could not create the inventory."""
    h, names = placement
    url = "/placement/resource_providers/{rp3}/inventories"
    await play(h, _normalise([
        dict(name="make rp3", method="POST", url="/placement/resource_providers",
             data={"name": "host-c", "uuid": "{rp3}"}, status=200),
        dict(name="reserved over total", method="POST", url=url,
             data={"resource_class": "DISK_GB", "total": 256, "reserved": 512}, status=400,
             body=fault(400, detail=ANY)),
        dict(name="unknown class", method="POST", url=url,
             data={"resource_class": "NO_CLASS_14", "total": 2048}, status=400),
        dict(name="no total", method="POST", url=url, data={"resource_class": "DISK_GB"}, status=400),
        dict(name="add DISK_GB", method="POST", url=url,
             data={"resource_class": "DISK_GB", "total": 2048, "reserved": 512, "max_unit": 1024},
             status=201, headers={"Location": "/placement/resource_providers/{rp3}/inventories/DISK_GB"},
             body={"resource_provider_generation": 1, "total": 2048, "reserved": 512,
                   "min_unit": 1, "max_unit": 1024, "step_size": 1, "allocation_ratio": 1.0}),
        dict(name="it is there", url=url + "/DISK_GB", body={"total": 2048}),
        dict(name="again is a conflict", method="POST", url=url,
             data={"resource_class": "DISK_GB", "total": 2048}, status=409,
             body=fault(409, code="placement.concurrent_update")),
    ]), names)
    for text, case in ((b"Unable to create inventory for resource provider", {"resource_class": "VCPU", "total": 1, "reserved": 2}),
                       (b"No such resource class NO_CLASS_14", {"resource_class": "NO_CLASS_14", "total": 1}),
                       (b"Update conflict", {"resource_class": "DISK_GB", "total": 1})):
        resp = await h.http.post(url.format(**names), json=case,
                                 headers={**h.admin, "OpenStack-API-Version": "placement 1.39"})
        assert text in await resp.read()


async def test_405_names_the_allowed_methods(placement):
    h, names = placement
    for method, url, allowed in (("DELETE", "/placement/", "GET"),
                                 ("DELETE", "/placement/resource_providers", "GET, POST"),
                                 ("OPTIONS", "/placement/resource_providers", "GET, POST")):
        resp = await h.http.request(method, url, headers={**h.admin, "OpenStack-API-Version": "placement 1.39"})
        assert resp.status == 405
        assert resp.headers["Allow"] == allowed
        fault_ = (await resp.json())["errors"][0]
        assert fault_["title"] == "Method Not Allowed"
        assert fault_["detail"] == f"The method {method} is not allowed for this resource."


async def test_cache_headers_from_1_15(placement):
    """From 1.15 a representation carries `Cache-Control: no-cache` and an HTTP-date
    `Last-Modified`; below it, neither; nor does an error."""
    h, names = placement
    for url in ("/placement/", "/placement/resource_providers/{rp1}", "/placement/traits"):
        url = url.format(**names)
        new = await h.http.get(url, headers={**h.admin, "OpenStack-API-Version": "placement 1.15"})
        assert new.headers["Cache-Control"] == "no-cache"
        assert re.fullmatch(r"\w+, \d+ \w+ \d{4} [\d:]+ GMT", new.headers["Last-Modified"])
        old = await h.http.get(url, headers={**h.admin, "OpenStack-API-Version": "placement 1.14"})
        assert "Cache-Control" not in old.headers and "Last-Modified" not in old.headers
    missing = await h.http.get(f"/placement/resource_providers/{names['missing']}",
                               headers={**h.admin, "OpenStack-API-Version": "placement 1.15"})
    assert missing.status == 404 and "Last-Modified" not in missing.headers


async def test_media_types(placement):
    """Placement speaks JSON only: an Accept JSON cannot satisfy is a 406, a body of another
    type a 415, a body with no Content-Type a 400; a browser's Accept (with */*) is fine."""
    h, names = placement
    v = {"OpenStack-API-Version": "placement 1.39"}
    rp1 = f"/placement/resource_providers/{names['rp1']}"
    for accept, status in (("text/plain", 406), ("text/html,application/xml;q=0.9", 406),
                           ("text/html,application/xml;q=0.9,*/*;q=0.8", 200), ("application/json", 200)):
        resp = await h.http.get(rp1, headers={**h.admin, **v, "Accept": accept})
        assert resp.status == status, accept
        if status == 406:  # the fault itself in the type asked for (test_upstream_wording)
            assert resp.content_type == accept.split(",")[0]
            assert "Only application/json is provided" in await resp.text()
    wrong = await h.http.put(rp1, data=b"Why U no provide?", headers={**h.admin, **v, "Content-Type": "text/plain"})
    assert wrong.status == 415
    assert (await wrong.json())["errors"][0]["detail"] == \
        "The media type text/plain is not supported, use application/json"
    untyped = await h.http.post("/placement/resource_providers", data=b"a provider please",
                                headers={**h.admin, **v}, skip_auto_headers=["Content-Type"])
    assert untyped.status == 400
    none = await h.http.put(rp1, headers={**h.admin, **v})
    assert none.status == 415
    # a PUT that takes no body needs no Content-Type
    trait = await h.http.put("/placement/traits/CUSTOM_NO_BODY", headers={**h.admin, **v})
    assert trait.status == 201


async def test_version_errors_quote_what_was_sent(placement):
    h, _ = placement
    for sent, status, detail in (("pony.horse", 400, "invalid version string: pony.horse"),
                                 ("1.2.3", 400, "invalid version string: 1.2.3"),
                                 ("0.5", 406, "Unacceptable version header: 0.5")):
        resp = await h.http.get("/placement/", headers={"OpenStack-API-Version": f"placement {sent}"})
        assert resp.status == status
        assert (await resp.json())["errors"][0]["detail"] == detail
