"""Races a user can start with two terminals, through the compute and volume APIs and the
real volume role: many servers attaching one volume at once, and an attach racing the
volume's delete. A volume that is not multiattach ends with one attachment at most, and
every loser gets a clear 4xx (Nova's 400 for a volume that is not available, Cinder's 400
for a delete of a volume that is attached) — never a 500 and never two attachments."""

from __future__ import annotations

import asyncio

from tests.integration.test_server_lifecycle import MV, ROLES, V, boot_body, ok, sim_cloud, wait_status
from tests.integration.volume.helpers import call, make_volume, settled
from tests.waiting import until

SERVERS = 20


def cloud(pool, tmp_path):
    return sim_cloud(pool, tmp_path, ROLES + ["volume"],
                     compute={"simulate_hosts": 4, "sim_vcpus": 16, "sim_memory_mb": 16384, "sim_disk_gb": 200},
                     quota={"instances": SERVERS, "cores": SERVERS},
                     volume={"quota_volumes": SERVERS, "quota_gigabytes": SERVERS})


async def boot_all(h) -> list[str]:
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(
        h, name="racer", min_count=SERVERS, max_count=SERVERS, return_reservation_id=True)), 202)
    listed = await ok(await h.http.get(f"{V}/servers?reservation_id={created['reservation_id']}",
                                       headers=h.alice), 200)
    ids = [s["id"] for s in listed["servers"]]
    assert len(ids) == SERVERS
    for server_id in ids:
        server = await wait_status(h, server_id, "ACTIVE", "ERROR")
        assert server["status"] == "ACTIVE", server.get("fault")
    return ids


def attach(h, server_id: str, volume_id: str):
    return h.http.post(f"{V}/servers/{server_id}/os-volume_attachments", headers={**h.alice, **MV},
                       json={"volumeAttachment": {"volumeId": volume_id}})


async def test_twenty_servers_attach_one_volume_at_once_and_one_wins(pool, tmp_path):
    async with cloud(pool, tmp_path) as h:
        servers = await boot_all(h)
        volume = await make_volume(h, h.alice, name="contested")
        answers = await asyncio.gather(*(attach(h, s, volume["id"]) for s in servers))
        codes = sorted(r.status for r in answers)
        assert codes == [200] + [400] * (SERVERS - 1), codes
        for resp in answers:
            if resp.status == 400:
                assert "badRequest" in await resp.json()
        [winner] = [s for s, r in zip(servers, answers) if r.status == 200]
        shown = await until(lambda: call(h, "GET", f"/volumes/{volume['id']}", h.alice),
                            lambda got: got[1]["volume"]["status"] == "in-use", what="the volume in use")
        assert [a["server_id"] for a in shown[1]["volume"]["attachments"]] == [winner]
        # Only the winner shows it; nobody else holds a mapping for it.
        for server_id in servers:
            got = await ok(await h.http.get(f"{V}/servers/{server_id}/os-volume_attachments",
                                            headers={**h.alice, **MV}), 200)
            expected = [volume["id"]] if server_id == winner else []
            assert [a["volumeId"] for a in got["volumeAttachments"]] == expected


async def test_an_attach_racing_the_volumes_delete_one_of_them_wins(pool, tmp_path):
    async with cloud(pool, tmp_path) as h:
        servers = await boot_all(h)
        volumes = [await make_volume(h, h.alice, name=f"v{i}") for i in range(len(servers))]

        async def delete(volume_id: str) -> int:
            return (await call(h, "DELETE", f"/volumes/{volume_id}", h.alice))[0]

        async def attached(server_id: str, volume_id: str) -> int:
            return (await attach(h, server_id, volume_id)).status

        outcomes = await asyncio.gather(*(asyncio.gather(attached(s, v["id"]), delete(v["id"]))
                                          for s, v in zip(servers, volumes)))
        for (attach_code, delete_code), volume in zip(outcomes, volumes):
            # The loser is refused: a 400 while the other is under way, or, for an attach that
            # looks the volume up after the delete finished, Nova's 404 for a volume not found.
            assert sorted((attach_code, delete_code)) in ([200, 400], [202, 400], [202, 404]), \
                (attach_code, delete_code)
            if attach_code == 200:   # the attach won: the volume stays, and ends in use
                await until(lambda: call(h, "GET", f"/volumes/{volume['id']}", h.alice),
                            lambda got: got[1]["volume"]["status"] == "in-use", what="the volume in use")
            else:                    # the delete won: the volume goes
                await settled(h)
                status, body = await call(h, "GET", f"/volumes/{volume['id']}", h.alice)
                assert status == 404, body
