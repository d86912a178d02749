"""Version caps: which version of each message another service can receive, so that a newer
sender converts down for an older receiver (Nova's compute_rpcapi version pinning, read from
service records instead of set by hand).

Every compute service writes into its service record (migration 0070) the release it runs
and the version of each message it handles (`receivable`). A sender asks `VersionCaps.cap`
for the version to send at; the typed client hands that to the bus, which converts the
message down (bus/messages.py `make_compatible`) or refuses when it cannot.

- **Unknown cap**: a receiver without a record, a record without caps (written before 0070)
  or a message its caps do not name is taken to speak the oldest version this release still
  produces of that message (`Message.oldest()`, its major's x.0): what is sent then is what
  every receiver of that major reads.
- **Freshness**: the caps of every compute are read in one query and kept `FRESH` seconds, so
  a send costs a dict lookup; a service that restarts at another release is followed within
  that time. A receiver that answers a call with `version_mismatch` has its caps dropped at
  once (`forget`), and the typed client sends once more at the cap read afresh.
- Only compute services' records carry caps (the conductor's and scheduler's records say
  only which release runs), so only messages to compute hosts are capped: control roles
  (api, conductor, scheduler, placement…) are upgraded first, together, as in Nova, and a
  newer receiver reads every older minor.

One process speaks one release: on the in-memory bus every receiver is this process, and
`NO_CAPS` (every message at its own version) is all it needs."""

from __future__ import annotations

import time
from typing import Any

import structlog

from nova_async import __version__
from nova_async.bus.messages import Message
from nova_async.db.queries import queries

log = structlog.get_logger("bus")
Q = queries("versions")

RELEASE = __version__   # what a service record says this process runs
FRESH = 10.0            # seconds the caps read from the records are used before reading again
RETRY = 1.0             # seconds before reading again after a read that failed


def receivable(handled: Any) -> dict[str, str]:
    """The message caps a service publishes: the version of each bus message type among the
    types it handles (`handled`: its handler table's keys; some are internal events)."""
    return {cls.__name__: cls.VERSION for cls in handled if issubclass(cls, Message)}


class VersionCaps:
    """The compute services' caps, read from their records (`pool`: the API database)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self._caps: dict[str, dict[str, str]] = {}   # host -> message name -> version
        self._read_at = float("-inf")

    async def cap(self, host: str, message: type[Message]) -> str:
        """The version to send `message` at to compute host `host`."""
        if time.monotonic() - self._read_at > FRESH:
            await self._read()
        return self._caps.get(host, {}).get(message.__name__) or message.oldest()

    def forget(self) -> None:
        """Read the records again before the next send (a receiver refused a version)."""
        self._read_at = float("-inf")

    async def _read(self) -> None:
        try:
            rows = await self.pool.fetch(Q.compute_caps)
        except Exception as exc:
            # A send does not wait on the database: the caps last read stand (none read yet:
            # every receiver taken as the oldest), and the next send a second on reads again.
            log.warning("cannot read the services' version caps; using those last read", error=str(exc))
            self._read_at = time.monotonic() - FRESH + RETRY
            return
        self._caps = {r["host"]: dict(r["message_caps"] or {}) for r in rows}
        self._read_at = time.monotonic()


class _NoCaps(VersionCaps):
    """Every receiver speaks this release: messages go at their own version."""

    def __init__(self) -> None:
        super().__init__(None)

    async def cap(self, host: str, message: type[Message]) -> str:
        return message.VERSION

    def forget(self) -> None:
        pass


NO_CAPS: VersionCaps = _NoCaps()
