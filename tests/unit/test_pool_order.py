"""db/pool_order.py: the order in which one task may hold connections of several pools."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from nova_async.db import pool_order


@dataclass(eq=False)
class FakePool:
    name: str
    rank: int


API = FakePool("nova", pool_order.API)
CELL1 = FakePool("nova_cell1", pool_order.COMPUTE_CELL)
CELL2 = FakePool("nova_cell2", pool_order.COMPUTE_CELL)
CELL0 = FakePool("nova_cell0", pool_order.CELL0)


def hold(*pools):
    """Take `pools` in turn; every `before`, to give them back in reverse."""
    return [pool_order.taking(p) for p in pools]


def release(befores) -> None:
    for before in reversed(befores):
        pool_order.given_back(before)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("NOVA_ASYNC_POOL_ORDER", "strict")
    yield
    pool_order.seen.clear()   # what these tests provoke on purpose


async def test_the_api_then_a_compute_cell_then_cell0_is_the_order():
    release(hold(API, CELL1, CELL0))
    release(hold(CELL1, CELL2))   # a move between compute cells: the one order let through


@pytest.mark.parametrize("first, second", [(CELL1, API), (CELL0, CELL1), (API, API), (CELL1, CELL1)])
async def test_a_lower_rank_or_the_same_pool_while_holding_is_refused(first, second):
    befores = hold(first)
    with pytest.raises(pool_order.OutOfOrder, match=f"a connection to {second.name} taken at .*test_pool_order"):
        pool_order.taking(second)
    release(befores)
    release(hold(second))   # given back, it may be taken again


async def test_a_task_started_inside_a_block_does_not_count_its_parents_connections():
    befores = hold(CELL1)
    await asyncio.create_task(asyncio.to_thread(lambda: None))
    await asyncio.ensure_future(_take_and_give_back(API))
    release(befores)


async def _take_and_give_back(pool) -> None:
    release(hold(pool))


async def test_outside_strict_mode_it_is_logged_once_per_place_and_goes_on(monkeypatch):
    monkeypatch.delenv("NOVA_ASYNC_POOL_ORDER")
    logged = []
    monkeypatch.setattr(pool_order.log, "warning", lambda event, **kw: logged.append(kw["detail"]))
    befores = hold(CELL1)
    for _ in range(3):
        release([pool_order.taking(API)])
    release(befores)
    assert len(logged) == 1 and "a connection to nova taken at" in logged[0]
