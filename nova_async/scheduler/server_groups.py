"""Server group policies in scheduling: where a group's members are, and what that allows.

Hard policies filter (affinity: only the host the members are on, once there is one;
anti-affinity: only hosts with fewer than `max_server_per_host` members), soft ones weigh
(soft-affinity prefers hosts with more members, soft-anti-affinity fewer). Every placement
within the request counts at once, so a multi-create spreads (or packs) too.

A resize or cold migration of a member is scheduled with its group too, as Nova's are: its
own host counts as the member's (so an affinity member has nowhere else to go, as in Nova),
and anti-affinity lets it stay there; a group deleted since has no members left to keep it
from anywhere. The member's recorded host becomes the destination when it is chosen, and the
source again when the move is reverted (compute/resize.py).

Scheduling for one group happens under a PostgreSQL advisory lock on the group, held from
reading the members' hosts until their claims are recorded: two boots into one
anti-affinity group cannot both pick the same host, however many schedulers run."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field

import asyncpg

from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.scheduler.host_state import HostState
from nova_async.scheduler.messages import GroupPolicy

Q = queries("server_groups")


@dataclass
class GroupState:
    policy: GroupPolicy
    on_host: Counter[str] = field(default_factory=Counter)   # members per host
    # the hosts of the members being scheduled again (a resize, a cold migration): their own
    # host, which an anti-affinity policy lets them stay on, as Nova's filter does
    moving_from: frozenset[str] = frozenset()

    @property
    def filter_name(self) -> str:
        return {"affinity": "ServerGroupAffinityFilter",
                "anti-affinity": "ServerGroupAntiAffinityFilter"}.get(self.policy.policy, "")

    def allows(self, host: HostState) -> bool:
        if self.policy.policy == "affinity":
            return not self.on_host or host.host in self.on_host
        if self.policy.policy == "anti-affinity":
            return host.host in self.moving_from or self.on_host[host.host] < self.policy.max_server_per_host
        return True

    def why(self, host: HostState) -> str:
        if self.policy.policy == "affinity":
            return f"not the host of group {self.policy.uuid}'s members"
        return f"already holds {self.on_host[host.host]} of group {self.policy.uuid}'s members"

    def preference(self, host: HostState) -> float:
        """For the soft policies: more is better."""
        members = float(self.on_host[host.host])
        return {"soft-affinity": members, "soft-anti-affinity": -members}.get(self.policy.policy, 0.0)

    def placed(self, host: HostState) -> None:
        self.on_host[host.host] += 1


@contextlib.asynccontextmanager
async def locked(pool: Pool, policy: GroupPolicy,
                 scheduled: Collection[str] = ()) -> AsyncIterator[tuple[GroupState, asyncpg.Connection]]:
    """The group's state, read and kept under its lock for as long as the block runs, for
    placing the instances `scheduled` (members already on a host are being moved)."""
    async with pool.acquire() as conn:
        key = f"server-group:{policy.uuid}"
        await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", key)
        try:
            rows = await conn.fetch(Q.placed_members, policy.uuid)
            moving_from = frozenset(r["host"] for r in rows if r["host"] and str(r["instance_uuid"]) in scheduled)
            yield GroupState(policy, Counter(r["host"] for r in rows if r["host"]), moving_from), conn
        finally:
            await conn.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)


async def record(conn: asyncpg.Connection, instance_uuid: str, host: str) -> None:
    await conn.execute(Q.set_member_host, instance_uuid, host)
