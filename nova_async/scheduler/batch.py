"""Decisions made together: the boot requests that queue while the scheduler is busy share
one look at the hosts and one claim.

A decision costs mostly what it reads and writes, not what it thinks: a candidates question
to placement, the host states of the answer, and a claim, each a round trip whose price
hardly depends on how many instances it serves. When requests arrive faster than they are
decided, those that queued meanwhile are taken up as one batch:

- per requested amount of resources, one candidates question (a random sample of at least
  `max_placement_results` hosts with room, more when the batch wants more instances) and
  one load of host states;
- each request, in the order they came, is filtered and weighed over those host states and
  its hosts are chosen, what it takes subtracted as it goes, exactly as the instances of one
  request always were;
- one claim in placement for every chosen instance of the batch, all or nothing.

A request the batch cannot settle is decided on its own, the way every request was before,
and so is every request of a batch whose claim placement refused (someone else took the
room meanwhile: a user, or another copy of the scheduler, which reads the same hosts): the
one-request path looks again, at every host if need be, and explains a NoValidHost. A claim
whose answer was lost is sent again as it was (placement.client.settled_claim): its second
answer says whether it holds, and the batch goes on either way. Requests with a server group, host hints or a cell to stay in always take that
path; their filters read more than host states.

Two batches overlap: while one batch's claim is on its way, the next batch looks and
chooses (one batch looks at a time, so the next one gathers everything that queued
meanwhile). The claims still on their way, and those that landed after the next batch's
look began, may be missing from what it read: what they take is subtracted from its host
states. A claim counted twice (the look saw it already) only makes a host look fuller than
it is; placement's claim is the judge either way."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import msgspec
import structlog

from nova_async.common import errors
from nova_async.config import SchedulerSettings
from nova_async.db.lines import Batch, Call, Lines, Sending
from nova_async.placement import messages as pm
from nova_async.placement.client import PlacementClient, settled_claim
from nova_async.scheduler import filters, host_state
from nova_async.scheduler import messages as m
from nova_async.scheduler.host_state import HostState

log = structlog.get_logger("scheduler")


def batchable(spec: m.RequestSpec) -> bool:
    """Whether a request can be decided in a batch: its filters need nothing but host states."""
    return spec.group is None and spec.cell is None and not spec.scheduler_hints and spec.requested_host is None


@dataclass
class _Request:
    instance_uuids: list[str]
    spec: m.RequestSpec
    holders: Mapping[str, pm.Holder]
    started: float = field(default_factory=time.perf_counter)


# A call's answer: the selections, or None: "decide it on your own".
Choose = Callable[[str, list[HostState], dict[str, int]], m.Selection | None]
DECIDERS = 2   # one batch looking and choosing, one claiming


@dataclass
class _Claiming:
    """A batch's claims, from its choice on."""
    claims: list[pm.ConsumerClaim]
    landed: float | None = None    # when placement answered them (monotonic); None: on their way


class Batches:
    """Collects requests while batches are being decided, on one line (db/lines.py) with two
    senders, batch after batch: one looks (the line's turn) while the other claims. The
    line's owner, `lines`, is entered by the scheduler role for as long as it runs."""

    def __init__(self, *, cells, placement: PlacementClient, settings: SchedulerSettings,
                 host_filters: list[filters.Filter], choose: Choose,
                 release: Callable[[list[str], Mapping[str, pm.Holder]], Awaitable[None]]) -> None:
        self.cells = cells
        self.placement = placement
        self.settings = settings
        self.filters = host_filters
        self.choose = choose          # one instance's host among host states, taken from them
        self.release = release        # claims given back
        self.lines = Lines("scheduler", lambda: errors.Unavailable("the scheduler is stopping"))
        self._sending = Sending(send=self._look, then=self._settle, senders=DECIDERS, name="batches")
        self._claiming: list[_Claiming] = []     # recent claims, which the next look may miss

    async def decide(self, instance_uuids: list[str], spec: m.RequestSpec,
                     holders: Mapping[str, pm.Holder]) -> list[m.Selection] | None:
        """The request's selections, or None when it is to be decided on its own."""
        return await self.lines.submit(self, self._how, _Request(instance_uuids, spec, holders))

    def _how(self) -> Sending:
        return self._sending

    async def _look(self, batch: Batch) -> tuple[list[tuple[Call[_Request], list[m.Selection]]],
                                                 list[Call[_Request]], _Claiming | None]:
        """The batch's choices, the requests to decide alone, and the choices' claims."""
        by_amounts: dict[tuple[tuple[str, int], ...], list[Call[_Request]]] = {}
        alone: list[Call[_Request]] = []
        seen: set[str] = set()
        for call in batch:
            request = call.args
            if seen.intersection(request.instance_uuids):  # one claim holds one write per consumer
                alone.append(call)
                continue
            seen.update(request.instance_uuids)
            by_amounts.setdefault(tuple(request.spec.resources().items()), []).append(call)
        chosen: list[tuple[Call[_Request], list[m.Selection]]] = []
        claims: list[pm.ConsumerClaim] = []
        began = time.monotonic()
        for amounts, calls in by_amounts.items():
            resources = dict(amounts)
            wanted = sum(len(c.args.instance_uuids) for c in calls)
            found = await self.placement.find_candidates(resources, max(self.settings.max_placement_results,
                                                                        wanted))
            hosts, _ = await host_state.load(self.cells, found.providers, self.settings.service_down_time)
            self._subtract_missed(hosts, began)
            filtered: dict[bytes, list[HostState]] = {}  # requests alike pass the same hosts
            for call in calls:
                request = call.args
                selections = self._choose_all(request, hosts, resources, filtered)
                if selections is None:
                    alone.append(call)
                else:
                    chosen.append((call, selections))
                    claims += [pm.ConsumerClaim(consumer_uuid=s.instance_uuid,
                                                allocations={s.chosen.provider_uuid: resources},
                                                project_id=request.spec.project_id,
                                                user_id=request.spec.user_id,
                                                holder=request.holders.get(s.instance_uuid))
                               for s in selections]
        claiming = None
        if claims:
            claiming = _Claiming(claims)
            self._claiming.append(claiming)
        return chosen, alone, claiming

    def _subtract_missed(self, hosts: list[HostState], began: float) -> None:
        """Take from `hosts` what the claims a look that began at `began` may have missed
        would take: those on their way, and those answered since. One look runs at a time,
        so a claim answered before this one began is in what it read, and in every later
        look's: it is forgotten."""
        self._claiming = [c for c in self._claiming if c.landed is None or c.landed > began]
        if not self._claiming:
            return
        by_uuid = {h.uuid: h for h in hosts}
        for claiming in self._claiming:
            for claim in claiming.claims:
                for provider, amounts in claim.allocations.items():
                    if provider in by_uuid:
                        by_uuid[provider].consume(amounts)

    async def _settle(self, batch: Batch, looked: tuple[list[tuple[Call[_Request], list[m.Selection]]],
                                                        list[Call[_Request]], _Claiming | None]) -> None:
        """Claim what the batch chose, and answer every request of it."""
        chosen, alone, claiming = looked
        if claiming is not None:
            consumers = [c.consumer_uuid for c in claiming.claims]
            holders = {c.consumer_uuid: c.holder for c in claiming.claims if c.holder is not None}
            try:
                # a lost answer is settled by sending the same claim again
                claimed = await settled_claim(lambda timeout: self.placement.claim_many(claiming.claims,
                                                                                      timeout=timeout),
                                              consumers=len(consumers))
            except errors.Unavailable as exc:
                # Answer after answer lost: placement is out of reach. Whatever was made is
                # undone, and each request meets the outage on its own (or gets past it).
                log.warning("a batch's claim went unanswered; its requests are decided one by one",
                            requests=len(chosen), error=exc.message)
                await self.release(consumers, holders)
                claimed = pm.ClaimResult(ok=False, reason=exc.message)
            except BaseException:
                # Cancelled, or failed some other way: claims may have been made. Awaited even
                # when cancelled: this task belongs to the scheduler's lines, which are
                # cancelled once, at shutdown, and the release goes first.
                await self.release(consumers, holders)
                raise
            finally:
                claiming.landed = time.monotonic()
            if not claimed.ok:
                # (one claim whose holder is gone refuses the lot: alone, only its request stops)
                log.info("a batch's claim was refused; its requests are decided one by one",
                         requests=len(chosen), reason=claimed.reason)
                alone += [c for c, _ in chosen]
                chosen = []
        for call, selections in chosen:
            if call.answer.done():  # its asker is gone (cancelled): give its claims back
                await self.release([s.instance_uuid for s in selections], call.args.holders)
                continue
            log.info("scheduled", instances=len(selections), hosts=[s.chosen.host for s in selections],
                     batch=len(batch), ms=round((time.perf_counter() - call.args.started) * 1000, 1))
            call.answer.set_result(selections)
        for call in alone:
            if not call.answer.done():
                call.answer.set_result(None)

    def _choose_all(self, request: _Request, hosts: list[HostState], resources: dict[str, int],
                    filtered: dict[bytes, list[HostState]]) -> list[m.Selection] | None:
        """Hosts for every instance of the request, taken from `hosts`; None (and nothing
        taken) when one instance finds none, or when the request fails here (an error of its
        own, which it meets again, and reports, on the one-request path). The filters read
        the spec and what a host is, never its room: `filtered` keeps their answer per spec."""
        selections: list[m.Selection] = []
        passed: list[HostState] = []
        try:
            alike = msgspec.json.encode(request.spec)
            if alike not in filtered:
                filtered[alike], _ = filters.run(self.filters, hosts, request.spec)
            passed = filtered[alike]
            for uuid in request.instance_uuids:
                selection = self.choose(uuid, passed, resources)
                if selection is None:
                    break
                selections.append(selection)
            else:
                return selections
        except Exception as exc:
            # Not raised here: the one-request path meets the same error again and reports it
            # to the request's asker, with the request's own context.
            log.info("a request failed in its batch; it is decided on its own", error=repr(exc))
        by_uuid = {h.uuid: h for h in passed}
        for s in selections:
            by_uuid[s.chosen.provider_uuid].give_back(resources)
        return None
