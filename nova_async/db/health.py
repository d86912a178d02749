"""Whether the database answers, and the moments it comes back.

A service whose database is gone must say so (503s that say when to retry, /healthz, the
systemd status line, a watchdog that stops being fed) and must pick its work up again when
the database returns, as it would after a restart. This is where all of that learns the
database's state:

- every pool reports here (db/pool.py, the one place asyncpg's connection-loss errors become
  errors.DatabaseUnavailable): a connection the server dropped, a connect that failed, and
  a connect that worked again;
- the private cluster's supervisor (db/embedded.py) reports its postmaster's death at once;
- a probe (`watch`, a task of the service) asks each server on a connection of its own:
  every `probe_interval` while it answers, so that an idle service notices an outage too,
  and every `retry_interval` while it does not, so that the return is noticed without
  traffic. The probe connection's end (the server closing it) wakes the probe at once.

`returns()` yields each time every server answers again after an outage; the roles run
their start-up recovery sweeps then (the conductor reschedules what was never scheduled,
compute redoes what it was interrupted in)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import structlog

from nova_async.common.flags import Flag

log = structlog.get_logger("db.health")

PROBE_INTERVAL = 5.0    # seconds between probes of a server that answers
RETRY_INTERVAL = 1.0    # seconds between probes of a server that does not
PROBE_TIMEOUT = 5.0     # a probe (connect + SELECT 1) that takes longer is a server not answering


@dataclass(frozen=True)
class Outage:
    since: float        # time.monotonic()
    since_wall: float   # time.time(), for people
    reason: str

    def seconds(self) -> float:
        return time.monotonic() - self.since

    def since_text(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since_wall))


def server_of(dsn: str) -> str:
    """The server a DSN points at (its databases share one fate): the DSN without its database."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=""))


class DatabaseHealth:
    """The reachability of the database servers of this process, shared by all its pools."""

    def __init__(self, *, probe_interval: float = PROBE_INTERVAL, retry_interval: float = RETRY_INTERVAL,
                 probe_timeout: float = PROBE_TIMEOUT) -> None:
        self.probe_interval = probe_interval
        self.retry_interval = retry_interval
        self.probe_timeout = probe_timeout
        self._servers: dict[str, str] = {}      # server → a DSN the probe connects with
        self._down: dict[str, Outage] = {}
        self._suspected = False                 # an error elsewhere said it may have been away
        self._wake = asyncio.Event()            # probe now
        # Set, then replaced by a fresh one, at each change / each return: a waiter holds the
        # one it took and misses nothing that happens after it took it.
        self._changed = Flag()
        self._returned = Flag()

    def register(self, dsn: str) -> None:
        """A pool opened to `dsn`: its server is probed from now on."""
        self._servers.setdefault(server_of(dsn), dsn)

    # -- what the pools and the supervisor report

    def lost(self, dsn: str, reason: str) -> None:
        """The server of `dsn` did not answer: unreachable from now, until it answers again."""
        server = server_of(dsn)
        if server in self._down:
            return
        # News: the probe looks at once (and, finding it still away, waits its interval; a
        # connect refused fails without ever yielding to the loop, so only news may wake it).
        self._wake.set()
        self._down[server] = Outage(time.monotonic(), time.time(), reason)
        log.warning("database unreachable; requests that need it answer 503 until it is back",
                    reason=reason)
        self._fire("_changed")

    def reached(self, dsn: str) -> None:
        """The server of `dsn` answered."""
        outage = self._down.pop(server_of(dsn), None)
        if outage is not None:
            log.info("database reachable again", seconds=round(outage.seconds(), 1))
            self._fire("_changed")
        if (outage is not None or self._suspected) and not self._down:
            self._suspected = False
            self._fire("_returned")

    def suspect(self) -> None:
        """Something failed because the database was unreachable, as another process saw it (a
        message's error): probe now, and count the next answer as a return, so that the work
        that failed is resumed even though this process's own connections never broke."""
        self._suspected = True
        self._wake.set()

    def wake(self) -> None:
        """Probe now (the private cluster was started again, say)."""
        self._wake.set()

    # -- what the service and the roles read

    def outage(self) -> Outage | None:
        """The longest outage under way, or None when every server answers."""
        return min(self._down.values(), key=lambda o: o.since, default=None)

    def unreachable_for(self) -> float:
        outage = self.outage()
        return 0.0 if outage is None else outage.seconds()

    def next_return(self) -> asyncio.Event:
        """An event set at the next return of the database (take it before the work that the
        return should be noticed after)."""
        return self._returned

    async def changes(self) -> AsyncIterator[None]:
        """Yields after each change (a server lost or reached again)."""
        waiting = self._changed
        while True:
            await waiting.wait()
            waiting = self._changed
            yield

    def _fire(self, name: str) -> None:
        event = getattr(self, name)
        setattr(self, name, Flag())
        event.set()

    # -- the probe

    async def watch(self) -> None:
        """Probe every server until cancelled (a task of the service)."""
        probes: dict[str, asyncpg.Connection] = {}
        try:
            while True:
                self._wake.clear()
                for server, dsn in list(self._servers.items()):
                    await self._probe(server, dsn, probes)
                pause = self.retry_interval if self._down or self._suspected else self.probe_interval
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await self._wake.wait()
        finally:
            for conn in probes.values():
                conn.terminate()

    async def _probe(self, server: str, dsn: str, probes: dict[str, asyncpg.Connection]) -> None:
        conn = probes.get(server)
        try:
            async with asyncio.timeout(self.probe_timeout):
                if conn is None or conn.is_closed():
                    conn = None
                    conn = probes[server] = await asyncpg.connect(dsn)
                    # The server closing it (a restart, a crash) is news: probe at once.
                    conn.add_termination_listener(lambda _conn: self._wake.set())
                await conn.fetchval("SELECT 1")
        except Exception as exc:  # whatever it is, the server did not answer
            probes.pop(server, None)
            if conn is not None:
                conn.terminate()
            self.lost(dsn, describe(exc))
        else:
            self.reached(dsn)


def describe(exc: BaseException) -> str:
    """An error as one line: its text, else its kind."""
    text = " ".join(str(exc).split())
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return text or type(exc).__name__
