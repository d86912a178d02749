"""The public event stream's engine (GET /compute/v2.1/events, handlers/events.py): every
committed change of a server, its actions and faults, to every client that may see it, in
order, with a cursor to come back with.

Where the events come from: each cell's `server_events` (0069), written by triggers in the
writer's own transaction, so nothing that commits is missed and nothing that rolls back is
sent. What one statement wrote is a batch (0076); batches are numbered after they commit, by
a sequencer (sql/functions/server_events_number.sql) that runs one at a time per cell under
an advisory lock, so that positions (a row's is its batch's first plus its place in it) are
contiguous and follow commit order: a reader of positions past its cursor never skips a row
that committed late, and a reader can tell a gap from a quiet spell.

One `CellFeed` per API process and cell owns a connection that LISTENs: a trigger's NOTIFY
(new rows) makes it sequence (whichever process gets the lock does it; the others then find
nothing left) and a sequencer's NOTIFY (new positions, from any process) makes it read the new
rows, render them once (event_views) and hand them to every open stream of this process. A
pass also runs when listening starts again after the connection was lost (notifications
sent meanwhile are gone) and every SAFETY_INTERVAL seconds (a process that died between its
commit and its pass; pruning to the backlog).

A `Stream` is one client: events it may see go out as they come; a gap in the positions it
gets (it joined late, or its buffer overflowed because it reads slowly) is filled from the
database, the same read a reconnecting client's cursor gets. Only events no longer kept (or a
cursor of another database) end in a `reset`: the client reloads, the stream goes on live."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import structlog

from nova_async.api import event_views as views
from nova_async.api.event_views import Audience, Event
from nova_async.bus import Notification
from nova_async.common import errors
from nova_async.config import ApiSettings
from nova_async.db.cells import Cell, Cells
from nova_async.notifications.feed import Feed

log = structlog.get_logger("api.events")
Q = views.Q

SEQUENCER_LOCK = 0x6E6F7663     # beside migrate's 0x6E6F7661 and the adoption's 0x6E6F7662
NEW_ROWS = "nova_async_server_events"           # a trigger wrote rows (sql/functions/server_events_*)
NEW_POSITIONS = "nova_async_server_events_seq"  # a sequencer numbered rows
SAFETY_INTERVAL = 5.0   # seconds between passes nobody asked for
RELISTEN_PAUSE = 5.0    # seconds before listening again when the database's return is not heard
OPEN_TIMEOUT = 10.0     # seconds a new stream waits for the feeds to be listening (else 503)
PAGE = 1000
_END = 2 ** 62          # a position past every other


class CellFeed:
    """This process's follower of one cell's events."""

    def __init__(self, cell: Cell, hub: EventHub) -> None:
        self.cell = cell
        self._hub = hub
        self.head: int | None = None    # the last position handed to the streams
        self.listening = asyncio.Event()
        self._wake = asyncio.Event()
        self._ended = False

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        health = self.cell.pool.health
        while not self._hub.closing:
            back = health.next_return()
            try:
                await self._follow()
            except (errors.Unavailable, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("server events are not followed until the database is back", cell=self.cell.name,
                            error=str(exc))
                health.suspect()
            self.listening.clear()
            if self._hub.closing:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RELISTEN_PAUSE):
                    await back.wait()

    async def _follow(self) -> None:
        self._ended = False

        def on_notify(conn: Any, pid: int, _channel: str, _payload: str) -> None:
            if pid != conn.get_server_pid():   # our own sequencer's: its pass reads them already
                self._wake.set()

        def on_end(_conn: object) -> None:
            self._ended = True
            self._wake.set()

        async with self.cell.pool.acquire() as conn:
            conn.add_termination_listener(on_end)
            await conn.add_listener(NEW_ROWS, on_notify)
            await conn.add_listener(NEW_POSITIONS, on_notify)
            try:
                if self.head is None:   # a stream that joins now starts here
                    self.head = await conn.fetchval(Q.head)
                self.listening.set()
                last_safety = 0.0
                while not self._hub.closing:
                    safety = time.monotonic() - last_safety >= SAFETY_INTERVAL
                    if safety:
                        last_safety = time.monotonic()
                    await self._pass(conn, prune=safety)
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(SAFETY_INTERVAL):
                            await self._wake.wait()
                    self._wake.clear()
                    if self._ended:
                        raise errors.DatabaseUnavailable("the connection following server events ended")
            finally:
                conn.remove_termination_listener(on_end)
                if not conn.is_closed():
                    await conn.remove_listener(NEW_ROWS, on_notify)
                    await conn.remove_listener(NEW_POSITIONS, on_notify)

    async def _pass(self, conn: asyncpg.Connection, *, prune: bool) -> None:
        """Number what committed (waiting for another process's pass to commit first, so that
        what it could not see yet is seen here), then hand every new position out: those just
        numbered as the numbering returned them, any another process numbered read back.
        With no stream to hand them to (most of the time), only the positions are asked for:
        the head moves past every one given."""
        if not self._hub.streaming:
            given = await conn.fetchrow(Q.number, SEQUENCER_LOCK)
            if prune:
                await conn.execute(Q.prune, self._hub.settings.event_backlog)
            self.head = given["last"]
            return
        numbered = await conn.fetch(Q.sequence, SEQUENCER_LOCK)
        if prune:
            await conn.execute(Q.prune, self._hub.settings.event_backlog)
        upto = numbered[0]["seq"] - 1 if numbered else _END
        while self.head < upto:
            rows = await conn.fetch(Q.read, self.head, upto, None, None, PAGE)
            self._publish(rows)
            if len(rows) < PAGE:
                break
        if numbered and numbered[0]["seq"] == self.head + 1:
            self._publish(numbered)

    def _publish(self, rows: list[Any]) -> None:
        if rows:
            self.head = rows[-1]["seq"]
            if self._hub.streaming:    # rendered only for someone: a stream may have gone since
                self._hub.publish(views.render(self.cell.uuid, rows))


class EventHub:
    """The feeds of every cell and the open streams of this API process; owned by the api role."""

    def __init__(self, cells: Cells, settings: ApiSettings, feed: Feed | None = None) -> None:
        self.cells = cells
        self.settings = settings
        self.feed = feed                 # this process's versioned notifications
        self._hearing = False            # subscribed to them: since the first stream asked
        self.closing = False
        self._feeds: dict[str, CellFeed] = {}
        self._streams: set[Stream] = set()
        self.started = asyncio.Event()   # every cell known at start has its feed

    async def run(self, stopping: asyncio.Event) -> None:
        """Follow every cell (one opened later is followed from the next check) until `stopping`."""
        async with asyncio.TaskGroup() as tg:
            while not self.closing:
                for cell in self.cells.all():
                    if cell.uuid not in self._feeds:
                        feed = self._feeds[cell.uuid] = CellFeed(cell, self)
                        tg.create_task(feed.run(), name=f"api:events:{cell.name}")
                self.started.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(60):
                        await stopping.wait()
                if stopping.is_set():
                    self.close()

    def close(self) -> None:
        """End every stream (their clients reconnect elsewhere or later) and the feeds."""
        self.closing = True
        for feed in self._feeds.values():
            feed.wake()
        for stream in list(self._streams):
            stream.close()

    @property
    def streaming(self) -> bool:
        return bool(self._streams)

    def publish(self, events: list[Event]) -> None:
        for stream in list(self._streams):
            stream.offer(events)

    async def hear(self, note: Notification) -> None:
        """A versioned notification: to every stream that asked for them and may see it."""
        for stream in list(self._streams):
            if stream.audience.hears(note):
                stream.offer_notification(note)

    def forget(self, stream: Stream) -> None:
        self._streams.discard(stream)

    async def open(self, audience: Audience, since: str | None) -> Stream:
        """A stream for `audience` from `since` (a cursor, `oldest`, or None: from now);
        InvalidInput for a cursor that is not one, Unavailable while the database is away."""
        wanted = views.parse_cursor(since) if since not in (None, views.OLDEST) else {}
        if self.closing:
            raise errors.Unavailable("The service is stopping.")
        if audience.notifications and not self._hearing:
            if self.feed is None:
                raise errors.InvalidInput("This process does not hear versioned notifications.")
            # Only once someone asks: until then the process need not build them at all.
            self.feed.subscribe(self.hear)
            self._hearing = True
        try:
            async with asyncio.timeout(OPEN_TIMEOUT):
                for feed in list(self._feeds.values()):
                    await feed.listening.wait()
        except TimeoutError:
            raise errors.Unavailable("Server events cannot be followed now: the database is unreachable.") from None
        stream = Stream(self, audience)
        self._streams.add(stream)   # first: whatever comes from now on reaches it
        try:
            feeds = {u: f for u, f in self._feeds.items() if f.head is not None}
            if since is None:
                stream.positions = {u: f.head for u, f in feeds.items()}
            elif since == views.OLDEST:
                for u, f in feeds.items():
                    oldest = await f.cell.pool.fetchval(Q.oldest)
                    stream.positions[u] = oldest - 1 if oldest is not None else f.head
                stream.catch_up_first = True
            else:
                keys = {views.cell_key(u): u for u in feeds}
                if set(wanted) - set(keys):
                    stream.reset_first = "the cursor is not from this database"
                    stream.positions = {u: f.head for u, f in feeds.items()}
                else:
                    stream.positions = {u: wanted.get(k, 0) for k, u in keys.items()}
                    stream.catch_up_first = True
        except BaseException:
            self.forget(stream)
            raise
        return stream


class Stream:
    """One client's stream: `frames()` yields what to write, SSE-formatted."""

    def __init__(self, hub: EventHub, audience: Audience) -> None:
        self._hub = hub
        self.audience = audience
        self.positions: dict[str, int] = {}     # cell uuid → the last position handled
        self.reset_first: str | None = None
        self.catch_up_first = False
        self._queue: collections.deque[Event] = collections.deque()
        self._notes: collections.deque[str] = collections.deque()   # notification frames
        self._overflowed = False
        self._closed = False
        self._wake = asyncio.Event()
        self._told: str | None = None   # the last id written

    def _frame(self, event: Event) -> str:
        self._told = self.cursor()
        return views.frame(self._told, event.kind, event.json(self.audience.is_admin))

    def _reset(self, reason: str) -> str:
        self._told = self.cursor()
        return views.reset_frame(self._told, reason)

    def offer(self, events: list[Event]) -> None:
        if self._closed or self._overflowed:
            return
        if len(self._queue) + len(events) > self._hub.settings.event_buffer:
            # Reading slowly: drop what waits, and read it (and what comes meanwhile) back from
            # the database once the client is ready for more.
            self._queue.clear()
            self._overflowed = True
        else:
            self._queue.extend(events)
        self._wake.set()

    def offer_notification(self, note: Notification) -> None:
        """Live only: a client too slow for them loses the oldest (the log says so); server
        events are unaffected."""
        if self._closed:
            return
        if len(self._notes) >= self._hub.settings.event_buffer:
            self._notes.popleft()
            log.warning("notification dropped for a slow event stream", event_type=note.event_type)
        self._notes.append(views.notification_frame(note))
        self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._hub.forget(self)

    def cursor(self) -> str:
        return views.format_cursor(self.positions)

    async def frames(self) -> AsyncIterator[str]:
        """What to write, as it comes: one or more whole messages, or a keepalive."""
        try:
            if self.reset_first:
                yield self._reset(self.reset_first)
            if self.catch_up_first:
                async for f in self._catch_up_all():
                    yield f
            sent = time.monotonic()
            while not self._closed:
                try:
                    # From the last write, not the last wake: a stream that sees none of a
                    # busy cloud's events still writes (and so notices its client left).
                    async with asyncio.timeout(max(0.0, sent + self._hub.settings.event_keepalive - time.monotonic())):
                        await self._wake.wait()
                except TimeoutError:
                    # With the cursor when it moved past events this client may not see: a
                    # reconnect then starts there, not where its last visible event was.
                    now = self.cursor()
                    yield views.keepalive(now if now != self._told else None)
                    sent, self._told = time.monotonic(), now
                    continue
                self._wake.clear()
                if self._closed:
                    return
                events, self._queue = self._queue, collections.deque()
                notes, self._notes = self._notes, collections.deque()
                overflowed, self._overflowed = self._overflowed, False
                # One write per batch, not per event: a burst costs a few sends. Notifications
                # first: they were heard before the wake that brought these events.
                batch: list[str] = list(notes)
                for event in events:
                    async for f in self._live(event):
                        batch.append(f)
                    if len(batch) >= PAGE:
                        yield "".join(batch)
                        batch = []
                if batch:
                    yield "".join(batch)
                if overflowed:
                    async for f in self._catch_up_all():
                        yield f
                if batch or overflowed:
                    sent = time.monotonic()
        finally:
            self.close()

    async def _live(self, event: Event) -> AsyncIterator[str]:
        at = self.positions.setdefault(event.cell, 0)
        if event.seq > at + 1:   # missed some (joined late, or overflowed): from the database
            async for f in self._catch_up(event.cell, event.seq - 1):
                yield f
        if event.seq <= self.positions[event.cell]:
            return
        self.positions[event.cell] = event.seq
        if self.audience.sees(event):
            yield self._frame(event)

    async def _catch_up(self, cell_uuid: str, upto: int | None) -> AsyncIterator[str]:
        """What this client may see of the cell's positions after its own, up to `upto` (None:
        all committed), read from the database; a reset when they are no longer kept."""
        async for f in self._replay({cell_uuid: upto}):
            yield f

    async def _catch_up_all(self) -> AsyncIterator[str]:
        async for f in self._replay(dict.fromkeys(sorted(self.positions))):
            yield f

    async def _replay(self, wanted: dict[str, int | None]) -> AsyncIterator[str]:
        """_catch_up for several cells at once, merged in the order the changes were written:
        a server that moved between cells (to cell0 when no host had room) replays as it
        happened, not cell by cell. Each cell's own order is kept whatever the merge does."""
        sources = []
        for cell_uuid, upto in wanted.items():
            pool = (await self._hub.cells.get(cell_uuid)).pool
            at = self.positions.get(cell_uuid, 0)
            head = await pool.fetchval(Q.head)
            upto = head if upto is None else min(upto, head)
            if at > head:
                self.positions[cell_uuid] = head
                yield self._reset("the cursor is not from this database")
                continue
            if upto <= at:
                continue
            oldest = await pool.fetchval(Q.oldest)
            if oldest is None or oldest > at + 1:
                self.positions[cell_uuid] = upto
                yield self._reset("the events after the cursor are no longer kept")
                continue
            source = _Replay(cell_uuid, pool, at, upto)
            await source.fill(self.audience)
            sources.append(source)
        page: list[str] = []
        while live := [s for s in sources if s.events]:
            source = min(live, key=lambda s: s.events[0][0])
            _, event = source.events.popleft()
            self.positions[event.cell] = event.seq
            if self.audience.sees(event):
                page.append(self._frame(event))
            if not source.events:
                await source.fill(self.audience)
            if len(page) >= PAGE:
                yield "".join(page)
                page = []
        for source in sources:   # the last ones read may have been another project's
            self.positions[source.cell] = max(self.positions[source.cell], source.upto)
        if page:
            yield "".join(page)


class _Replay:
    """One cell's part of a replay: its positions (at, upto] read a page at a time."""

    def __init__(self, cell: str, pool: Any, at: int, upto: int) -> None:
        self.cell, self.pool, self.at, self.upto = cell, pool, at, upto
        self.events: collections.deque[tuple[Any, Event]] = collections.deque()

    async def fill(self, audience: Audience) -> None:
        while not self.events and self.at < self.upto:
            rows = await self.pool.fetch(Q.read, self.at, self.upto, audience.project_id, audience.server_id, PAGE)
            self.events.extend(zip((r["created_at"] for r in rows), views.render(self.cell, rows)))
            self.at = rows[-1]["seq"] if len(rows) == PAGE else self.upto
