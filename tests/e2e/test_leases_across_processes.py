"""Two full nodes (every control role plus a compute host each, libvirt's test driver) on one
PostgreSQL and one RabbitMQ, and one of them killed: os-services lists each node's
conductor, scheduler and compute; the dead node's are shown down; the global job it led
(conductor/stranded.py, under its lease) moves to the survivor, which fails a build the dead
host left and deletes a server on it at once (Nova's local delete)."""

from __future__ import annotations

import contextlib
import signal

import aiohttp
import asyncpg
import pytest

from nova_async.db.cells import cell_dsn
from tests.e2e.conftest import serve
from tests.e2e.driver import NOAUTH_ADMIN, WAIT, Api
from tests.rabbitmq import available, started
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]

ROLES = "identity,image,network,placement,api,conductor,scheduler,compute"


def leads(served) -> bool:
    """Whether the node said it took the stranded job's lease (its log is JSON lines)."""
    return any("leading a job" in line and "conductor:stranded" in line for line in served.log)


def print_logs(nodes: dict) -> None:
    for name, served in nodes.items():
        print(f"--- {name} (exit code {served.proc.returncode}) ---")
        print("\n".join(served.log[-80:]))


async def all_services(api: Api) -> dict[tuple[str, str], str]:
    listed = (await api.call("GET", "/compute/v2.1/os-services", 200))["services"]
    return {(s["binary"], s["host"]): s["state"] for s in listed}


async def test_a_node_dies_and_the_survivor_takes_over_its_jobs(database, work_dir):
    config = work_dir / "leases.toml"
    config.write_text("[compute]\nreport_interval = 1\n[scheduler]\nservice_down_time = 5\n")
    async with contextlib.AsyncExitStack() as stack:
        broker = await stack.enter_async_context(started(work_dir / "rabbitmq-leases"))
        common = ("--transport", broker.url, "--database", database, "--auth", "noauth", "--config", str(config),
                  "--roles", ROLES, "--libvirt-uri", "test:///default")
        # Image data is kept under a node's state directory: the nodes share one store, as the
        # nodes of a site share Glance's.
        (work_dir / "leases-images").mkdir()
        for name in ("node-a", "node-b"):
            (work_dir / f"leases-{name}").mkdir()
            (work_dir / f"leases-{name}" / "images").symlink_to(work_dir / "leases-images")
        nodes = {name: await stack.enter_async_context(serve(work_dir / f"leases-{name}", "--host", name, *common))
                 for name in ("node-a", "node-b")}
        session = await stack.enter_async_context(aiohttp.ClientSession())
        stack.push(lambda *exc: print_logs(nodes) if exc[0] else None)
        api = Api(session, nodes["node-a"].url, NOAUTH_ADMIN)
        assert await all_services(api) == {(b, n): "up" for n in nodes
                                           for b in ("nova-compute", "nova-conductor", "nova-scheduler")}

        # Two servers on each node's compute host (each host its own availability zone).
        base = await api.boot_base("leases", "10.30.0.0/24")
        for name in nodes:
            aggregate = (await api.call("POST", "/compute/v2.1/os-aggregates", 200, json={"aggregate": {
                "name": name, "availability_zone": f"zone-{name}"}}))["aggregate"]
            await api.call("POST", f"/compute/v2.1/os-aggregates/{aggregate['id']}/action", 200,
                           json={"add_host": {"host": name}})
        booted = [await api.boot({**base, "availability_zone": f"zone-{name}"}, f"vm-{name}-{i}")
                  for name in nodes for i in range(2)]
        servers = await api.settled(booted)
        assert [s["status"] for s in servers.values()] == ["ACTIVE"] * 4, servers
        # The zones are the compute hosts': the conductors and schedulers stay `internal`.
        listed = (await api.call("GET", "/compute/v2.1/os-services", 200))["services"]
        assert {(s["binary"], s["zone"]) for s in listed} == {
            ("nova-compute", "zone-node-a"), ("nova-compute", "zone-node-b"),
            ("nova-conductor", "internal"), ("nova-scheduler", "internal")}

        # The node that leads the stranded job dies.
        leader = await until(lambda: [n for n, s in nodes.items() if leads(s)], lambda found: len(found) == 1,
                             what="one node leads the stranded job", timeout=WAIT, interval=0.2)
        dead, alive = leader[0], next(n for n in nodes if n != leader[0])
        nodes[dead].proc.send_signal(signal.SIGKILL)
        await nodes[dead].proc.wait()
        api = Api(session, nodes[alive].url, NOAUTH_ADMIN)
        await until(lambda: leads(nodes[alive]), what=f"{alive} leads the stranded job", timeout=WAIT, interval=0.2)
        await until(lambda: all_services(api), lambda states: all(
            state == ("down" if host == dead else "up") for (_, host), state in states.items()),
            what=f"{dead}'s services down", timeout=WAIT, interval=0.5)

        # A build the dead host was doing (its row as it left it) ends in ERROR, saying why.
        stuck, doomed = [sid for sid, s in servers.items() if s["OS-EXT-SRV-ATTR:host"] == dead]
        api_db = await asyncpg.connect(database)
        try:
            connection = await api_db.fetchval("SELECT database_connection FROM cell_mappings WHERE name = 'cell1'")
        finally:
            await api_db.close()
        cell = await asyncpg.connect(cell_dsn(database, connection))
        try:
            await cell.execute("UPDATE instances SET vm_state = 'building', task_state = 'spawning' WHERE uuid = $1",
                               stuck)
        finally:
            await cell.close()
        server = await until(lambda: api.server(stuck), lambda s: s["status"] == "ERROR",
                             what="the stranded build in ERROR", timeout=WAIT, interval=0.2)
        assert server["fault"]["message"] == f"Compute host {dead} went down while building the server"

        # A server on the dead host is deleted at once, and what it held elsewhere goes.
        for server_id in (stuck, doomed):
            await api.call("DELETE", f"/compute/v2.1/servers/{server_id}", 204)
            await api.status(server_id, "GONE")
            allocations = await api.call("GET", f"/placement/allocations/{server_id}", 200)
            assert allocations["allocations"] == {}
        # The survivor still builds.
        last = await api.boot(base, "after")   # any zone
        assert (await api.status(last, "ACTIVE"))["OS-EXT-SRV-ATTR:host"] == alive
