"""The typed client other roles use to reach placement over the bus."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from nova_async.bus import Bus
from nova_async.common import errors
from nova_async.placement import messages as m

TOPIC = "placement"
# A claim sent again after a lost answer waits less each time (the first, the bus's wait: None),
# so that whoever waits for the claimer (the conductor's call to the scheduler, twice the bus's
# wait, which is at least 40 s) still gets an answer.
RESEND_TIMEOUTS = (None, 20.0, 20.0)

log = structlog.get_logger("placement.client")


async def settled_claim(send: Callable[[float | None], Awaitable[m.ClaimResult]],
                        **about: object) -> m.ClaimResult:
    """`send(timeout)`'s answer (a Claim or a ClaimMany), sent again, unchanged, while the
    answer is lost; the last loss is raised. `about` names the claim in the log.

    A lost answer (errors.Unavailable: the call timed out, placement slow or its answer gone
    with a broker connection, or placement's database connection broke around the commit)
    leaves the claim made or not, and guessing either way is wrong: taken as made, an
    instance would hold nothing; taken as not made and released, a claim landing late would
    hold room for nobody. The same claim sent again settles it: a consumer's claim replaces
    whatever that consumer holds (its old allocations go before the new ones are checked), so
    one made already is made again, not doubled, and one never made is made now or refused
    like any claim; should the first copy still land later, it writes the very same
    allocations. The second answer is the truth."""
    for attempt, timeout in enumerate(RESEND_TIMEOUTS, 1):
        try:
            return await send(timeout)
        except errors.Unavailable as exc:
            if attempt == len(RESEND_TIMEOUTS):
                raise
            log.warning("a claim's answer was lost; sending the same claim again", error=exc.message,
                        attempt=attempt, **about)
    raise AssertionError("unreachable")


class PlacementClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def ensure_provider(self, uuid: str, name: str, inventories: dict[str, m.InventoryRecord]) -> None:
        await self.bus.call(TOPIC, m.EnsureProvider(uuid=uuid, name=name, inventories=inventories))

    async def delete_provider(self, uuid: str) -> None:
        """Remove the provider; NotFound when there is none, Conflict while it holds allocations."""
        await self.bus.call(TOPIC, m.DeleteProvider(uuid=uuid))

    async def candidates(self, resources: dict[str, int], limit: int | None = None) -> list[m.ProviderSummary]:
        return (await self.find_candidates(resources, limit)).providers

    async def find_candidates(self, resources: dict[str, int], limit: int | None = None) -> m.Candidates:
        """The whole answer, with placement's per-class explanation when nothing fits."""
        reply = await self.bus.call(TOPIC, m.GetCandidates(resources=resources, limit=limit))
        assert isinstance(reply, m.Candidates)
        return reply

    async def claim(self, consumer_uuid: str, provider_uuid: str, resources: dict[str, int],
                    project_id: str, user_id: str, *, timeout: float | None = None,
                    holder: m.Holder | None = None) -> m.ClaimResult:
        """With `holder`, made only while it holds the instance (see m.Holder)."""
        reply = await self.bus.call(TOPIC, m.Claim(consumer_uuid=consumer_uuid, provider_uuid=provider_uuid,
                                                   resources=resources, project_id=project_id,
                                                   user_id=user_id, holder=holder), timeout=timeout)
        assert isinstance(reply, m.ClaimResult)
        return reply

    async def claim_many(self, claims: list[m.ConsumerClaim], *, timeout: float | None = None) -> m.ClaimResult:
        """Replace several consumers' allocations in one transaction, or none of them."""
        reply = await self.bus.call(TOPIC, m.ClaimMany(claims=claims), timeout=timeout)
        assert isinstance(reply, m.ClaimResult)
        return reply

    async def move_allocations(self, source: str, target: str, project_id: str, user_id: str, *,
                               source_type: str | None = None, target_type: str | None = None) -> bool:
        """Give `source`'s allocations to `target` (replacing target's), atomically; False when
        `source` holds none (moved already). A resize moves an instance's to its migration and,
        on a revert, back. Raises Conflict when placement refuses."""
        held = await self.allocations(source)
        if not held:
            return False
        # source's go first, so target's new ones are checked without them counted twice
        moved = await self.claim_many([
            m.ConsumerClaim(consumer_uuid=source, allocations={}, project_id=project_id, user_id=user_id,
                            consumer_type=source_type),
            m.ConsumerClaim(consumer_uuid=target, allocations=held, project_id=project_id, user_id=user_id,
                            consumer_type=target_type)])
        if not moved.ok:
            raise errors.Conflict(f"placement refused to move the allocations of {source} to {target}: "
                                  f"{moved.reason}")
        return True

    async def delete_allocations(self, consumer_uuid: str, *, holder: m.Holder | None = None) -> None:
        """With `holder`, only while it holds the instance (else nothing is deleted)."""
        await self.bus.call(TOPIC, m.DeleteAllocations(consumer_uuid=consumer_uuid, holder=holder))

    async def holding(self, consumer_uuids: list[str]) -> list[str]:
        """Those of `consumer_uuids` that hold allocations."""
        reply = await self.bus.call(TOPIC, m.GetHolding(consumer_uuids=consumer_uuids))
        assert isinstance(reply, m.Holding)
        return reply.consumer_uuids

    async def allocations(self, consumer_uuid: str) -> dict[str, dict[str, int]]:
        reply = await self.bus.call(TOPIC, m.GetAllocations(consumer_uuid=consumer_uuid))
        assert isinstance(reply, m.Allocations)
        return reply.allocations
