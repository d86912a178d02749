"""select_destinations: from a request spec to claimed hosts, or a NoValidHost that explains.

Per request: one candidates call to placement, one SQL query for host states, the filters,
then for each instance the weighers and claims in placement, host after host, until one
accepts. Claims are what make a choice real (placement refuses what does not fit, however
many schedulers race), so a refused claim only moves us to the next host. The request is
all or nothing: when one instance cannot be placed, the claims already made for the others
are deleted before NoValidHost is raised.

Requests that queue while the scheduler is busy are first decided together (batch.py): one
look at the hosts and one claim for all of them. Whatever a batch cannot settle comes back
here, to the one-request path above."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import Counter
from collections.abc import Mapping

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.config import SchedulerSettings
from nova_async.db.cells import Cells
from nova_async.placement.client import PlacementClient, settled_claim
from nova_async.placement.messages import Holder
from nova_async.scheduler import batch, filters, host_state, server_groups, weighers
from nova_async.scheduler import messages as m
from nova_async.scheduler.host_state import HostState

log = structlog.get_logger("scheduler")

_UNITS = {"MEMORY_MB": "MB", "DISK_GB": "GB"}


def _amount(rc: str, n: int) -> str:
    unit = _UNITS.get(rc)
    return f"{n} {unit} {rc}" if unit else f"{n} {rc}"


class Scheduler:
    def __init__(self, cells: Cells, placement: PlacementClient, settings: SchedulerSettings) -> None:
        self.cells = cells
        self.pool = cells.api
        self.placement = placement
        self.settings = settings
        self.filters = filters.from_settings(settings)
        self.weighers = weighers.from_settings(settings)
        self.batches = batch.Batches(cells=cells, placement=placement, settings=settings,
                                     host_filters=self.filters, choose=self._choose, release=self._release)
        # A group's decision holds an API connection (its lock) while it waits for placement,
        # which needs API connections of its own: at most half the pool decides for groups at
        # once, waiting for a group's lock included, so the rest is always there for placement.
        self._group_slots = asyncio.Semaphore(max(1, self.pool.max_size // 2))

    async def select_destinations(self, instance_uuids: list[str], spec: m.RequestSpec,
                                  holders: Mapping[str, Holder] | None = None) -> list[m.Selection]:
        """`holders`: who holds each instance (SelectDestinations.holders); its claims and their
        release are made only while that holder lives."""
        holders = holders or {}
        if not instance_uuids:
            return []
        if len(set(instance_uuids)) != len(instance_uuids):
            raise errors.InvalidInput("select_destinations: an instance uuid is listed twice")
        if not spec.resources():
            raise errors.InvalidInput("select_destinations: the request spec asks for no resources")
        sample = self.settings.max_placement_results or None
        if spec.group is None:
            if sample is not None and batch.batchable(spec):
                selections = await self.batches.decide(instance_uuids, spec, holders)
                if selections is not None:
                    return selections
            return await self._select(instance_uuids, spec, holders, None, None, sample)
        # A group's placements are counted as they are made: one pass, over every host.
        async with self._group_slots, server_groups.locked(self.pool, spec.group, instance_uuids) as (group, conn):
            return await self._select(instance_uuids, spec, holders, group, conn, None)

    async def _select(self, instance_uuids: list[str], spec: m.RequestSpec, holders: Mapping[str, Holder],
                      group: server_groups.GroupState | None,
                      conn: asyncpg.Connection | None, sample: int | None, *,
                      looked_again: bool = False) -> list[m.Selection]:
        """Place every instance or none. With `sample`, only a random sample of that many hosts
        with room is considered (cheap on big clouds); when the sample cannot take the request
        but there were more hosts, the decision is made again over all of them, so a sample
        never turns into a NoValidHost that a full look would not give. A request that failed
        after placement refused claims is looked at once more, afresh: the refusals say the
        hosts read were out of date."""
        resources = spec.resources()
        started = time.perf_counter()

        found = await self.placement.find_candidates(resources, sample)
        hosts, not_nova = await host_state.load(self.cells, found.providers, self.settings.service_down_time,
                                                api=conn)
        passed, removed_by = filters.run(self.filters, hosts, spec)
        if spec.scheduler_hints or spec.cell or spec.requested_host:
            hinted = [u for hint in ("same_host", "different_host") for u in spec.scheduler_hints.get(hint, [])]
            hosts_of = ({str(r["uuid"]): r["host"] for r in await self.cells.gather(host_state.Q.instance_hosts, hinted)}
                        if hinted else {})
            passed, by_hints = filters.run(filters.for_request(spec, hosts_of), passed, spec)
            removed_by += by_hints
        if group is not None and group.filter_name:
            refused = Counter(group.why(h) for h in passed if not group.allows(h))
            if refused:
                removed_by.append(f"{group.filter_name} removed {sum(refused.values())} ("
                                  + ", ".join(refused) + ")")

        selections: list[m.Selection] = []
        refusals: list[str] = []
        attempted: list[str] = []
        try:
            for uuid in instance_uuids:
                attempted.append(uuid)
                selection = await self._place(uuid, passed, spec, resources, refusals, holders.get(uuid), group)
                if selection is None:
                    break
                selections.append(selection)
                if group is not None and conn is not None:
                    await server_groups.record(conn, uuid, selection.chosen.host)
            else:
                log.info("scheduled", instances=len(instance_uuids),
                         hosts=[s.chosen.host for s in selections], candidates=len(found.providers),
                         ms=round((time.perf_counter() - started) * 1000, 1))
                return selections
        except BaseException:
            # a claim whose answer was lost (a bus timeout) may have been made: release it too
            await self._release(attempted, holders)
            raise
        await self._release([s.instance_uuid for s in selections], holders)
        if sample is not None and len(found.providers) >= sample:
            log.info("the sampled hosts could not take the request; looking at all of them",
                     sample=sample, instances=len(instance_uuids))
            return await self._select(instance_uuids, spec, holders, group, conn, None)
        if refusals and not looked_again and group is None:  # a group counted its placements
            # What was read is stale: others (another copy of the scheduler, say) claimed
            # meanwhile, and room may have come free elsewhere since too. One more look.
            log.info("placement refused claims the hosts' room allowed; looking again",
                     refused=len(refusals), instances=len(instance_uuids))
            return await self._select(instance_uuids, spec, holders, group, conn, None, looked_again=True)
        total = await host_state.count_hosts(conn or self.pool)
        reason = explain(resources, total, len(hosts), found.providers_with_room, not_nova, removed_by,
                         refusals, placed=len(selections), wanted=len(instance_uuids))
        log.info("no valid host", instances=len(instance_uuids), reason=reason,
                 ms=round((time.perf_counter() - started) * 1000, 1))
        raise errors.NoValidHost(reason)

    async def _place(self, uuid: str, hosts: list[HostState], spec: m.RequestSpec,
                     resources: dict[str, int], refusals: list[str], holder: Holder | None,
                     group: server_groups.GroupState | None = None) -> m.Selection | None:
        """The best host that placement lets claim, taken; None when none does. Raises
        SchedulingAbandoned when the instance's holder is gone."""
        ordered = self._ranked(hosts, resources, group)
        for i, host in enumerate(ordered):
            # a lost answer is settled by sending the same claim again
            result = await settled_claim(
                lambda timeout, host=host: self.placement.claim(uuid, host.uuid, resources, spec.project_id,
                                                                spec.user_id, timeout=timeout, holder=holder),
                instance_uuid=uuid, host=host.host)
            if result.holder_gone:
                raise errors.SchedulingAbandoned(
                    f"Instance {uuid} is no longer held by the conductor that asked for its host: "
                    "the copy that took it over decides")
            if not result.ok:
                host.refused = result.reason
                refusals.append(f"{host.host}: {result.reason}")
                continue
            return self._take(uuid, host, ordered[i + 1:], resources, group)
        return None

    def _choose(self, uuid: str, hosts: list[HostState], resources: dict[str, int]) -> m.Selection | None:
        """The best host, taken without a claim (a batch claims its choices together)."""
        ordered = self._ranked(hosts, resources, None)
        return self._take(uuid, ordered[0], ordered[1:], resources, None) if ordered else None

    def _ranked(self, hosts: list[HostState], resources: dict[str, int],
                group: server_groups.GroupState | None) -> list[HostState]:
        """The hosts that can take `resources`, best first."""
        allowed = [h for h in hosts if h.fits(resources) and (group is None or group.allows(h))]
        ordered = weighers.order(self.weighers, allowed)
        if group is not None and group.policy.policy.startswith("soft-"):
            # The soft policy outranks the resource weighers (stable: ties keep their order).
            ordered.sort(key=lambda h: -group.preference(h))
        subset = max(1, self.settings.host_subset_size)
        if subset > 1 and len(ordered) > 1:
            pick = random.choice(ordered[:subset])
            ordered.remove(pick)
            ordered.insert(0, pick)
        return ordered

    def _take(self, uuid: str, host: HostState, after: list[HostState], resources: dict[str, int],
              group: server_groups.GroupState | None) -> m.Selection:
        """`host` for the instance, what it takes subtracted; the next that fit are its alternates."""
        host.consume(resources)
        if group is not None:
            group.placed(host)
        room = (h for h in after if h.fits(resources) and (group is None or group.allows(h)))
        alternates = [_destination(h) for h in itertools.islice(room, max(0, self.settings.max_attempts - 1))]
        return m.Selection(instance_uuid=uuid, chosen=_destination(host), alternates=alternates)

    async def _release(self, instance_uuids: list[str], holders: Mapping[str, Holder]) -> None:
        """Undo this request's claims (all or nothing), those whose holder still lives."""
        if not instance_uuids:
            return
        async with asyncio.TaskGroup() as tg:
            for uuid in instance_uuids:
                tg.create_task(self._release_one(uuid, holders.get(uuid)), name=f"scheduler:release:{uuid}")
        log.info("released the claims of a request that could not be placed whole",
                 instances=instance_uuids)

    async def _release_one(self, uuid: str, holder: Holder | None) -> None:
        try:
            await self.placement.delete_allocations(uuid, holder=holder)
        except errors.NovaAsyncError as exc:
            # the instance goes to ERROR either way; its allocation is cleaned up with it
            log.warning("could not release a claim", instance_uuid=uuid, error=exc.message)


def explain(resources: dict[str, int], total: int, with_room: int, room_per_class: dict[str, int],
            not_nova: int, removed_by: list[str], refusals: list[str], *, placed: int, wanted: int) -> str:
    """The NoValidHost message: what each stage removed, in the order the stages ran.

    `total` compute hosts exist, `with_room` of them had room according to placement
    (`room_per_class` says, when none had, how many had enough of each class alone)."""
    if total == 0:
        return "No valid host: there are no compute hosts."
    everything = ", ".join(_amount(rc, n) for rc, n in resources.items())
    parts = []
    short = sorted((n, rc) for rc, n in room_per_class.items() if n < total)
    if with_room == 0 and short:
        parts.append("placement: " + ", ".join(
            f"{n} of {total} hosts have {_amount(rc, resources[rc])} free" for n, rc in short))
    elif with_room == 0 and room_per_class:
        parts.append(f"placement: 0 of {total} hosts have {everything} free together")
    else:
        parts.append(f"placement: {with_room} of {total} hosts have {everything} free")
    if not_nova:
        parts.append(f"{not_nova} resource provider(s) are not compute nodes")
    parts.extend(removed_by)
    if refusals:
        shown = "; ".join(refusals[:3]) + ("; ..." if len(refusals) > 3 else "")
        parts.append(f"placement refused {len(refusals)} claim(s) ({shown})")
    if wanted > 1:
        parts.append(f"{placed} of {wanted} instances could be placed, so none were")
    return "No valid host: " + "; ".join(parts)


def _destination(host: HostState) -> m.Destination:
    return m.Destination(host=host.host, node=host.node, provider_uuid=host.uuid)
