"""Security groups as Nova's API shows them; the network service keeps them.

- a server's `security_groups` (show, detail) are the names of the groups on its ports,
  asked of the network service once per page, and only for servers that have ports;
- `addSecurityGroup` / `removeSecurityGroup` put a group (by name or id) on all the
  server's ports or take it off them;
- `GET /servers/{id}/os-security-groups` and the deprecated os-security-groups /
  os-security-group-rules proxy (microversions up to 2.35; 404 from 2.36 on, as Nova): the
  network service answers with Neutron's view, turned here into Nova's (only the ingress
  rules, `ip_protocol`, `from_port`/`to_port`, `ip_range`/`group`)."""

from __future__ import annotations

from typing import Any

from nova_async.api import lookup
from nova_async.common.microversion import Version
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext

PROXY_MAX = (2, 35)  # the last microversion with the proxy APIs


async def of_servers(state: ApiState, ctx: RequestContext, rows: list[Any]) -> dict[str, list[str]]:
    """The names of the groups on each server's ports, by server uuid."""
    with_ports = [str(r["uuid"]) for r in rows if r["network_info"]]
    if not with_ports:
        return {}
    return (await state.networks.instance_security_groups(ctx, with_ports)).names


async def change_server(state: ApiState, ctx: RequestContext, server_id: str, group: str, add: bool) -> None:
    _, row = await lookup.visible_instance(state, ctx, server_id)
    if not group.strip():
        raise errors.InvalidInput("Security group name cannot be empty")
    await state.networks.change_instance_security_group(ctx, str(row["uuid"]), row["project_id"], group, add)


async def of_server(state: ApiState, ctx: RequestContext, server_id: str) -> list[dict[str, Any]]:
    """The groups on a server's ports, in Nova's format (os-security-groups of a server)."""
    _, row = await lookup.visible_instance(state, ctx, server_id)
    uuid = str(row["uuid"])
    ids = (await state.networks.instance_security_groups(ctx, [uuid])).ids.get(uuid, [])
    if not ids:
        return []
    reply = await state.networks.security_groups(ctx, "list", ids=ids)
    return _sorted(reply.groups)


def check_proxy_version(version: Version) -> None:
    if version > PROXY_MAX:
        raise errors.NotFound("The resource could not be found.")


async def list_groups(state: ApiState, ctx: RequestContext) -> list[dict[str, Any]]:
    return _sorted((await state.networks.security_groups(ctx, "list")).groups)


async def show_group(state: ApiState, ctx: RequestContext, group_id: str) -> dict[str, Any]:
    return nova_group((await state.networks.security_groups(ctx, "show", id=group_id)).groups[0])


async def create_group(state: ApiState, ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    try:
        reply = await state.networks.security_groups(ctx, "create", body=body)
    except errors.Conflict as exc:
        if exc.code == "over_quota":  # Nova's SecurityGroupLimitExceeded
            raise errors.OverQuota(f"Quota exceeded, too many security groups. {exc.message}") from None
        raise errors.InvalidInput(exc.message) from None
    return nova_group(reply.groups[0])


async def update_group(state: ApiState, ctx: RequestContext, group_id: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        reply = await state.networks.security_groups(ctx, "update", id=group_id, body=body)
    except errors.Conflict as exc:
        raise errors.InvalidInput(exc.message) from None
    return nova_group(reply.groups[0])


async def delete_group(state: ApiState, ctx: RequestContext, group_id: str) -> None:
    try:
        await state.networks.security_groups(ctx, "delete", id=group_id)
    except errors.Conflict as exc:  # in use, or the default group: Nova's Invalid
        raise errors.InvalidInput(exc.message) from None


async def create_rule(state: ApiState, ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    protocol = body.get("ip_protocol")
    low, high = body.get("from_port"), body.get("to_port")
    if protocol is not None and str(protocol).lower() == "icmp" and low == -1 and high == -1:
        low = high = None  # any ICMP type and code
    if low == -1 and high == -1:
        low = high = None
    cidr = body.get("cidr")
    rule: dict[str, Any] = {
        "security_group_id": body.get("parent_group_id"), "direction": "ingress", "protocol": protocol,
        "port_range_min": low, "port_range_max": high,
        "ethertype": "IPv6" if cidr and ":" in cidr else "IPv4"}
    if body.get("group_id"):
        rule["remote_group_id"] = body["group_id"]
    else:
        rule["remote_ip_prefix"] = cidr or "0.0.0.0/0"
    if not rule["security_group_id"]:
        raise errors.InvalidInput("parent_group_id is required.")
    try:
        reply = await state.networks.security_groups(ctx, "create_rule", body=rule)
    except errors.Conflict as exc:
        if exc.code == "over_quota":
            raise errors.OverQuota(f"Quota exceeded, too many security group rules. {exc.message}") from None
        raise errors.InvalidInput(exc.message) from None
    assert reply.rule is not None
    group = None
    if reply.rule["remote_group_id"]:
        group = (await state.networks.security_groups(ctx, "show", id=reply.rule["remote_group_id"])).groups[0]
    return nova_rule(reply.rule, {reply.rule["remote_group_id"]: group} if group else {})


async def delete_rule(state: ApiState, ctx: RequestContext, rule_id: str) -> None:
    try:
        await state.networks.security_groups(ctx, "delete_rule", id=rule_id)
    except errors.NotFound as exc:
        raise errors.NotFound(exc.message.replace("Security group rule", "Rule")) from None


# -- Neutron's view, in Nova's words

def _sorted(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {g["id"]: g for g in groups}
    shown = [nova_group(g, by_id) for g in groups]
    return sorted(shown, key=lambda g: (g["tenant_id"], g["name"]))


def nova_group(group: dict[str, Any], known: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    known = {group["id"]: group, **(known or {})}
    return {"id": group["id"], "name": group["name"], "description": group["description"],
            "tenant_id": group["project_id"],
            "rules": [nova_rule(r, known) for r in group["security_group_rules"] if r["direction"] == "ingress"]}


def nova_rule(rule: dict[str, Any], known: dict[str, dict[str, Any]]) -> dict[str, Any]:
    protocol = rule["protocol"]
    low, high = rule["port_range_min"], rule["port_range_max"]
    if protocol and low is None and high is None:
        low, high = (1, 65535) if protocol in ("tcp", "udp") else (-1, -1)
    out: dict[str, Any] = {"id": rule["id"], "parent_group_id": rule["security_group_id"], "ip_protocol": protocol,
                           "from_port": low, "to_port": high, "group": {}, "ip_range": {}}
    remote = rule["remote_group_id"]
    if remote:
        group = known.get(remote)
        out["group"] = {"name": group["name"] if group else None,
                        "tenant_id": group["project_id"] if group else None}
    else:
        out["ip_range"] = {"cidr": rule["remote_ip_prefix"] or ("::/0" if rule["ethertype"] == "IPv6"
                                                                  else "0.0.0.0/0")}
    return out
