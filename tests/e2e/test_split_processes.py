"""Roles split over processes, as on several hosts: one control process and three compute
processes (libvirt's test driver, hosts edge-1..3) sharing one PostgreSQL and one RabbitMQ.

Servers spread over all three hosts; a compute process that dies is shown down within
`service_down_time` (heartbeats every `report_interval`) and gets no new servers; RabbitMQ
restarted in the middle of a batch leaves no server in BUILD."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections import Counter

import aiohttp
import pytest

from tests.e2e.conftest import serve
from tests.e2e.driver import NOAUTH_ADMIN, WAIT, Api
from tests.rabbitmq import available, started
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]

CONTROL_ROLES = "identity,image,network,placement,api,conductor,scheduler"
REPORT_INTERVAL = 1
SERVICE_DOWN_TIME = 5


@pytest.fixture(scope="module")
async def rabbitmq(work_dir):
    async with started(work_dir / "rabbitmq-split") as broker:
        yield broker


def print_logs(processes: dict) -> None:
    """On failure: what each process said last (pytest shows it with the failure)."""
    for name, served in processes.items():
        print(f"--- {name} (exit code {served.proc.returncode}) ---")
        print("\n".join(served.log[-80:]))


def host_of(server: dict) -> str:
    return server["OS-EXT-SRV-ATTR:host"]


async def test_control_and_three_compute_processes_over_rabbitmq(rabbitmq, database, work_dir):
    config = work_dir / "split.toml"
    config.write_text(f"[compute]\nreport_interval = {REPORT_INTERVAL}\n"
                      f"[scheduler]\nservice_down_time = {SERVICE_DOWN_TIME}\n")
    common = ("--transport", rabbitmq.url, "--database", database, "--auth", "noauth", "--config", str(config))
    async with contextlib.AsyncExitStack() as stack:
        control = await stack.enter_async_context(
            serve(work_dir / "split-control", "--roles", CONTROL_ROLES, *common))
        computes = {}
        for i in (1, 2, 3):  # each its own machine: its own state dir and libvirt test driver
            computes[f"edge-{i}"] = await stack.enter_async_context(
                serve(work_dir / f"split-edge-{i}", "--roles", "compute", "--host", f"edge-{i}",
                      "--libvirt-uri", "test:///default", *common))
        session = await stack.enter_async_context(aiohttp.ClientSession())
        api = Api(session, control.url, NOAUTH_ADMIN)
        stack.push(lambda *exc: print_logs({"control": control, **computes}) if exc[0] else None)
        assert await api.services() == {"edge-1": "up", "edge-2": "up", "edge-3": "up"}
        base = await api.boot_base("split", "10.20.0.0/16")

        # 30 servers, requested at once, spread over the three compute processes.
        first = await asyncio.gather(*(api.boot(base, f"split-{i}") for i in range(30)))
        servers = await api.settled(first)
        assert [s["status"] for s in servers.values()] == ["ACTIVE"] * 30, servers
        spread = Counter(host_of(s) for s in servers.values())
        assert set(spread) == {"edge-1", "edge-2", "edge-3"}, spread

        # A compute process dies: shown down once its heartbeats stop, and given nothing new.
        computes["edge-3"].proc.send_signal(signal.SIGKILL)
        await computes["edge-3"].proc.wait()
        await until(api.services, lambda states: states.get("edge-3") == "down", what="edge-3 shown down",
                    timeout=WAIT, interval=REPORT_INTERVAL / 2)
        assert await api.services() == {"edge-1": "up", "edge-2": "up", "edge-3": "down"}
        after = await asyncio.gather(*(api.boot(base, f"after-{i}") for i in range(9)))
        servers = await api.settled(after)
        assert [s["status"] for s in servers.values()] == ["ACTIVE"] * 9, servers
        assert {host_of(s) for s in servers.values()} <= {"edge-1", "edge-2"}

        # RabbitMQ restarts in the middle of a batch: every server still ends ACTIVE, or ERROR
        # saying why; none stays in BUILD.
        batch: list[str] = []
        slots = asyncio.Semaphore(4)  # a steady stream of requests, four at a time

        async def boot_one(i: int) -> None:
            async with slots:
                batch.append(await api.boot(base, f"restart-{i}"))

        async def boot_batch() -> None:
            await asyncio.gather(*(boot_one(i) for i in range(20)))

        booting = asyncio.create_task(boot_batch(), name="e2e:boot-batch")
        try:
            await until(lambda: batch, lambda accepted: len(accepted) >= 6, what="six boots accepted",
                        timeout=WAIT, interval=0.05)
            await rabbitmq.restart()
            await asyncio.wait_for(booting, WAIT)
        finally:
            if not booting.done():
                booting.cancel()
                await asyncio.gather(booting, return_exceptions=True)
        servers = await api.settled(batch)
        print("after the broker restart:", Counter(s["status"] for s in servers.values()))
        for server in servers.values():
            assert server["status"] in ("ACTIVE", "ERROR"), server
            if server["status"] == "ERROR":
                assert server.get("fault", {}).get("message"), server
        assert {host_of(s) for s in servers.values() if s["status"] == "ACTIVE"} <= {"edge-1", "edge-2"}
        # The control plane kept working through the restart: a server booted afterwards is ACTIVE.
        last = await api.boot(base, "after-restart")
        assert (await api.settled([last]))[last]["status"] == "ACTIVE"
        for name, served in computes.items():
            if name != "edge-3":
                assert served.proc.returncode is None, "\n".join(served.log[-40:])
