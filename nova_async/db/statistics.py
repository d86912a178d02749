"""Planner statistics that keep up with tables growing fast from small.

PostgreSQL plans a statement for the table sizes its statistics give, and a connection keeps
the plan of a prepared statement (and of each statement in a function) until something
invalidates it. A table that starts empty and fills in a burst (a new site's first boots:
instances, their actions and events, ports, allocations) is then read by plans made while
it was empty, whole-table scans, until autovacuum analyzes it; autovacuum looks once a minute.
In bench/schedule_rate.py (a fresh site, 2,000 boots in seconds) no table got statistics
during the run, and whole-table scans read ~2.9 million rows (~1.8 million with this).

So one process (the lease `conductor:statistics`) looks at every database every few seconds
and ANALYZEs the tables that hold twice the rows they held at their last statistics: a few
times as a table grows to thousands of rows, rarely once it is large. New statistics make the
plans be made again. Rows updated or replaced do not count (the event stream, once at its
backlog, prunes as many rows as it adds; analyzing it for that churn cost ~0.15 ms of
PostgreSQL's CPU per boot in that bench): autovacuum follows churn with its own ANALYZEs, and
a table one of them holds is left to it.

A database where no row was inserted since the last look cannot hold a table that doubled, so
the caller may keep, per database, the count of rows inserted as of its last look (`seen`):
such a database is not looked at again. (An ANALYZE writes its statistics as rows too, so a
look that analyzed something is followed by one more.) A look that finds nothing reads the
catalog and the statistics of every table: ~1.5 ms of PostgreSQL's CPU back to back, 10–25 ms
on this kind of machine after an idle spell, three databases every two seconds. That was the
largest part of an idle service's database work (~2.5% of a core); the counter read is one row."""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("statistics")
log = structlog.get_logger("statistics")

INTERVAL = 2.0      # seconds between looks
LEAST_ROWS = 200    # rows a table holds before its first statistics: a smaller one is read whole anyway


async def refresh(pools: Iterable[Pool], seen: dict[Pool, int] | None = None) -> list[str]:
    """ANALYZE, in each database, the tables that doubled since their statistics; their names (a
    table another ANALYZE held is named too: it is being analyzed). `seen`: each database's
    count of inserted rows at the last look, kept by the caller; a database with none inserted
    since is skipped (without `seen`, every database is looked at)."""
    analyzed: list[str] = []
    for pool in pools:
        if seen is not None:
            inserted = await pool.fetchval(Q.rows_inserted)
            if seen.get(pool) == inserted:
                continue
            seen[pool] = inserted   # as of before the look: rows counted later are looked at next time
        analyzed += [r["name"] for r in await pool.fetch(Q.refresh, LEAST_ROWS)]
    if analyzed:
        log.debug("statistics refreshed", tables=",".join(analyzed))
    return analyzed
