"""DatabaseHealth's bookkeeping, without a database: since when a server is away, that its
return is announced once (and only after an outage, or a suspicion), and that the service
stops feeding the watchdog once the outage has lasted longer than its setting."""

from __future__ import annotations

import asyncio

from nova_async.config import load
from nova_async.db.health import DatabaseHealth, server_of
from nova_async.service import Service
from tests.waiting import until

API = "postgresql://nova@/nova?host=/run/pg"
CELL = "postgresql://nova@/nova_cell1?host=/run/pg"


def test_the_databases_of_one_server_share_its_fate():
    assert server_of(API) == server_of(CELL)
    assert server_of("postgresql://u:p@db1:5432/nova") != server_of("postgresql://u:p@db2:5432/nova")


async def test_an_outage_is_dated_from_its_first_report_and_its_end_announced_once():
    health = DatabaseHealth()
    back = health.next_return()
    health.reached(API)
    assert not back.is_set(), "nothing came back: nothing was away"
    assert health.outage() is None and health.unreachable_for() == 0.0

    health.lost(API, "connection refused")
    first = health.outage()
    assert first is not None and first.reason == "connection refused"
    health.lost(CELL, "the database system is starting up")  # the same server: the same outage
    assert health.outage() == first
    assert health.unreachable_for() >= 0.0

    health.reached(CELL)
    assert back.is_set() and health.outage() is None
    again = health.next_return()
    assert again is not back and not again.is_set()
    health.reached(API)
    assert not again.is_set()


async def test_a_suspicion_makes_the_next_answer_a_return():
    health = DatabaseHealth()
    back = health.next_return()
    health.suspect()   # a message's error said the database was away, elsewhere
    assert health.outage() is None, "a suspicion is not an outage"
    health.reached(API)
    assert back.is_set()


async def test_changes_are_told_to_those_who_follow_them():
    health = DatabaseHealth()
    seen: list[bool] = []

    async def follow() -> None:
        async for _ in health.changes():
            seen.append(health.outage() is None)
            if len(seen) == 2:
                return

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0)
    health.lost(API, "gone")
    await asyncio.sleep(0)
    health.reached(API)
    await asyncio.wait_for(follower, 5)
    assert seen == [False, True]


async def test_the_watchdog_is_withheld_once_the_outage_outlasts_the_setting(tmp_path):
    settings = load(None, {("service", "state_dir"): str(tmp_path), ("service", "database_outage_limit"): 0.05})
    service = Service(settings)
    assert service.withhold_watchdog() is None
    service.health.lost(API, "connection refused")
    withheld = await until(service.withhold_watchdog, lambda why: why is not None,
                           what="the watchdog withheld", interval=0.01)
    assert "database_outage_limit" in withheld
    service.health.reached(API)
    assert service.withhold_watchdog() is None
