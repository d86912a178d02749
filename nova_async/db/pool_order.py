"""The order in which one task may hold connections of several pools.

A task that holds a connection and waits for another one is safe only if no other task can
hold the second kind while waiting for the first: otherwise, once both pools are lent out,
each waits for the other for good. So a task takes connections in rank order (the API
database's pool first, then a compute cell's, then cell0's), never two of one pool, and never
a lower rank while it holds a higher one. Compute cells share a rank: a move between two of
them holds both, source first, and is the one order this check lets through unproved.

Checked on every `acquire()`: what the current task holds sits in a context variable, with
the task, so that a task started inside a block does not count its parent's connections as
its own. An acquire out of order is a bug: with NOVA_ASYNC_POOL_ORDER=strict (the test suite
sets it) it raises; otherwise it is logged, once per place in the code, and goes on."""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
from typing import Protocol

import structlog

log = structlog.get_logger("db.pool_order")

API, COMPUTE_CELL, CELL0 = 0, 1, 2   # the ranks


class Ranked(Protocol):
    rank: int
    name: str


class OutOfOrder(RuntimeError):
    """A connection taken while the task holds one it must not hold first."""


_HOLDING: contextvars.ContextVar[tuple[tuple[asyncio.Task | None, Ranked], ...]] = \
    contextvars.ContextVar("nova_async_pools_held", default=())
_OURS = (__file__, os.path.join(os.path.dirname(__file__), "pool.py"))   # not the caller
_reported: set[tuple[str, int]] = set()
seen: list[str] = []   # in strict mode, every acquire out of order (the tests check it is empty)


def taking(pool: Ranked) -> tuple:
    """Before a connection of `pool` is taken: check, and note it held. What `given_back` needs."""
    before = _HOLDING.get()
    task = asyncio.current_task()
    for holder, held in before:
        if holder is task and (held is pool or held.rank > pool.rank):
            _out_of_order(held, pool)
    _HOLDING.set(before + ((task, pool),))
    return before


def given_back(before: tuple) -> None:
    _HOLDING.set(before)


def _out_of_order(held: Ranked, wanted: Ranked) -> None:
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename in _OURS:
        frame = frame.f_back
    where = (frame.f_code.co_filename, frame.f_lineno)
    what = (f"a connection to {wanted.name} taken at {where[0]}:{where[1]} while holding one to "
            f"{held.name}: two tasks doing this in turn can wait for each other for good")
    if os.environ.get("NOVA_ASYNC_POOL_ORDER") == "strict":
        seen.append(what)   # the tests look here too: a background task's error may go unseen
        raise OutOfOrder(what)
    if where not in _reported:
        _reported.add(where)
        log.warning("database connections taken out of order", detail=what)
