"""A real `nova-async serve` under the sd_notify protocol, spoken by the test as systemd
speaks it: a unix datagram socket in NOTIFY_SOCKET, the sender's pid read from the kernel's
credentials (what NotifyAccess=main checks), WATCHDOG_USEC for the keep-alive. A database
gone for longer than service.database_outage_limit shows in STATUS= and starves the watchdog."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import socket
import struct
import uuid

import aiohttp
import pytest

from nova_async.db import embedded
from nova_async.db.embedded import EmbeddedPostgres
from tests.e2e.conftest import serve
from tests.waiting import until

pytestmark = pytest.mark.e2e

CREDENTIALS = struct.Struct("iII")  # struct ucred: pid, uid, gid


@dataclasses.dataclass
class Datagram:
    pid: int
    fields: dict[str, str]


class SystemdSide:
    """Collects what the service sends, as systemd's manager would receive it."""

    def __init__(self) -> None:
        self.name = f"@nova-async-e2e-{uuid.uuid4()}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind("\0" + self.name[1:])
        self.sock.setblocking(False)
        self.received: list[Datagram] = []
        self.arrived = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.sock.fileno(), self._read)

    def _read(self) -> None:
        while True:
            try:
                data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(CREDENTIALS.size))
            except BlockingIOError:
                break
            pid = next(CREDENTIALS.unpack(cdata[:CREDENTIALS.size])[0] for level, kind, cdata in ancillary
                       if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS)
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            self.received.append(Datagram(pid, fields))
        self.arrived.set()

    async def wait_for(self, predicate, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self.received):
                self.arrived.clear()
                await self.arrived.wait()

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self.sock.fileno())
        self.sock.close()


@contextlib.asynccontextmanager
async def systemd_side():
    side = SystemdSide()
    try:
        yield side
    finally:
        side.close()


def count(received: list[Datagram], key: str, value: str = "1") -> int:
    return sum(1 for d in received if d.fields.get(key) == value)


async def test_ready_only_once_every_role_serves_then_watchdog_then_stopping(work_dir):
    async with systemd_side() as systemd:
        env = {"NOTIFY_SOCKET": systemd.name, "WATCHDOG_USEC": "1000000"}
        # No --database: the private PostgreSQL is a child, and Debian's postgres speaks
        # sd_notify too. Only the service itself may ever be heard.
        async with serve(work_dir / "systemd-notify", "--libvirt-uri", "test:///default", env=env) as served:
            pid = served.proc.pid
            await systemd.wait_for(lambda r: count(r, "READY") == 1)
            ready_at = next(i for i, d in enumerate(systemd.received) if d.fields.get("READY") == "1")
            statuses = [d.fields["STATUS"] for d in systemd.received[:ready_at] if "STATUS" in d.fields]
            assert any("waiting for role" in s or "starting roles" in s for s in statuses), statuses
            assert systemd.received[ready_at].fields["STATUS"].startswith(f"ready at {served.url}")

            # What READY=1 promised: every role answers, the compute host is registered.
            async with aiohttp.ClientSession() as s:
                headers = {"X-Auth-Token": await served.token(s)}
                async with s.get(f"{served.url}/compute/v2.1/os-services", headers=headers) as r:
                    services = {v["binary"]: v["state"] for v in (await r.json())["services"]}
                assert services.get("nova-compute") == "up", services
                async with s.get(f"{served.url}/placement/resource_providers", headers=headers) as r:
                    assert len((await r.json())["resource_providers"]) == 1

            # The keep-alive keeps coming (every 0.5 s here) while the service runs.
            after_ready = lambda r: count(r[ready_at:], "WATCHDOG") >= 3  # noqa: E731
            await systemd.wait_for(after_ready, timeout=30)

            served.proc.send_signal(signal.SIGTERM)
            await systemd.wait_for(lambda r: count(r, "STOPPING") == 1, timeout=60)
            async with asyncio.timeout(60):
                assert await served.proc.wait() == 0
    assert count(systemd.received, "READY") == 1
    assert {d.pid for d in systemd.received} == {pid}, "a child process spoke to systemd"


async def test_a_database_gone_too_long_is_in_the_status_and_starves_the_watchdog(work_dir):
    pg = EmbeddedPostgres(work_dir / f"systemd-db-{uuid.uuid4().hex[:8]}")
    await pg.start()
    config = work_dir / f"systemd-db-{uuid.uuid4().hex[:8]}.toml"
    config.write_text("[service]\ndatabase_outage_limit = 1\n")
    try:
        async with systemd_side() as systemd:
            env = {"NOTIFY_SOCKET": systemd.name, "WATCHDOG_USEC": "200000"}
            async with serve(work_dir / f"systemd-db-state-{uuid.uuid4().hex[:8]}", "--auth", "noauth",
                             "--roles", "identity,api", "--database", pg.dsn, "--config", str(config),
                             env=env) as served:
                await systemd.wait_for(lambda r: count(r, "READY") == 1 and count(r, "WATCHDOG") >= 2)
                await embedded._run(*pg.prefix, embedded.find_bin("pg_ctl"), "-D", str(pg.data),
                                    "-m", "immediate", "-w", "stop")
                await systemd.wait_for(lambda r: any(d.fields.get("STATUS", "").startswith(
                    "database unreachable since") for d in r))
                await until(lambda: served.log, lambda log: any("no longer feeding the systemd watchdog" in line
                                                                for line in log),
                            what="the watchdog no longer fed", timeout=60, interval=0.1,
                            show=lambda log: "\n" + "\n".join(log[-20:]))
                await asyncio.sleep(0.2)  # a ping sent before that line may still be on its way
                starved = count(systemd.received, "WATCHDOG")
                await asyncio.sleep(1)  # five intervals without a ping
                assert count(systemd.received, "WATCHDOG") == starved
                async with aiohttp.ClientSession() as s:
                    async with s.get(f"{served.url}/healthz") as r:
                        assert r.status == 503 and (await r.json())["database"]["status"] == "unreachable"

                away = len(systemd.received)
                await pg.start()  # back: the status says ready again, and the watchdog is fed again
                await systemd.wait_for(lambda r: count(r[away:], "WATCHDOG") >= 2 and any(
                    d.fields.get("STATUS", "").startswith("ready at") for d in r[away:]))
            assert served.proc.returncode == 0
    finally:
        await pg.stop()  # when it still runs
