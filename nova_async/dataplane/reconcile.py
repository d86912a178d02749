"""The reconciler: makes this host match the database, again and again, level-triggered.

A pass reads the whole desired state (desired.read, one snapshot) and hands it to each part
in order — bridges and DHCP first (every other part plugs into a network's bridge), then
metadata, routers, firewall. Passes come:
- at start (this is also recovery: a part removes what its Made record lists and the
  database no longer wants, whatever a crash left);
- after each NOTIFY on `nova_async_dataplane` (sql/functions/dataplane_changed.sql), heard on
  a connection of its own. Notifications that arrive while a pass runs make ONE more pass
  after it: a burst of changes costs two passes, not one per change;
- when the listening connection is made again after a database outage (what was notified
  meanwhile is lost, so a pass reads everything again);
- every `interval` seconds, a safety net for anything changed behind our back;
- after a failure, with backoff (1 s doubling to `interval`) until a pass is clean.

A part that raises is logged; the pass goes on with the next part (a broken router must not
leave DHCP unserved), and the failure is reported to whoever waits in `settled()`.

`settled()` waits until a pass that STARTED after the call has finished, and returns what
failed in it: a guest's ports are served once such a pass is clean, since it read the
database after the port was committed (dataplane/role.py answers compute's PortsReady so)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import structlog

from nova_async.bus import Bus
from nova_async.common import errors
from nova_async.config import NetworkSettings
from nova_async.dataplane import desired
from nova_async.dataplane.desired import Desired
from nova_async.dataplane.made import Made
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.network.client import NetworkClient

log = structlog.get_logger("dataplane")

CHANNEL = "nova_async_dataplane"
INTERVAL = 60.0         # seconds between safety passes
FIRST_BACKOFF = 1.0     # seconds before the retry of a failed pass; doubles up to INTERVAL
RELISTEN_PAUSE = 5.0    # seconds before listening again when the database's return is not heard


@dataclass(frozen=True)
class PartDeps:
    """What every part is built with (`Part(deps)`), the same for all parts of one host.

    - pool: the API database, where networks, ports, security groups, routers and
      `dataplane_objects` live. Parts read the desired state only through the `Desired` they
      are given; they use the pool for their own bookkeeping (Made) and answers.
    - cells: the cell databases (instances live there), e.g. for the metadata service.
    - made: the record of what this host made (made.py): `record` BEFORE making a thing,
      `forget` AFTER it is gone; `listed(kind)` is what to clean up. Kinds are per part
      (prefix them with the part's name when they could clash: `dhcp-dnsmasq`, `router-ns`…).
    - settings: `[network]`; host: this host's name (the compute host's); state_dir: a
      directory of the data plane's own under the service's state directory (parts make
      their subdirectory in it); network: the network role's bus client (ports it makes);
      bus: the bus itself, for any other client a part needs.
    - poke: ask for a pass soon, from outside one (a child process of the part died, say).
    """

    pool: Pool
    cells: Cells
    made: Made
    settings: NetworkSettings
    host: str
    state_dir: Path
    network: NetworkClient
    bus: Bus
    poke: Callable[[], None]


class Part(Protocol):
    """One piece of the host's networking. Built with a PartDeps; `apply` and `close` are only
    ever called from the reconciler's task, one at a time."""

    name: str

    async def apply(self, want: Desired) -> None:
        """Make the host match `want`: idempotent; removes what the Made record lists that
        `want` no longer has (this is also recovery after a crash). Raise to report failure:
        the next pass retries."""

    async def close(self) -> None:
        """The service is stopping: stop this part's own processes and listeners. What it
        made in the kernel (namespaces, rules) stays: guests keep their network while the
        service restarts."""


@dataclass(frozen=True)
class PassOutcome:
    generation: int
    failures: dict[str, str] = field(default_factory=dict)   # part name (or "desired") → reason

    @property
    def clean(self) -> bool:
        return not self.failures

    def describe(self) -> str:
        return "; ".join(f"{name}: {why}" for name, why in self.failures.items())


def _reason(exc: BaseException) -> str:
    if isinstance(exc, errors.NovaAsyncError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


class Reconciler:
    def __init__(self, pool: Pool, parts: Sequence[Part], *, interval: float = INTERVAL,
                 read: Callable[[Pool], Awaitable[Desired]] = desired.read) -> None:
        self.pool = pool
        self.parts = list(parts)
        self.interval = interval
        self._read = read
        self._wanted = asyncio.Event()      # a pass is asked for
        self._stopping = asyncio.Event()
        self.started = 0                    # generation of the last pass that started
        self.last = PassOutcome(0)          # the last pass that finished
        self._read_now: Desired | None = None    # what the pass under way read (None: not yet)
        self._read_last: Desired | None = None   # what the last finished pass read
        self._finished = asyncio.Condition()
        self.listening = asyncio.Event()    # set while notifications are heard

    def poke(self) -> None:
        """Ask for a pass (coalesced with any other request until it starts)."""
        self._wanted.set()

    async def settled(self, *, ask: bool = True) -> PassOutcome:
        """Wait until a pass that started after this call has finished; its outcome. `ask`:
        start one now (else wait for the next one the reconciler makes on its own)."""
        target = self.started + 1
        if ask:
            self.poke()
        async with self._finished:
            await self._finished.wait_for(lambda: self.last.generation >= target or self._stopping.is_set())
        if self.last.generation < target:
            raise errors.Unavailable("the data plane is stopping")
        return self.last

    async def serving(self, seen: Callable[[Desired], bool]) -> PassOutcome:
        """Wait until a pass whose read `seen` accepts has finished; its outcome. That is the
        last pass when its read did, else the pass under way when its read did (a pass the
        change itself set off, say), else the one settled() asks for."""
        if self._read_last is not None and seen(self._read_last):
            return self.last
        if self._read_now is not None and seen(self._read_now):
            target = self.started
            async with self._finished:
                await self._finished.wait_for(lambda: self.last.generation >= target or self._stopping.is_set())
            if self.last.generation >= target:
                return self.last
        return await self.settled()

    async def run(self, stopping: asyncio.Event) -> None:
        """Listen and pass until `stopping` is set; then close every part (in reverse)."""
        try:
            async with asyncio.TaskGroup() as tg:
                listening = tg.create_task(self._listen(), name="dataplane:listen")
                passes = tg.create_task(self._passes(), name="dataplane:passes")
                await stopping.wait()
                self._stopping.set()
                self._wanted.set()
                listening.cancel()
                await passes
        finally:
            async with self._finished:
                self._finished.notify_all()
            for part in reversed(self.parts):
                try:
                    await part.close()
                except Exception:
                    log.exception("a data-plane part failed to close", part=part.name)

    async def _passes(self) -> None:
        backoff = FIRST_BACKOFF
        self._wanted.set()   # the pass at start
        while True:
            wait = self.interval if self.last.clean else backoff
            try:
                async with asyncio.timeout(wait):
                    await self._wanted.wait()
            except TimeoutError:
                pass
            if self._stopping.is_set():
                return
            self._wanted.clear()
            outcome = await self.run_pass()
            backoff = FIRST_BACKOFF if outcome.clean else min(backoff * 2, self.interval)

    async def run_pass(self) -> PassOutcome:
        """One pass: read, then every part in order."""
        self.started += 1
        generation = self.started
        failures: dict[str, str] = {}
        self._read_now = want = None
        try:
            want = self._read_now = await self._read(self.pool)
        except Exception as exc:
            log.warning("could not read the data plane's desired state; trying again", error=_reason(exc))
            failures["desired"] = _reason(exc)
        else:
            for part in self.parts:
                try:
                    await part.apply(want)
                except Exception as exc:
                    log.exception("a data-plane part failed; the next pass tries again", part=part.name)
                    failures[part.name] = _reason(exc)
        async with self._finished:
            self.last = PassOutcome(generation, failures)
            self._read_last, self._read_now = want, None
            self._finished.notify_all()
        return self.last

    async def _listen(self) -> None:
        health = self.pool.health
        while True:
            back = health.next_return()
            try:
                await self._follow()
            except (errors.Unavailable, OSError) as exc:
                log.warning("data-plane changes are not heard until the database is back; passes "
                            "continue on the timer", error=_reason(exc))
            self.listening.clear()
            health.suspect()
            # The database's return is heard where the service watches it; elsewhere (a
            # test's roles), try again after a pause.
            try:
                async with asyncio.timeout(RELISTEN_PAUSE):
                    await back.wait()
            except TimeoutError:
                pass

    async def _follow(self) -> None:
        """LISTEN until the connection ends; a pass once listening (changes made while
        nobody listened are otherwise lost)."""
        ended = asyncio.Event()

        def on_notify(*_: object) -> None:
            self._wanted.set()

        def on_end(_conn: object) -> None:
            ended.set()

        async with self.pool.acquire() as conn:
            conn.add_termination_listener(on_end)
            await conn.add_listener(CHANNEL, on_notify)
            try:
                self.listening.set()
                self._wanted.set()
                await ended.wait()
                raise errors.DatabaseUnavailable("the connection listening for data-plane changes ended")
            finally:
                conn.remove_termination_listener(on_end)
                if not conn.is_closed():
                    await conn.remove_listener(CHANNEL, on_notify)
