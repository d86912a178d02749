"""os-hosts (until 2.42) and os-instance_usage_audit_log, admin only: the hosts of every
service, a compute host's resources and what each project's instances take there, enabling
and disabling it, 501 for what these hypervisors cannot do; an audit log with no audit run."""

from __future__ import annotations

import pytest

from tests.integration.test_server_lifecycle import V, boot_body, ok, sim_cloud, wait_status


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        made = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
        await wait_status(h, made["server"]["id"], "ACTIVE")
        h.host = (await ok(await h.http.get(f"{V}/servers/{made['server']['id']}", headers=h.admin),
                           200))["server"]["OS-EXT-SRV-ATTR:host"]
        yield h


async def test_hosts_listed_shown_and_switched(cloud):
    h = cloud
    hosts = (await ok(await h.http.get(V + "/os-hosts", headers=h.admin), 200))["hosts"]
    assert {(x["host_name"], x["service"]) for x in hosts} >= {("sim-1", "compute"), ("sim-2", "compute")}
    zoned = (await ok(await h.http.get(V + "/os-hosts?zone=nova", headers=h.admin), 200))["hosts"]
    assert {x["host_name"] for x in zoned} == {"sim-1", "sim-2"}
    blank = (await ok(await h.http.get(V + "/os-hosts?zone=", headers=h.admin), 200))["hosts"]
    assert blank == hosts   # an empty zone filters nothing, as Nova

    shown = (await ok(await h.http.get(f"{V}/os-hosts/{h.host}", headers=h.admin), 200))["host"]
    by_project = {r["resource"]["project"]: r["resource"] for r in shown}
    assert (by_project["(total)"]["cpu"], by_project["(total)"]["memory_mb"]) == (4, 4096)
    assert by_project["(used_now)"]["memory_mb"] == 1024 and by_project["proj-a"]["cpu"] == 1
    await ok(await h.http.get(f"{V}/os-hosts/nowhere", headers=h.admin), 404)

    assert await ok(await h.http.put(f"{V}/os-hosts/{h.host}", headers=h.admin, json={"status": "disable"}), 200) == {
        "host": h.host, "status": "disabled"}
    services = (await ok(await h.http.get(f"{V}/os-services?host={h.host}", headers=h.admin), 200))["services"]
    assert services[0]["status"] == "disabled"
    await ok(await h.http.put(f"{V}/os-hosts/{h.host}", headers=h.admin, json={"status": "enable"}), 200)
    await ok(await h.http.put(f"{V}/os-hosts/{h.host}", headers=h.admin, json={"status": "sideways"}), 400)
    await ok(await h.http.put(f"{V}/os-hosts/{h.host}", headers=h.admin, json={}), 400)
    await ok(await h.http.put(f"{V}/os-hosts/{h.host}", headers=h.admin, json={"maintenance_mode": "enable"}), 501)
    await ok(await h.http.put(f"{V}/os-hosts/nowhere", headers=h.admin, json={"maintenance_mode": "enable"}), 404)
    await ok(await h.http.get(f"{V}/os-hosts/{h.host}/reboot", headers=h.admin), 501)
    await ok(await h.http.get(f"{V}/os-hosts/nowhere/reboot", headers=h.admin), 404)
    await ok(await h.http.get(V + "/os-hosts", headers=h.alice), 403)
    await ok(await h.http.get(V + "/os-hosts", headers={**h.admin, "OpenStack-API-Version": "compute 2.43"}), 404)


async def test_the_audit_log_says_no_audit_ran(cloud):
    h = cloud
    log = (await ok(await h.http.get(V + "/os-instance_usage_audit_log", headers=h.admin), 200))[
        "instance_usage_audit_logs"]
    assert (log["num_hosts"], log["num_hosts_not_run"], log["hosts_not_run"]) == (2, 2, ["sim-1", "sim-2"])
    before = (await ok(await h.http.get(V + "/os-instance_usage_audit_log/2026-03-15%2010:00:00", headers=h.admin),
                       200))["instance_usage_audit_log"]
    assert (before["period_beginning"], before["period_ending"]) == ("2026-02-01 00:00:00", "2026-03-01 00:00:00")
    await ok(await h.http.get(V + "/os-instance_usage_audit_log/yesterday", headers=h.admin), 400)
    await ok(await h.http.get(V + "/os-instance_usage_audit_log", headers=h.alice), 403)
