"""Quotas as Neutron reports them, with Neutron's default limits (so that `openstack quota
show` works). Networks, subnets, ports, routers and floating IPs made through the API are
held to them (`check`), a bulk create as a whole, and security groups and their rules too
(security_groups.check_quota); an instance's own ports are counted but not refused here
(compute's quota already admitted the instance)."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("network")
SQ = queries("security_groups")

DEFAULTS = {"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
            "security_group": 10, "security_group_rule": 100, "rbac_policy": 10,
            "subnetpool": -1, "trunk": -1}


def _check(ctx: RequestContext, project_id: str) -> None:
    if not ctx.is_admin and project_id != ctx.project_id:
        raise errors.Forbidden("Only an admin may read another project's quota.")


def limits(ctx: RequestContext, project_id: str) -> dict[str, int]:
    _check(ctx, project_id)
    return dict(DEFAULTS)


async def usage(db: Pool, ctx: RequestContext, project_id: str) -> dict[str, dict[str, Any]]:
    """Limit, use and reservations per resource (`/quotas/{project}/details`)."""
    _check(ctx, project_id)
    used = dict(await db.fetchrow(Q.project_usage, project_id))
    used.update(await db.fetchrow(SQ.project_counts, project_id))
    return {k: {"limit": limit, "used": used.get(k, 0), "reserved": 0}
            for k, limit in DEFAULTS.items()}


async def check(conn: asyncpg.Connection, project_id: str, resource: str, wanted: int) -> None:
    """Refuse `wanted` more of `resource` that would take the project past its limit. Runs in
    the creating transaction, before its inserts and its other locks: creates of one kind by
    one project queue on one advisory lock, so a count is never overtaken."""
    await conn.execute(Q.lock_project_quota, project_id, resource)
    used = (await conn.fetchrow(Q.project_usage, project_id))[resource]
    if used + wanted > DEFAULTS[resource]:
        raise errors.Conflict(f"Quota exceeded for resources: ['{resource}'] (limit {DEFAULTS[resource]}, "
                              f"in use {used}, requested {wanted}).", code="over_quota")


async def check_batch(conn: asyncpg.Connection, resource: str, projects: list[str]) -> None:
    """`check` for a bulk create whose items belong to `projects` (one entry per item)."""
    for project in sorted(set(projects)):
        await check(conn, project, resource, projects.count(project))


async def reserve(conn: asyncpg.Connection, project_id: str, resource: str) -> None:
    """Room for one more `resource` of the project (a router, a floating IP), or 409 OverQuota."""
    await check(conn, project_id, resource, 1)
