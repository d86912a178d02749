"""A rolling upgrade over RabbitMQ: a control process of this release and a compute process
of the release before (tests/e2e/previous_release: RebuildInstance 1.0, without
preserve_ephemeral), sharing one PostgreSQL and one broker.

The control reads the compute's caps from its service record and sends it every message at
a version it reads: servers boot, reboot, rebuild and delete; a rebuild that asks for what
the old compute cannot do is refused with a 409 that names the host, and the server is left
as it was. Then the compute is upgraded in place (stopped, started at this release on the
same state dir and host name) while a stream of boots goes on: nothing is lost, nothing is
stuck (every server ACTIVE or deleted, none in ERROR), placement's allocations are exactly
the servers', and the option the old compute refused now works. Run with `pytest -s` for a
transcript of what happened."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import Counter
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import NOAUTH_ADMIN, WAIT, Api
from tests.e2e.test_split_processes import CONTROL_ROLES, print_logs
from tests.rabbitmq import available, started
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]

PREVIOUS_RELEASE = Path(__file__).parent / "previous_release"
V = "/compute/v2.1"


def say(line: str) -> None:
    print(f"[rolling-upgrade] {line}", flush=True)


@pytest.fixture
async def rabbitmq(work_dir):
    async with started(work_dir / "rabbitmq-upgrade") as broker:
        yield broker


async def record(database: str, host: str) -> tuple[str, str]:
    """(release, RebuildInstance cap) from the host's service record."""
    conn = await asyncpg.connect(database)
    try:
        row = await conn.fetchrow("SELECT release, message_caps->>'RebuildInstance' AS cap FROM services "
                                  "WHERE host = $1 AND binary_name = 'nova-compute'", host)
    finally:
        await conn.close()
    return row["release"], row["cap"]


async def allocated(api: Api, host: str) -> set[str]:
    """The consumers with an allocation against `host`'s resource provider."""
    providers = (await api.call("GET", f"/placement/resource_providers?name={host}", 200,
                                headers={"OpenStack-API-Version": "placement 1.39"}))["resource_providers"]
    allocations = await api.call("GET", f"/placement/resource_providers/{providers[0]['uuid']}/allocations", 200,
                                 headers={"OpenStack-API-Version": "placement 1.39"})
    return set(allocations["allocations"])


async def test_a_compute_of_the_release_before_keeps_working_and_upgrades_in_place(rabbitmq, database, work_dir):
    config = work_dir / "upgrade.toml"
    config.write_text("[compute]\nreport_interval = 1\n")
    common = ("--transport", rabbitmq.url, "--database", database, "--auth", "noauth", "--config", str(config))
    compute_args = ("--roles", "compute", "--host", "edge-1", "--libvirt-uri", "test:///default", *common)
    compute_dir = work_dir / "upgrade-edge-1"
    async with contextlib.AsyncExitStack() as stack:
        control = await stack.enter_async_context(serve(work_dir / "upgrade-control", "--roles", CONTROL_ROLES,
                                                        *common))
        old = await stack.enter_async_context(serve(compute_dir, *compute_args, keep_host_state=True,
                                                    module="nova_async_previous",
                                                    env={"PYTHONPATH": str(PREVIOUS_RELEASE)}))
        processes = {"control": control, "edge-1 (previous release)": old}
        stack.push(lambda *exc: print_logs(processes) if exc[0] else None)
        session = await stack.enter_async_context(aiohttp.ClientSession())
        api = Api(session, control.url, NOAUTH_ADMIN)

        release, cap = await record(database, "edge-1")
        say(f"edge-1 runs release {release}; its record says it receives RebuildInstance {cap}")
        assert (release, cap) == ("0.0.9", "1.0")
        base = await api.boot_base("upgrade", "10.30.0.0/16")

        # Boot, reboot, rebuild and delete on the old compute.
        first = await asyncio.gather(*(api.boot(base, f"old-{i}") for i in range(6)))
        servers = await api.settled(first)
        say(f"booted on edge-1 (previous release): {Counter(s['status'] for s in servers.values())}")
        assert [s["status"] for s in servers.values()] == ["ACTIVE"] * 6, servers
        for sid, kind in zip(first[:2], ("SOFT", "HARD")):
            await api.call("POST", f"{V}/servers/{sid}/action", 202, json={"reboot": {"type": kind}})
            await api.status(sid, "ACTIVE")
            say(f"reboot {kind} of {sid[:8]} on edge-1: ACTIVE")
        await api.call("POST", f"{V}/servers/{first[2]}/action", 202,
                       json={"rebuild": {"imageRef": base["imageRef"]}})
        await api.status(first[2], "ACTIVE")
        say(f"rebuild of {first[2][:8]}: RebuildInstance 1.1 sent as 1.0 to edge-1, ACTIVE")
        got, body = await api.once("POST", f"{V}/servers/{first[3]}/action",
                                   json={"rebuild": {"imageRef": base["imageRef"], "preserve_ephemeral": True}})
        say(f"rebuild of {first[3][:8]} with preserve_ephemeral: {got} {body['conflictingRequest']['message']}")
        assert got == 409 and "compute host edge-1 runs an older release" in body["conflictingRequest"]["message"]
        assert (await api.server(first[3]))["status"] == "ACTIVE"   # left as it was, free for the next action
        for sid in first[4:]:
            await api.call("DELETE", f"{V}/servers/{sid}", 204)
        for sid in first[4:]:
            await api.status(sid, "GONE")
        say(f"deleted {len(first[4:])} servers on edge-1")
        assert "message version refused" not in "\n".join(old.log)

        # The upgrade in place, while servers keep being asked for: one every 0.2 s, from
        # before the old compute stops until a few after the new one is up.
        batch: list[str] = []
        down: list[str] = []             # asked for while no compute process ran
        upgraded = asyncio.Event()

        async def boot_stream() -> None:
            after = 0
            while after < 4:
                sid = await api.boot(base, f"during-{len(batch)}")
                batch.append(sid)
                if old.proc.returncode is not None and not upgraded.is_set():
                    down.append(sid)
                after += upgraded.is_set()
                await asyncio.sleep(0.2)   # a steady stream, not a burst

        booting = asyncio.create_task(boot_stream(), name="e2e:boot-stream")
        try:
            await until(lambda: batch, lambda accepted: len(accepted) >= 4, what="four boots accepted",
                        timeout=WAIT, interval=0.05)
            old.proc.send_signal(signal.SIGTERM)
            await old.proc.wait()
            listed = (await api.call("GET", V + "/servers/detail", 200))["servers"]
            building = [s for s in listed if s["status"] == "BUILD"]
            say(f"edge-1 stopped (exit code {old.proc.returncode}): {len(batch)} boots asked for so far, "
                f"{len(building)} of them in BUILD")
            new = await stack.enter_async_context(serve(compute_dir, *compute_args))
            upgraded.set()
            processes["edge-1 (this release)"] = new
            release, cap = await record(database, "edge-1")
            say(f"edge-1 started again: release {release}, receives RebuildInstance {cap}; "
                f"{len(down)} boots were asked for while it was down")
            assert cap == "1.1"
            await asyncio.wait_for(booting, WAIT)
        finally:
            if not booting.done():
                booting.cancel()
                await asyncio.gather(booting, return_exceptions=True)

        servers = await api.settled()
        states = Counter(s["status"] for s in servers.values())
        say(f"after the upgrade: {len(servers)} servers, {dict(states)}")
        assert set(states) == {"ACTIVE"}, {sid: (s["status"], s.get("fault")) for sid, s in servers.items()}
        assert set(batch) <= set(servers) and down
        assert {s["OS-EXT-SRV-ATTR:host"] for s in servers.values()} == {"edge-1"}
        assert await allocated(api, "edge-1") == set(servers)
        say(f"placement: {len(servers)} allocations on edge-1, one per server")

        # What the old compute could not do, the upgraded one does (once the control has
        # read its record again: within bus/caps.py FRESH seconds).
        async def rebuilt() -> int:
            got, _ = await api.once("POST", f"{V}/servers/{first[3]}/action", json={
                "rebuild": {"imageRef": base["imageRef"], "preserve_ephemeral": True}})
            return got

        assert await until(rebuilt, lambda got: got == 202, what="a rebuild preserving ephemeral accepted",
                           timeout=WAIT, interval=1) == 202
        await api.status(first[3], "ACTIVE")
        say(f"rebuild of {first[3][:8]} with preserve_ephemeral on upgraded edge-1: ACTIVE")

        for sid in servers:
            await api.call("DELETE", f"{V}/servers/{sid}", 204)
        for sid in servers:
            await api.status(sid, "GONE")
        assert await allocated(api, "edge-1") == set()
        say(f"deleted all {len(servers)}: no server left, no allocation left")
        assert new.proc.returncode is None and control.proc.returncode is None
