"""Quotas as Neutron reports them. The limits are Neutron's defaults; they are reported so
that `openstack quota show` works. Routers and floating IPs are counted and enforced
(`reserve`): each holds scarce things (an external address, a namespace on the host);
the other limits are reported only."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("network")
L3 = queries("l3")
_COUNTS = {"router": L3.count_routers, "floatingip": L3.count_floatingips}

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
    used = await db.fetchrow(Q.project_usage, project_id)
    return {k: {"limit": limit, "used": used[k] if k in used.keys() else 0, "reserved": 0}
            for k, limit in DEFAULTS.items()}


async def reserve(conn: asyncpg.Connection, project_id: str, resource: str) -> None:
    """Room for one more `resource` ("router" or "floatingip") of the project, or 409 OverQuota
    as Neutron answers. Holds the project's lock until the caller's transaction ends, so two
    creations cannot both take the last one."""
    await conn.execute(L3.lock_project_quota, project_id)
    limit = DEFAULTS[resource]
    if limit >= 0 and await conn.fetchval(_COUNTS[resource], project_id) >= limit:
        raise errors.Conflict(f"Quota exceeded for resources: ['{resource}'].", code="over_quota")
