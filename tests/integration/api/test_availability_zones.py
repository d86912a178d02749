"""`os-availability-zone`: the zone list every user sees, and the admin's detail."""

from __future__ import annotations

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, ok

cloud = test_server_lifecycle.cloud  # two simulated hosts in the default zone
NEW = {"OpenStack-API-Version": "compute 2.53"}


async def test_members_see_the_zones_and_admins_see_their_hosts(cloud):
    h = cloud
    body = await ok(await h.http.get(V + "/os-availability-zone", headers=h.alice), 200)
    assert body == {"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": True},
                                              "hosts": None}]}
    assert (await h.http.get(V + "/os-availability-zone/detail", headers=h.alice)).status == 403
    detail = await ok(await h.http.get(V + "/os-availability-zone/detail", headers=h.admin), 200)
    [zone] = detail["availabilityZoneInfo"]
    assert set(zone["hosts"]) == {"sim-1", "sim-2"}
    service = zone["hosts"]["sim-1"]["nova-compute"]
    assert (service["available"], service["active"]) == (True, True) and service["updated_at"]


async def test_a_zone_whose_services_are_all_disabled_is_unavailable(cloud):
    h = cloud
    listed = await ok(await h.http.get(V + "/os-services", headers={**h.admin, **NEW}), 200)
    for service in listed["services"]:
        await ok(await h.http.put(f"{V}/os-services/{service['id']}", headers={**h.admin, **NEW},
                                  json={"status": "disabled"}), 200)
    body = await ok(await h.http.get(V + "/os-availability-zone", headers=h.alice), 200)
    assert body["availabilityZoneInfo"] == [{"zoneName": "nova", "zoneState": {"available": False},
                                             "hosts": None}]
    detail = await ok(await h.http.get(V + "/os-availability-zone/detail", headers=h.admin), 200)
    assert detail["availabilityZoneInfo"][0]["hosts"]["sim-2"]["nova-compute"]["active"] is False
