"""Losing the database is survived, not hidden.

The private PostgreSQL's postmaster killed with SIGKILL (as the OOM killer does) while
boots are in flight: the service starts it again on its own, answers again, and every
server ends ACTIVE or ERROR saying why; no request is ever answered 500 (503 with
Retry-After while the database is away). A postmaster that keeps dying ends the service
with a non-zero status and a one-line reason, for systemd's Restart= to take over.

An external PostgreSQL (`--database`) stopped mid-burst (`pg_ctl -m immediate stop`, as a
crash or failover looks to a client) and started again: requests fail fast with 503 and
Retry-After while it is away, and the boots finish once it is back."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from nova_async.db import embedded
from nova_async.db.embedded import EmbeddedPostgres
from tests.e2e.conftest import serve
from tests.e2e.driver import NOAUTH_ADMIN, V, WAIT, Api
from tests.waiting import until

pytestmark = pytest.mark.e2e

BURST = 10
# A request still unanswered after this long hangs (the pool's connect deadline is 10 s).
HANG = aiohttp.ClientTimeout(total=60)


class PatientApi(Api):
    """Talks to the service the way a patient client does: a 503 is retried after the
    Retry-After it carries. Every answer is checked: never a 5xx other than 503, and no 503
    without Retry-After."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        super().__init__(session, url, NOAUTH_ADMIN)
        self.statuses: Counter[int] = Counter()

    def heard(self, method: str, path: str, resp: aiohttp.ClientResponse, text: str) -> None:
        self.statuses[resp.status] += 1
        assert resp.status < 500 or resp.status == 503, f"{method} {path}: {resp.status} {text}"
        if resp.status == 503:
            assert resp.headers.get("Retry-After", "").isdigit(), f"503 without Retry-After: {text}"

    async def call(self, method: str, path: str, status: int, **kw) -> Any:
        """`status` in the end, after as many 503s as it takes."""
        async def answer() -> tuple[int, Any]:
            return await self.once(method, path, **kw)

        # Sooner than Retry-After: this test is in a hurry.
        got, body = await until(answer, lambda answered: answered[0] != 503, what=f"{method} {path} not 503",
                                timeout=WAIT, interval=0.2)
        assert got == status, f"{method} {path}: {got} {body}"
        return body

    async def healthy(self) -> None:
        await until(lambda: self.once("GET", "/healthz"), lambda answered: answered[0] == 200,
                    what="/healthz 200", timeout=WAIT, interval=0.1)


@contextlib.asynccontextmanager
async def burst(api: PatientApi, base: dict, accepted: list[str]):
    """Boots BURST servers, a few at a time, retrying each POST the service answers 503; the
    block runs while they go (the caller breaks the database meanwhile)."""
    slots = asyncio.Semaphore(3)

    async def boot(i: int) -> None:
        async with slots:
            body = await api.call("POST", V + "/servers", 202, json={"server": {**base, "name": f"burst-{i}"}})
            accepted.append(body["server"]["id"])

    booting = asyncio.create_task(asyncio.wait_for(asyncio.gather(*(boot(i) for i in range(BURST))), WAIT),
                                  name="e2e:burst")
    try:
        await until(lambda: len(accepted) >= 3 or booting.done(), bool, what="three boots accepted",
                    timeout=WAIT, interval=0.01)
        yield
        await booting
    finally:
        if not booting.done():
            booting.cancel()
            await asyncio.gather(booting, return_exceptions=True)


def check_settled(servers: dict[str, dict], accepted: list[str]) -> None:
    print("servers after the outage:", Counter(s["status"] for s in servers.values()))
    assert set(accepted) <= set(servers), "an accepted server is gone"
    for server in servers.values():
        assert server["status"] in ("ACTIVE", "ERROR"), server
        if server["status"] == "ERROR":
            assert server.get("fault", {}).get("message"), server


@contextlib.asynccontextmanager
async def log_on_failure(served):
    """On failure: what the service said last (pytest shows it with the failure)."""
    try:
        yield
    except BaseException:
        print("\n".join(served.log[-300:]))
        raise


def state_dir(work_dir: Path, name: str) -> Path:
    return work_dir / f"{name}-{uuid.uuid4().hex[:8]}"


def postmaster(state: Path) -> int:
    pid = EmbeddedPostgres(state).postmaster_pid()
    assert pid is not None, "the private PostgreSQL is not running"
    return pid


async def restarted(state: Path, old: int) -> int:
    """The pid of the postmaster that replaced `old` (started by the service, not by us)."""
    return await until(EmbeddedPostgres(state).postmaster_pid, lambda pid: pid is not None and pid != old,
                       what="a new postmaster", timeout=WAIT, interval=0.1)


async def test_private_postgres_killed_under_load_is_restarted_by_the_service(work_dir):
    state = state_dir(work_dir, "dbloss-private")
    async with serve(state, "--auth", "noauth", "--simulate-hosts", "2") as served, \
            aiohttp.ClientSession(timeout=HANG) as session, log_on_failure(served):
        api = PatientApi(session, served.url)
        base = await api.boot_base("dbloss", "10.30.0.0/16")
        accepted: list[str] = []
        async with burst(api, base, accepted):
            old = postmaster(state)
            os.kill(old, signal.SIGKILL)
            new = await restarted(state, old)
        await api.healthy()
        check_settled(await api.settled(), accepted)
        assert len(accepted) == BURST
        print("answers:", dict(api.statuses))
        # Still working: a server booted now is ACTIVE.
        last = (await api.call("POST", V + "/servers", 202, json={"server": {**base, "name": "after"}}))
        assert (await api.settled())[last["server"]["id"]]["status"] == "ACTIVE"
        assert postmaster(state) == new
        assert any("starting it again" in line for line in served.log)
    assert served.proc.returncode == 0, "\n".join(served.log[-40:])


async def test_a_private_postgres_that_keeps_dying_ends_the_service(work_dir):
    state = state_dir(work_dir, "dbloss-dying")
    config = work_dir / f"{state.name}.toml"
    config.write_text("[service]\nprivate_database_deaths = 2\nprivate_database_window = 600\n")
    async with serve(state, "--auth", "noauth", "--roles", "identity,api", "--config", str(config)) as served:
        first = postmaster(state)
        os.kill(first, signal.SIGKILL)
        second = await restarted(state, first)
        os.kill(second, signal.SIGKILL)
        async with asyncio.timeout(WAIT):
            code = await served.proc.wait()
    assert code == 1
    reasons = [line for line in served.log if line.startswith("nova-async: ")]
    assert len(reasons) == 1 and "died 2 times within 600 s" in reasons[0], served.log[-20:]
    assert EmbeddedPostgres(state).postmaster_pid() is None


@contextlib.asynccontextmanager
async def own_cluster(work_dir: Path):
    """A PostgreSQL of this test's own, as an operator's server would be: durable (with
    synchronous_commit off, an immediate stop loses commits that were answered)."""
    pg = EmbeddedPostgres(state_dir(work_dir, "dbloss-external"))
    await pg.start()
    try:
        yield pg
    finally:
        await pg.stop()  # when it still runs


async def test_an_external_postgres_restart_is_ridden_out(work_dir):
    async with own_cluster(work_dir) as pg:
        state = state_dir(work_dir, "dbloss-external-state")
        async with serve(state, "--auth", "noauth", "--simulate-hosts", "2", "--database", pg.dsn) as served, \
                aiohttp.ClientSession(timeout=HANG) as session, log_on_failure(served):
            api = PatientApi(session, served.url)
            base = await api.boot_base("dbloss", "10.30.0.0/16")
            accepted: list[str] = []
            async with burst(api, base, accepted):
                await embedded._run(*pg.prefix, embedded.find_bin("pg_ctl"), "-D", str(pg.data),
                                    "-m", "immediate", "-w", "stop")
                # Away: every request fails fast with 503 and Retry-After, /healthz says so.
                for path in ("/healthz", V + "/servers/detail", V + "/flavors"):
                    await until(lambda: api.once("GET", path), lambda answered: answered[0] == 503,
                                what=f"GET {path} 503", timeout=WAIT, interval=0.1)
                await pg.start()
            await api.healthy()
            check_settled(await api.settled(), accepted)
            assert len(accepted) == BURST
            assert api.statuses[503] >= 3
            print("answers:", dict(api.statuses))
            last = (await api.call("POST", V + "/servers", 202, json={"server": {**base, "name": "after"}}))
            assert (await api.settled())[last["server"]["id"]]["status"] == "ACTIVE"
        assert served.proc.returncode == 0, "\n".join(served.log[-40:])
