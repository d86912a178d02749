"""What this process does with the notifications it hears, beside the bus: async callbacks
registered in-process (`Feed.subscribe`: hooks and anything else that wants to observe), and
the JSON-lines file (`[notifications] file`, `serve --notifications-file`).

The feed listens on the bus (`Bus.listen`), so it hears what the process sends and, over
RabbitMQ, what every other process sends too; it starts listening with its first subscriber
(or at once with a file), so that a process nobody listens in builds no notification at all. One task (`Feed.run`, owned by the supervisor)
hands each notification, in order, to the file and then to each subscriber: a subscriber is
given a bounded time and its failure is logged, never propagated, so a slow or broken one
delays the feed but never the work that sent the notification."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO

import structlog

from nova_async.bus import Bus, Notification
from nova_async.bus.base import next_unless
from nova_async.common.flags import Flag, first_set

log = structlog.get_logger("notifications")

Callback = Callable[[Notification], Awaitable[None]]
CALLBACK_TIMEOUT = 10.0   # seconds one subscriber may take over one notification


class Feed:
    """`feed.subscribe(callback, "instance.create.")` → a function that unsubscribes;
    `await feed.run(stopping)` delivers until `stopping` is set, then what is already heard."""

    def __init__(self, bus: Bus, *, file: str | Path = "", callback_timeout: float = CALLBACK_TIMEOUT) -> None:
        self.bus = bus
        self.file = Path(file) if file else None
        self.callback_timeout = callback_timeout
        self._subscribers: list[tuple[Callback, tuple[str, ...]]] = []
        self._wanted = Flag()   # a file or a subscriber: something to hand notifications to
        if self.file is not None:
            self._wanted.set()

    def subscribe(self, callback: Callback, *event_types: str) -> Callable[[], None]:
        """Call `callback(notification)` for each notification whose event_type starts with one
        of `event_types` (every one when none are given)."""
        entry = (callback, tuple(event_types))
        self._subscribers.append(entry)
        self._wanted.set()
        return lambda: self._subscribers.remove(entry) if entry in self._subscribers else None

    async def run(self, stopping: asyncio.Event) -> None:
        # Not listening while there is nobody to hand notifications to: on the in-memory bus
        # nothing is then even built (Bus.heard).
        await first_set([self._wanted, stopping])
        if stopping.is_set():
            return
        sink: IO[str] | None = None
        if self.file is not None:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            sink = self.file.open("a", encoding="utf-8")
            log.info("notifications go to a file", path=str(self.file))
        try:
            with self.bus.listen() as heard:
                stopped = asyncio.create_task(stopping.wait(), name="notifications:feed-stop")
                try:
                    while (note := await next_unless(heard, stopped)) is not None:
                        await self._deliver(note, sink)
                    while not heard.empty():   # heard before the stop: not lost
                        await self._deliver(heard.get_nowait(), sink)
                finally:
                    stopped.cancel()
                    await asyncio.gather(stopped, return_exceptions=True)
        finally:
            if sink is not None:
                sink.close()

    async def _deliver(self, note: Notification, sink: IO[str] | None) -> None:
        if sink is not None:
            try:
                # One envelope a line, flushed: a reader tailing the file sees each at once.
                sink.write(json.dumps(note.envelope(), separators=(",", ":")) + "\n")
                sink.flush()
            except OSError as exc:
                log.error("notification not written to the file", path=str(self.file), error=str(exc))
        for callback, prefixes in list(self._subscribers):
            if prefixes and not note.event_type.startswith(prefixes):
                continue
            try:
                async with asyncio.timeout(self.callback_timeout):
                    await callback(note)
            except TimeoutError:
                log.warning("notification subscriber too slow; skipped", event_type=note.event_type,
                            subscriber=getattr(callback, "__qualname__", repr(callback)),
                            timeout=self.callback_timeout)
            except Exception:
                log.exception("notification subscriber failed", event_type=note.event_type,
                              subscriber=getattr(callback, "__qualname__", repr(callback)))
