"""Host states: what the scheduler knows about each candidate host for one request.

Placement says how much room a provider has; Nova's own tables say which host and node that
provider is and whether its compute service is usable. One SQL query joins the two for all
candidates at once. A host state lives for one request: claims made while serving it are
subtracted locally, so later instances of the same request see the room that is left."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import asyncpg

from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.placement.messages import ProviderSummary

Q = queries("scheduler")


@dataclass
class HostState:
    uuid: str                      # the compute node's uuid, also its resource provider's
    host: str
    node: str
    zone: str = "nova"
    has_service: bool = True
    disabled: bool = False
    disabled_reason: str | None = None
    forced_down: bool = False
    up: bool = True
    capacity: dict[str, int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    traits: tuple[str, ...] = ()
    aggregate_metadata: tuple[dict[str, str], ...] = ()   # of each host aggregate it is in
    hypervisor_type: str = ""      # as os-hypervisors shows it: QEMU, KVM, test
    vcpus: int = 0
    memory_mb: int = 0
    building: int = 0              # instances being built there now
    failed_builds: int = 0         # consecutive failed builds
    refused: str | None = None     # placement refused a claim here during this request
    cell: str | None = None        # uuid of the cell the host is mapped to

    def free(self, resource_class: str) -> int:
        return self.capacity.get(resource_class, 0) - self.used.get(resource_class, 0)

    def fits(self, resources: dict[str, int]) -> bool:
        if self.refused is not None:
            return False
        capacity, used = self.capacity, self.used
        for rc, n in resources.items():
            if capacity.get(rc, 0) - used.get(rc, 0) < n:
                return False
        return True

    def consume(self, resources: dict[str, int]) -> None:
        for rc, amount in resources.items():
            self.used[rc] = self.used.get(rc, 0) + amount

    def give_back(self, resources: dict[str, int]) -> None:
        for rc, amount in resources.items():
            self.used[rc] = self.used.get(rc, 0) - amount


async def load(cells: Cells, candidates: list[ProviderSummary], service_down_time: int, *,
               api: asyncpg.Connection | None = None) -> tuple[list[HostState], int]:
    """Host states for the candidates, in placement's order, and how many candidates have no
    compute node here (providers that are not Nova hosts cannot be scheduled to). Hosts are
    in the API database (read through `api` when the caller holds a connection to it); what
    each is building now is counted in the cells."""
    if not candidates:
        return [], 0
    rows = await (api or cells.api).fetch(Q.host_states, [c.uuid for c in candidates], float(service_down_time))
    by_uuid = {str(r["uuid"]): r for r in rows}
    building: Counter[str] = Counter()
    for r in await cells.gather(Q.building, [r["host"] for r in rows], cell0=False):
        building[r["host"]] += r["building"]
    hosts = []
    for c in candidates:
        row = by_uuid.get(c.uuid)
        if row is None:
            continue
        hosts.append(HostState(
            uuid=c.uuid, host=row["host"], node=row["hypervisor_hostname"], zone=row["zone"],
            has_service=row["has_service"], disabled=row["disabled"],
            disabled_reason=row["disabled_reason"], forced_down=row["forced_down"], up=row["up"],
            capacity=dict(c.capacity), used=dict(c.used), traits=tuple(c.traits),
            aggregate_metadata=tuple(row["aggregate_metadata"]), hypervisor_type=row["hypervisor_type"],
            vcpus=row["vcpus"], memory_mb=row["memory_mb"], building=building[row["host"]],
            failed_builds=row["failed_builds"], cell=row["cell"]))
    return hosts, len(candidates) - len(hosts)


async def count_hosts(db: Pool | asyncpg.Connection) -> int:
    return await db.fetchval(Q.count_hosts)
