"""os-hypervisors as Nova answers it at each microversion: the detail with what the
hypervisor's instances take (before 2.88), show by integer id (before 2.53) or uuid, the
statistics and uptime (before 2.88), search and servers by name pattern (before 2.53, then
the list's `hypervisor_hostname_pattern` and `with_servers`), and paging from 2.33."""

from __future__ import annotations

import json

import re

import pytest

from tests.integration.test_server_lifecycle import V, boot_body, ok, sim_cloud, wait_status


def mv(h, version: str) -> dict[str, str]:
    return {**h.admin, "OpenStack-API-Version": f"compute {version}"}


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        server = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
        await wait_status(h, server["server"]["id"], "ACTIVE")
        h.server = (await get(h, f"/servers/{server['server']['id']}", "2.1"))["server"]   # the admin's view
        yield h


async def get(h, path: str, version: str, status: int = 200):
    return await ok(await h.http.get(V + path, headers=mv(h, version)), status)


async def test_detail_counts_what_the_instances_take_until_2_88(cloud):
    h = cloud
    listed = {x["hypervisor_hostname"]: x for x in (await get(h, "/os-hypervisors/detail", "2.1"))["hypervisors"]}
    host = h.server["OS-EXT-SRV-ATTR:hypervisor_hostname"]
    busy, idle = listed[host], next(x for n, x in listed.items() if n != host)
    # The host CPU as libvirt (here its test driver) describes it: a JSON string before 2.28.
    assert isinstance(busy["id"], int) and json.loads(busy["cpu_info"])["arch"] == "i686"
    assert (busy["running_vms"], busy["vcpus_used"], busy["memory_mb_used"], busy["local_gb_used"]) == (1, 1, 1024, 1)
    assert (busy["free_ram_mb"], busy["free_disk_gb"]) == (4096 - 1024, 50 - 1)
    assert (idle["running_vms"], idle["vcpus_used"], idle["free_ram_mb"]) == (0, 0, 4096)
    newer = (await get(h, "/os-hypervisors/detail", "2.88"))["hypervisors"]
    assert all("running_vms" not in x and "vcpus" not in x and "uptime" in x for x in newer)
    cpu_info = (await get(h, "/os-hypervisors/detail", "2.28"))["hypervisors"][0]["cpu_info"]
    assert cpu_info["arch"] == "i686" and cpu_info["features"] == ["nonpae", "pae"]
    assert set(cpu_info["topology"]) == {"cells", "sockets", "cores", "threads"}


async def test_show_by_integer_id_then_by_uuid(cloud):
    h = cloud
    [old] = [x for x in (await get(h, "/os-hypervisors", "2.1"))["hypervisors"] if x["hypervisor_hostname"] == "sim-1"]
    shown = (await get(h, f"/os-hypervisors/{old['id']}", "2.1"))["hypervisor"]
    assert shown["hypervisor_hostname"] == "sim-1" and "running_vms" in shown
    await get(h, "/os-hypervisors/99999999999", "2.1", 404)
    [new] = [x for x in (await get(h, "/os-hypervisors", "2.53"))["hypervisors"] if x["hypervisor_hostname"] == "sim-1"]
    shown = (await get(h, f"/os-hypervisors/{new['id']}", "2.88"))["hypervisor"]
    assert shown["id"] == new["id"] and re.match(r" \d\d:\d\d:\d\d up ", shown["uptime"])
    await get(h, f"/os-hypervisors/{old['id']}", "2.53", 400)   # not a uuid
    await get(h, "/os-hypervisors/00000000-0000-0000-0000-000000000001", "2.53", 404)
    assert (await h.http.get(f"{V}/os-hypervisors/{new['id']}", headers=h.alice)).status == 403


async def test_statistics_and_uptime_until_2_88(cloud):
    h = cloud
    stats = (await get(h, "/os-hypervisors/statistics", "2.87"))["hypervisor_statistics"]
    assert (stats["count"], stats["vcpus"], stats["vcpus_used"], stats["running_vms"]) == (2, 8, 1, 1)
    assert stats["memory_mb"] - stats["memory_mb_used"] == stats["free_ram_mb"] == 2 * 4096 - 1024
    await get(h, "/os-hypervisors/statistics", "2.88", 404)
    [x] = [x for x in (await get(h, "/os-hypervisors", "2.1"))["hypervisors"] if x["hypervisor_hostname"] == "sim-2"]
    uptime = (await get(h, f"/os-hypervisors/{x['id']}/uptime", "2.1"))["hypervisor"]
    assert uptime["hypervisor_hostname"] == "sim-2" and "load average" in uptime["uptime"]
    await get(h, f"/os-hypervisors/{x['id']}/uptime", "2.88", 404)


async def test_search_and_servers_by_pattern(cloud):
    h = cloud
    host = h.server["OS-EXT-SRV-ATTR:hypervisor_hostname"]
    found = (await get(h, "/os-hypervisors/sim/search", "2.1"))["hypervisors"]
    assert sorted(x["hypervisor_hostname"] for x in found) == ["sim-1", "sim-2"]
    await get(h, "/os-hypervisors/nowhere/search", "2.1", 404)
    with_servers = {x["hypervisor_hostname"]: x for x in (await get(h, "/os-hypervisors/sim/servers", "2.1"))["hypervisors"]}
    assert with_servers[host]["servers"] == [{"uuid": h.server["id"], "name": "vm1"}]
    assert all("servers" not in x for n, x in with_servers.items() if n != host)   # none: no key, before 2.75
    await get(h, "/os-hypervisors/sim/search", "2.53", 404)
    # From 2.53, the list's query parameters do it; from 2.75 an empty list is shown too.
    listed = (await get(h, "/os-hypervisors?hypervisor_hostname_pattern=sim&with_servers=true", "2.75"))["hypervisors"]
    assert {x["hypervisor_hostname"]: len(x["servers"]) for x in listed} == {host: 1, ({"sim-1", "sim-2"} - {host}).pop(): 0}
    await get(h, "/os-hypervisors?hypervisor_hostname_pattern=nowhere", "2.53", 404)
    await get(h, "/os-hypervisors?hypervisor_hostname_pattern=sim&limit=1", "2.53", 400)
    await get(h, "/os-hypervisors?with_servers=maybe", "2.53", 400)


async def test_paging_from_2_33(cloud):
    h = cloud
    every = (await get(h, "/os-hypervisors", "2.53"))["hypervisors"]
    first = (await get(h, "/os-hypervisors?limit=1", "2.53"))["hypervisors"]
    assert first == every[:1]
    rest = (await get(h, f"/os-hypervisors?marker={first[0]['id']}", "2.53"))["hypervisors"]
    assert rest == every[1:]
    await get(h, "/os-hypervisors?marker=00000000-0000-0000-0000-000000000001", "2.53", 400)
    assert len((await get(h, "/os-hypervisors?limit=1", "2.1"))["hypervisors"]) == 2   # before 2.33: ignored
