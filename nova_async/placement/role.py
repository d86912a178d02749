"""The placement role: the HTTP API under /placement and the "placement" bus topic.

Other roles reach placement only through placement.messages (via placement.client); each
message maps to one domain call here. A claim that does not fit is an answer
(ClaimResult ok=False with the reason), not an error: the scheduler moves on to the next host."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg
import structlog
from aiohttp import web

from nova_async.bus import Message
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.placement import allocations, candidates, catalog, providers, routes
from nova_async.placement import messages as m
from nova_async.placement.client import TOPIC
from nova_async.role import Deps, Role

log = structlog.get_logger("placement")


def _inventory(record: m.InventoryRecord) -> providers.Inventory:
    return providers.Inventory(total=record.total, reserved=record.reserved, min_unit=record.min_unit,
                               max_unit=record.max_unit or record.total, step_size=record.step_size,
                               allocation_ratio=record.allocation_ratio)


class PlacementRole(Role):
    name = "placement"
    topic = TOPIC

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.handlers = {
            m.EnsureProvider: self._ensure_provider,
            m.GetCandidates: self._get_candidates,
            m.Claim: self._claim,
            m.DeleteAllocations: self._delete_allocations,
            m.GetAllocations: self._get_allocations,
            m.GetHolding: self._get_holding,
            m.ClaimMany: self._claim_many,
            m.DeleteProvider: self._delete_provider,
        }

    def http(self) -> tuple[str, web.Application]:
        return routes.build_app(self.pool)

    async def run(self) -> None:
        # Before the role is ready: a request may name any standard trait.
        await catalog.sync_standard_traits(self.pool)
        await super().run()

    async def dispatch(self, msg: Message, context: RequestContext | None) -> Message | None:
        try:
            return await super().dispatch(msg, context)
        except asyncpg.DataError as exc:  # a malformed uuid, an amount out of range
            raise errors.InvalidInput(f"placement: {exc}") from None

    async def _ensure_provider(self, msg: m.EnsureProvider, ctx: RequestContext) -> None:
        await providers.ensure_provider(self.pool, msg.uuid, msg.name,
                                        {rc: _inventory(r) for rc, r in msg.inventories.items()})

    async def _get_candidates(self, msg: m.GetCandidates, ctx: RequestContext) -> m.Candidates:
        # The scheduler's bounded question: a random sample when it limits the answer.
        found = await candidates.find(self.pool, msg.resources, msg.limit, randomize=msg.limit is not None)
        summaries = [m.ProviderSummary(uuid=c.uuid, name=c.name, generation=c.generation,
                                       capacity=c.capacity, used=c.used, traits=list(c.traits))
                     for c in found]
        room = {} if found else await candidates.providers_with_room(self.pool, msg.resources)
        return m.Candidates(providers=summaries, providers_with_room=room)

    async def _claim(self, msg: m.Claim, ctx: RequestContext) -> m.ClaimResult:
        write = allocations.ConsumerWrite(msg.consumer_uuid, {msg.provider_uuid: msg.resources},
                                          msg.project_id, msg.user_id)
        return await self._write([write], _holders([msg.holder]), provider=msg.provider_uuid)

    async def _claim_many(self, msg: m.ClaimMany, ctx: RequestContext) -> m.ClaimResult:
        writes = [allocations.ConsumerWrite(c.consumer_uuid, c.allocations, c.project_id, c.user_id,
                                            c.consumer_type) for c in msg.claims]
        return await self._write(writes, _holders(c.holder for c in msg.claims))

    async def _write(self, writes: list[allocations.ConsumerWrite], holders: list[allocations.Holder],
                     **about: object) -> m.ClaimResult:
        try:
            await allocations.replace_many(self.pool, writes, holders=holders)
        except (allocations.ClaimRefused, allocations.UnknownProvider, allocations.HolderGone) as exc:
            log.info("claim refused", consumers=[w.consumer_uuid for w in writes], reason=exc.message, **about)
            return m.ClaimResult(ok=False, reason=exc.message,
                                 holder_gone=isinstance(exc, allocations.HolderGone))
        return m.ClaimResult(ok=True)

    async def _delete_allocations(self, msg: m.DeleteAllocations, ctx: RequestContext) -> None:
        holder = (msg.holder.pid, msg.holder.key) if msg.holder else None
        try:
            await allocations.delete_allocations(self.pool, msg.consumer_uuid, holder=holder)
        except allocations.HolderGone as exc:
            log.info("release refused", consumer=msg.consumer_uuid, reason=exc.message)

    async def _delete_provider(self, msg: m.DeleteProvider, ctx: RequestContext) -> None:
        await providers.delete_provider(self.pool, msg.uuid)

    async def _get_allocations(self, msg: m.GetAllocations, ctx: RequestContext) -> m.Allocations:
        found = await allocations.get_allocations(self.pool, msg.consumer_uuid)
        return m.Allocations(allocations={rp: res for rp, (_, res) in found.providers.items()})

    async def _get_holding(self, msg: m.GetHolding, ctx: RequestContext) -> m.Holding:
        return m.Holding(consumer_uuids=await allocations.holding(self.pool, msg.consumer_uuids))


def _holders(holders: Iterable[m.Holder | None]) -> list[allocations.Holder]:
    return [(h.pid, h.key) for h in holders if h is not None]
