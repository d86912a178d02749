"""Nova's deprecated os-security-groups, os-security-group-rules, os-networks and
os-tenant-networks APIs, as the network service answers them: the same domain code as /v2.0/security-groups, with the caller's
context, so Nova's proxy sees exactly what Neutron's API would show that caller. The
compute API turns the answers into Nova's own format (api/security_group_proxy.py)."""

from __future__ import annotations

from typing import Any

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.pool import Pool
from nova_async.network import messages as m
from nova_async.network import networks
from nova_async.network import security_group_rules as rules
from nova_async.network import security_groups as groups
from nova_async.network import views


async def _shown(pool: Pool, rows: list[Any]) -> list[dict[str, Any]]:
    found = await groups.rules_of(pool, rows)
    return [views.security_group(r, found[str(r["id"])]) for r in rows]


async def answer(pool: Pool, ctx: RequestContext, msg: m.SecurityGroupRequest) -> m.SecurityGroupReply:
    if msg.action == "list":
        rows = await groups.list_groups(pool, ctx, groups.GroupFilters(ids=msg.ids))
        return m.SecurityGroupReply(groups=await _shown(pool, rows))
    if msg.action == "show":
        assert msg.id is not None
        return m.SecurityGroupReply(groups=await _shown(pool, [await groups.get_group(pool, ctx, msg.id)]))
    if msg.action == "create":
        row = await groups.create_group(pool, ctx, msg.body)
        return m.SecurityGroupReply(groups=await _shown(pool, [row]))
    if msg.action == "update":
        assert msg.id is not None
        row = await groups.update_group(pool, ctx, msg.id, msg.body)
        return m.SecurityGroupReply(groups=await _shown(pool, [row]))
    if msg.action == "delete":
        assert msg.id is not None
        await groups.delete_group(pool, ctx, msg.id)
        return m.SecurityGroupReply()
    if msg.action == "create_rule":
        return m.SecurityGroupReply(rule=views.security_group_rule(await rules.create_rule(pool, ctx, msg.body)))
    if msg.action == "delete_rule":
        assert msg.id is not None
        await rules.delete_rule(pool, ctx, msg.id)
        return m.SecurityGroupReply()
    raise errors.InvalidInput(f"Unknown security group request {msg.action!r}.")


async def answer_networks(pool: Pool, ctx: RequestContext, msg: m.NetworkRequest) -> m.NetworkReply:
    if msg.id:
        rows = [await networks.get_network(pool, ctx, msg.id)]
    else:
        rows = await networks.list_networks(pool, ctx, networks.NetworkFilters())
    return m.NetworkReply(networks=[{"id": str(r["id"]), "name": r["name"], "project_id": r["project_id"],
                                     "mtu": r["mtu"]} for r in rows])
