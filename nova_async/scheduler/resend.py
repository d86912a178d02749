"""A claim whose answer was lost is sent again, unchanged, before anything else is decided.

A claim asked of placement over the bus can end without an answer: the call times out
(placement slow, or its answer lost with a broker connection), or placement's own database
connection broke around the commit. The claim may have been made, or not, and guessing
either way is wrong: taken as made, an instance would hold nothing; taken as not made and
released, a claim landing late would hold room for nobody, and undone claims would fail a
whole batch of requests for one lost answer.

The same claim sent again settles it. A consumer's claim replaces whatever that consumer
holds (its old allocations are taken away before the new ones are checked), so a claim made
already is made again, not doubled, and one never made is made now or refused for want of
room like any claim; and should the first copy still land later, it writes the very same
allocations. What the second answer says is what is true."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from nova_async.common import errors
from nova_async.placement import messages as pm
from nova_async.placement.client import CALL_TIMEOUT

log = structlog.get_logger("scheduler")

# The first send waits as long as any call; the copies sent again wait less, so that the
# conductor's call to the scheduler (120 s) still gets an answer.
TIMEOUTS = (CALL_TIMEOUT, 20.0, 20.0)


async def claim(send: Callable[[float], Awaitable[pm.ClaimResult]], **about: object) -> pm.ClaimResult:
    """`send(timeout)`'s answer, sent again while the answer is lost (errors.Unavailable,
    which a call's timeout is); the last loss is raised. `about` names the claim in the log."""
    for attempt, timeout in enumerate(TIMEOUTS, 1):
        try:
            return await send(timeout)
        except errors.Unavailable as exc:
            if attempt == len(TIMEOUTS):
                raise
            log.warning("a claim's answer was lost; sending the same claim again", error=exc.message,
                        attempt=attempt, **about)
    raise AssertionError("unreachable")
