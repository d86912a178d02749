"""No --database: nova-async runs its own PostgreSQL in the state dir, stops it on
shutdown, and finds its data again on the next start."""

import aiohttp

from tests.e2e.conftest import serve


async def test_private_cluster_keeps_data_across_restarts(work_dir):
    state = work_dir / "private"
    flavor = {"flavor": {"name": "kept", "ram": 64, "vcpus": 1, "disk": 1}}
    async with serve(state, "--roles", "identity,api") as served:
        async with aiohttp.ClientSession() as s:
            headers = {"X-Auth-Token": await served.token(s)}
            async with s.post(f"{served.url}/compute/v2.1/flavors", json=flavor, headers=headers) as r:
                assert r.status == 200
    assert served.proc.returncode == 0
    assert not (state / "postgres" / "data" / "postmaster.pid").exists(), "PostgreSQL was not stopped"

    async with serve(state, "--roles", "identity,api") as served:
        async with aiohttp.ClientSession() as s:
            headers = {"X-Auth-Token": await served.token(s)}
            async with s.get(f"{served.url}/compute/v2.1/flavors", headers=headers) as r:
                assert [f["name"] for f in (await r.json())["flavors"]] == ["kept"]
    assert served.proc.returncode == 0
