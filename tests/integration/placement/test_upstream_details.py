"""Details of placement's API that upstream Placement's own gabbi files check
(conformance/placement_gabbi.py) and our older stories did not: one story per behaviour,
played with test_http's player against one running placement."""

from __future__ import annotations

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
