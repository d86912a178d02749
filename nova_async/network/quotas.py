"""Quotas as Neutron reports them. The limits are Neutron's defaults; they are reported so
that `openstack quota show` works. Security groups and their rules are held to them
(security_groups.check_quota); the rest are not enforced."""

from __future__ import annotations

from typing import Any

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
