"""Enabling, disabling and forcing down compute services: both of Nova's URL styles, and
the scheduler taking no new instances to a disabled or forced-down host."""

from __future__ import annotations

import pytest

from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status

cloud = test_server_lifecycle.cloud  # two simulated hosts, sim-1 and sim-2

NEW, OLD, FORCE_OK = ({"OpenStack-API-Version": f"compute {v}"} for v in ("2.53", "2.1", "2.11"))


async def services(h) -> dict[str, dict]:
    body = await ok(await h.http.get(V + "/os-services", headers={**h.admin, **NEW}), 200)
    return {s["host"]: s for s in body["services"]}


async def host_of(h, server_id: str) -> str:
    body = await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **NEW}), 200)
    return body["server"]["OS-EXT-SRV-ATTR:host"]


async def boot_two(h) -> set[str]:
    hosts = set()
    for _ in range(2):
        created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
        server = await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
        hosts.add(await host_of(h, server["id"]))
    return hosts


async def test_a_disabled_service_gets_no_new_servers_until_enabled(cloud):
    h = cloud
    sim1 = (await services(h))["sim-1"]
    put = await ok(await h.http.put(f"{V}/os-services/{sim1['id']}", headers={**h.admin, **NEW},
                                    json={"status": "disabled", "disabled_reason": "maintenance"}), 200)
    assert put["service"] | {"updated_at": None} == sim1 | {
        "status": "disabled", "disabled_reason": "maintenance", "updated_at": None}
    assert await boot_two(h) == {"sim-2"}
    put = await ok(await h.http.put(f"{V}/os-services/{sim1['id']}", headers={**h.admin, **NEW},
                                    json={"status": "enabled"}), 200)
    assert (put["service"]["status"], put["service"]["disabled_reason"]) == ("enabled", None)


async def test_forced_down_shows_down_and_takes_nothing(cloud):
    h = cloud
    sim2 = (await services(h))["sim-2"]
    put = await ok(await h.http.put(f"{V}/os-services/{sim2['id']}", headers={**h.admin, **NEW},
                                    json={"forced_down": True}), 200)
    assert (put["service"]["forced_down"], put["service"]["state"]) == (True, "down")
    assert await boot_two(h) == {"sim-1"}
    await ok(await h.http.put(f"{V}/os-services/{sim2['id']}", headers={**h.admin, **NEW},
                              json={"forced_down": False}), 200)
    assert (await services(h))["sim-2"]["state"] == "up"


async def test_the_older_host_and_binary_urls(cloud):
    h = cloud
    target = {"host": "sim-1", "binary": "nova-compute"}
    body = await ok(await h.http.put(V + "/os-services/disable-log-reason", headers={**h.admin, **OLD},
                                     json={**target, "disabled_reason": "disk swap"}), 200)
    assert body == {"service": {**target, "status": "disabled", "disabled_reason": "disk swap"}}
    body = await ok(await h.http.put(V + "/os-services/enable", headers={**h.admin, **OLD}, json=target), 200)
    assert body == {"service": {**target, "status": "enabled"}}
    body = await ok(await h.http.put(V + "/os-services/disable", headers={**h.admin, **OLD}, json=target), 200)
    assert body == {"service": {**target, "status": "disabled"}}
    body = await ok(await h.http.put(V + "/os-services/force-down", headers={**h.admin, **FORCE_OK},
                                     json={**target, "forced_down": True}), 200)
    assert body == {"service": {**target, "forced_down": True}}
    shown = (await services(h))["sim-1"]
    assert (shown["status"], shown["state"], shown["forced_down"]) == ("disabled", "down", True)


@pytest.mark.parametrize("headers, path, body, status", [
    (NEW, "/os-services/{id}", {"status": "enabled", "disabled_reason": "x"}, 400),
    (NEW, "/os-services/{id}", {}, 400),
    (NEW, "/os-services/{id}", {"status": "off"}, 400),
    (NEW, "/os-services/{id}", {"forced_down": "yes"}, 400),
    (NEW, "/os-services/{id}", {"disabled_reason": "x" * 256, "status": "disabled"}, 400),
    (NEW, "/os-services/00000000-0000-0000-0000-000000000000", {"status": "disabled"}, 404),
    (NEW, "/os-services/not-a-uuid", {"status": "disabled"}, 404),
    (OLD, "/os-services/enable", {"host": "nowhere", "binary": "nova-compute"}, 404),
    (OLD, "/os-services/enable", {"host": "sim-1"}, 400),
    (OLD, "/os-services/force-down", {"host": "sim-1", "binary": "nova-compute", "forced_down": True}, 404),
    (OLD, "/os-services/reboot", {"host": "sim-1", "binary": "nova-compute"}, 404),
])
async def test_bad_requests_change_nothing(cloud, headers, path, body, status):
    h = cloud
    before = await services(h)
    resp = await h.http.put(V + path.format(id=before["sim-1"]["id"]), headers={**h.admin, **headers}, json=body)
    assert resp.status == status, await resp.text()
    assert (await services(h)) == before


async def test_members_may_not_change_services(cloud):
    h = cloud
    sim1 = (await services(h))["sim-1"]
    resp = await h.http.put(f"{V}/os-services/{sim1['id']}", headers={**h.alice, **NEW},
                            json={"status": "disabled"})
    assert resp.status == 403
