"""Every copy of the conductor and the scheduler has a service record (common/service_records.py):
`openstack compute service list` shows each process's with its host and state, in the zone
`internal` as Nova does; nothing that reads services for compute hosts is confused by them."""

from __future__ import annotations

import asyncio

from nova_async.common.service_records import ServiceRecords
from tests.harness import settings_for
from tests.integration import test_server_lifecycle
from tests.integration.test_server_lifecycle import V, boot_body, ok, wait_status
from tests.waiting import until

cloud = test_server_lifecycle.cloud  # two simulated hosts, sim-1 and sim-2
NEW = {"OpenStack-API-Version": "compute 2.53"}


async def listed(h, query: str = "") -> dict[tuple[str, str], dict]:
    body = await ok(await h.http.get(V + "/os-services" + query, headers={**h.admin, **NEW}), 200)
    return {(s["binary"], s["host"]): s for s in body["services"]}


async def test_each_process_lists_its_conductor_and_scheduler(cloud, tmp_path):
    h = cloud
    nodes = {name: ServiceRecords(h.pool, h.bus, settings_for(tmp_path / name, compute={
        "host": name, "report_interval": 0.1})) for name in ("node-a", "node-b")}
    for records in nodes.values():
        await records.register()

    services = await listed(h)
    assert set(services) == {("nova-compute", "sim-1"), ("nova-compute", "sim-2"),
                             ("nova-conductor", "node-a"), ("nova-scheduler", "node-a"),
                             ("nova-conductor", "node-b"), ("nova-scheduler", "node-b")}
    for (binary, _), service in services.items():
        assert service["state"] == "up" and service["status"] == "enabled"
        assert service["zone"] == ("nova" if binary == "nova-compute" else "internal")
    assert set(await listed(h, "?binary=nova-compute")) == {("nova-compute", "sim-1"), ("nova-compute", "sim-2")}

    # node-b dies: its heartbeats stop, and its records are shown down.
    await h.pool.execute("UPDATE services SET last_seen_up = now() - interval '1 hour' WHERE host = 'node-b'")
    services = await listed(h)
    assert services[("nova-conductor", "node-b")]["state"] == "down"
    assert services[("nova-scheduler", "node-b")]["state"] == "down"
    assert services[("nova-conductor", "node-a")]["state"] == "up"

    # Zones: servers are booted into `nova`; `internal` is shown to admins in the detail only.
    zones = await ok(await h.http.get(V + "/os-availability-zone", headers=h.alice), 200)
    assert [z["zoneName"] for z in zones["availabilityZoneInfo"]] == ["nova"]
    detail = await ok(await h.http.get(V + "/os-availability-zone/detail", headers=h.admin), 200)
    internal = next(z for z in detail["availabilityZoneInfo"] if z["zoneName"] == "internal")
    assert internal["hosts"]["node-a"]["nova-conductor"]["available"] is True
    assert internal["hosts"]["node-b"]["nova-scheduler"]["available"] is False

    # Only compute services are enabled, disabled or forced down (Nova: 400 for the others).
    conductor_a = services[("nova-conductor", "node-a")]["id"]
    resp = await h.http.put(f"{V}/os-services/{conductor_a}", headers={**h.admin, **NEW}, json={"status": "disabled"})
    assert resp.status == 400 and "nova-conductor" in await resp.text()
    # A dead process's record can be deleted (only the record); a live one's cannot.
    resp = await h.http.delete(f"{V}/os-services/{conductor_a}", headers={**h.admin, **NEW})
    assert resp.status == 409
    resp = await h.http.delete(f"{V}/os-services/{services[('nova-conductor', 'node-b')]['id']}",
                               headers={**h.admin, **NEW})
    assert resp.status == 204
    assert ("nova-conductor", "node-b") not in await listed(h)

    # A record deleted under a live process comes back with its next heartbeat.
    await h.pool.execute("DELETE FROM services WHERE host = 'node-a' AND binary_name = 'nova-scheduler'")
    beating = asyncio.create_task(nodes["node-a"].keep_up(), name="test:records")
    try:
        await until(lambda: listed(h), lambda s: ("nova-scheduler", "node-a") in s, what="node-a's scheduler back")
    finally:
        beating.cancel()
        await asyncio.gather(beating, return_exceptions=True)

    # Scheduling still sees only the compute hosts.
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    assert (await wait_status(h, created["server"]["id"], "ACTIVE", "ERROR"))["status"] == "ACTIVE"
    hypervisors = await ok(await h.http.get(V + "/os-hypervisors", headers=h.admin), 200)
    assert sorted(x["hypervisor_hostname"] for x in hypervisors["hypervisors"]) == ["sim-1", "sim-2"]
