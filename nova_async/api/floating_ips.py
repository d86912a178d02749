"""Floating IPs as Nova's deprecated proxy shows them; the network service keeps them.

`os-floating-ips` (list, show, allocate from a pool, release) and `os-floating-ip-pools`
answer until microversion 2.35 and are 404 from 2.36 on; the server actions
`addFloatingIp` / `removeFloatingIp` until 2.43 (404 from 2.44), as Nova. The network role
does the work with the caller's context (network/floatingip_proxy.py); this module puts
Nova's face on it: the view (`ip`, `fixed_ip`, `instance_id`, `pool`) and the status codes
Nova's controller turns Neutron's answers into (an exhausted pool is a 404, a quota a 403,
any refused association a 400)."""

from __future__ import annotations

from typing import Any

from nova_async.api import lookup
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.microversion import Version
from nova_async.network.messages import FloatingIpInfo

PROXY_MAX = (2, 35)     # the last microversion with os-floating-ips and os-floating-ip-pools
ACTIONS_MAX = (2, 43)   # the last with the addFloatingIp / removeFloatingIp actions

_IP = {"type": "string", "oneOf": [{"format": "ipv4"}, {"format": "ipv6"}]}
ADD_SCHEMA = {"type": "object", "required": ["address"], "additionalProperties": False,
              "properties": {"address": _IP, "fixed_address": _IP}}
REMOVE_SCHEMA = {"type": "object", "required": ["address"], "additionalProperties": False,
                 "properties": {"address": _IP}}


def check_proxy_version(version: Version) -> None:
    if version > PROXY_MAX:
        raise errors.NotFound("The resource could not be found.")


def check_action_version(version: Version) -> None:
    if version > ACTIONS_MAX:
        raise errors.NotFound("The resource could not be found.")


def view(fip: FloatingIpInfo) -> dict[str, Any]:
    return {"id": fip.id, "ip": fip.address, "fixed_ip": fip.fixed_address, "instance_id": fip.instance_uuid,
            "pool": fip.pool}


async def list_floating_ips(state: ApiState, ctx: RequestContext) -> list[dict[str, Any]]:
    return [view(f) for f in (await state.networks.floating_ips(ctx, "list")).floating_ips]


async def show_floating_ip(state: ApiState, ctx: RequestContext, fip_id: str) -> dict[str, Any]:
    try:
        [found] = (await state.networks.floating_ips(ctx, "show", id=fip_id)).floating_ips
    except errors.NotFound:
        raise errors.NotFound(f"Floating IP not found for ID {fip_id}") from None
    return view(found)


async def allocate(state: ApiState, ctx: RequestContext, pool: str | None) -> dict[str, Any]:
    where = f" in pool {pool}" if pool else ""
    try:
        [made] = (await state.networks.floating_ips(ctx, "create", pool=pool or "")).floating_ips
    except errors.Conflict as exc:
        if exc.code == "ip_exhausted":
            raise errors.NotFound(f"No more floating IPs{where or ' available'}.") from None
        if exc.code == "over_quota":
            raise errors.OverQuota(f"IP allocation over quota{where}.") from None
        raise errors.InvalidInput(exc.message) from None
    return view(made)


async def release(state: ApiState, ctx: RequestContext, fip_id: str) -> None:
    try:
        await state.networks.floating_ips(ctx, "delete", id=fip_id)
    except errors.NotFound:
        raise errors.NotFound(f"Floating IP not found for ID {fip_id}") from None


async def list_pools(state: ApiState, ctx: RequestContext) -> list[dict[str, str]]:
    return [{"name": name} for name in (await state.networks.floating_ips(ctx, "pools")).pools]


async def add_to_server(state: ApiState, ctx: RequestContext, server_id: str, address: str,
                        fixed_address: str | None) -> None:
    """addFloatingIp: only an unknown floating IP is a 404 (and a server the caller cannot
    see); whatever else the network service refuses is Nova's 400."""
    _, row = await lookup.visible_instance(state, ctx, server_id)
    try:
        await state.networks.floating_ips(ctx, "associate", address=address, instance_uuid=str(row["uuid"]),
                                          fixed_address=fixed_address or "")
    except errors.NotFound as exc:
        if exc.code == "floatingip_not_found":
            raise errors.NotFound("floating IP not found") from None
        raise errors.InvalidInput(f"Unable to associate floating IP {address} for instance {server_id}. "
                                  f"Error: {exc.message}") from None
    except (errors.InvalidInput, errors.Conflict) as exc:   # Neutron's 400 and 409: Nova's 400
        raise errors.InvalidInput(exc.message) from None


async def remove_from_server(state: ApiState, ctx: RequestContext, server_id: str, address: str) -> None:
    """removeFloatingIp: 404 for an address the caller has no floating IP at, 409 when it is
    not on this server (Nova does not look the server up first: neither do we)."""
    await state.networks.floating_ips(ctx, "disassociate", address=address, instance_uuid=server_id)
