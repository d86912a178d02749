"""`os-networks` and `os-tenant-networks` (until microversion 2.35, 404 from 2.36): the
networks the network service shows the caller, in the shape Nova gives Neutron's networks
there (only id and label known; nova-network's fields null)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import microversion
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_FIELDS = ("cidr", "netmask", "gateway", "broadcast", "dns1", "dns2", "cidr_v6", "gateway_v6", "netmask_v6")
_ADMIN_FIELDS = ("created_at", "updated_at", "deleted_at", "deleted", "injected", "bridge", "vlan",
                 "vpn_public_address", "vpn_public_port", "vpn_private_address", "dhcp_start", "host",
                 "bridge_interface", "multi_host", "priority", "rxtx_base", "dhcp_server", "enable_dhcp",
                 "share_address")


def _allowed(request: web.Request):
    if microversion.of(request) >= (2, 36):
        raise errors.NotFound("The network proxies are gone from microversion 2.36; use the network API.")
    return request.app[STATE], w.context(request)


def _network(net: dict[str, Any], admin: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": net["id"], "label": net["name"], **dict.fromkeys(_FIELDS)}
    if admin:
        out.update(dict.fromkeys(_ADMIN_FIELDS), project_id=net["project_id"], mtu=net["mtu"])
    return out


def _tenant_network(net: dict[str, Any]) -> dict[str, Any]:
    return {"id": net["id"], "label": net["name"], "cidr": None}


async def _networks(request: web.Request, one: bool) -> tuple[list[dict[str, Any]], bool]:
    state, ctx = _allowed(request)
    found = await state.networks.networks(ctx, request.match_info["network_id"] if one else "")
    return found, ctx.is_admin


async def list_networks(request: web.Request) -> web.Response:
    found, admin = await _networks(request, one=False)
    return w.dump({"networks": [_network(n, admin) for n in found]})


async def show_network(request: web.Request) -> web.Response:
    (net,), admin = await _networks(request, one=True)
    return w.dump({"network": _network(net, admin)})


async def list_tenant_networks(request: web.Request) -> web.Response:
    found, _ = await _networks(request, one=False)
    return w.dump({"networks": [_tenant_network(n) for n in found]})


async def show_tenant_network(request: web.Request) -> web.Response:
    (net,), _ = await _networks(request, one=True)
    return w.dump({"network": _tenant_network(net)})
