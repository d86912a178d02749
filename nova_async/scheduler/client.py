"""The typed client the conductor uses to reach the scheduler."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import structlog

from nova_async.bus import Bus
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.placement.messages import Holder
from nova_async.scheduler import messages as m

TOPIC = "scheduler"
# A decision waits behind the batches queued before it: twice the bus's wait for an answer.
DECISION_WAIT = 2
ASKS = 2

log = structlog.get_logger("scheduler.client")


class SchedulerClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def select_destinations(self, instance_uuids: list[str], spec: m.RequestSpec,
                                  context: RequestContext | None = None, *,
                                  cell_uuid: str | None = None,
                                  before_asking_again: Callable[[], Awaitable[object]] | None = None,
                                  holders: dict[str, Holder] | None = None) -> list[m.Selection]:
        """Claimed hosts for every instance, or NoValidHost saying why not (all or nothing);
        `cell_uuid` and `holders` as SelectDestinations has them.

        An answer that never comes (the copy of the scheduler that took the question died
        with it: a call is acknowledged when received, so nobody else gets it) is asked for
        again, of whichever copy takes it now. Asking twice places nothing twice: a claim
        replaces whatever the instance held, so what the lost attempt claimed is replaced. One
        ask that reaches two copies (a publish retried) is decided once (scheduler/answers.py).
        `before_asking_again` is awaited first: the caller forgets what it recorded of the lost
        decision (its step in the server's actions), so that the decision shows once."""
        for ask in range(1, ASKS + 1):
            # A new id each time: asked again, the question is decided again (see above).
            question = m.SelectDestinations(instance_uuids=instance_uuids, spec=spec, cell_uuid=cell_uuid,
                                            question_id=str(uuid.uuid4()), holders=holders or {})
            try:
                reply = await self.bus.call(TOPIC, question, context=context,
                                            timeout=DECISION_WAIT * self.bus.call_timeout)
                break
            except errors.BusTimeout as exc:
                if ask == ASKS:
                    raise
                log.warning("the scheduler's answer was lost; asking again", error=exc.message,
                            instances=len(instance_uuids))
                if before_asking_again is not None:
                    await before_asking_again()
        assert isinstance(reply, m.Selections)
        return reply.selections
