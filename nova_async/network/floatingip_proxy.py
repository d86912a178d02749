"""Nova's deprecated floating IP proxy (os-floating-ips, os-floating-ip-pools, and the
addFloatingIp / removeFloatingIp server actions), as the network service answers it: the
same domain code as /v2.0/floatingips, run with the caller's context, so Nova's proxy sees
exactly what Neutron's API would show that caller and changes only what it could change
there. What Nova adds on top is here: pools are external networks found by name or id, a
floating IP is found by its address, and an association picks the port and fixed address
of the instance. The compute API turns the answers into Nova's view and Nova's status codes
(api/floating_ips.py)."""

from __future__ import annotations

import ipaddress

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.network import floatingips, ipam, networks, ports
from nova_async.network import messages as m


async def answer(pool: Pool, cells: Cells, ctx: RequestContext, msg: m.FloatingIpRequest,
                 default_pool: str) -> m.FloatingIpReply:
    if msg.action == "list":
        # Nova asks Neutron for the caller's project's floating IPs only, an admin's too.
        filters = floatingips.FloatingIpFilters(project_ids=[ctx.project_id])
        return await _reply(pool, ctx, await floatingips.list_floatingips(pool, ctx, filters))
    if msg.action == "show":
        return await _reply(pool, ctx, [await floatingips.get_floatingip(pool, ctx, msg.id)])
    if msg.action == "create":
        network_id = await _pool_network(pool, ctx, msg.pool or default_pool)
        row = await floatingips.create_floatingip(pool, ctx, {"floating_network_id": network_id})
        return await _reply(pool, ctx, [row])
    if msg.action == "delete":
        await floatingips.delete_floatingip(pool, cells, ctx, msg.id)   # an associated one too, as Nova
        return m.FloatingIpReply()
    if msg.action == "pools":
        found = await networks.list_networks(pool, ctx, networks.NetworkFilters(external=True))
        return m.FloatingIpReply(pools=[r["name"] or str(r["id"]) for r in found])
    if msg.action == "associate":
        await _associate(pool, cells, ctx, msg)
        return m.FloatingIpReply()
    if msg.action == "disassociate":
        fip = await _by_address(pool, ctx, msg.address)
        if fip["port_id"] is None or fip["port_device_id"] != msg.instance_uuid:
            raise errors.Conflict(f"Floating IP {msg.address} is not associated with instance {msg.instance_uuid}.",
                                  code="floatingip_not_associated")
        await floatingips.update_floatingip(pool, cells, ctx, str(fip["id"]), {"port_id": None})
        return m.FloatingIpReply()
    raise errors.InvalidInput(f"Unknown floating IP request {msg.action!r}.")


async def _reply(pool: Pool, ctx: RequestContext, rows: list[asyncpg.Record]) -> m.FloatingIpReply:
    """The rows as FloatingIpInfo, each with its external network's name (one query)."""
    net_ids = sorted({str(r["floating_network_id"]) for r in rows})
    names = {str(n["id"]): n["name"] for n in await networks.list_networks(
        pool, ctx, networks.NetworkFilters(ids=net_ids))} if net_ids else {}
    return m.FloatingIpReply(floating_ips=[m.FloatingIpInfo(
        id=str(r["id"]), address=ipam.host(r["floating_ip_address"]),
        pool=names.get(str(r["floating_network_id"])) or str(r["floating_network_id"]),
        fixed_address=None if r["fixed_ip_address"] is None else ipam.host(r["fixed_ip_address"]),
        instance_uuid=(r["port_device_id"] or None) if r["port_id"] is not None else None) for r in rows])


async def _pool_network(pool: Pool, ctx: RequestContext, name_or_id: str) -> str:
    """The id of the external network `name_or_id` names (by id when it is a uuid, as Nova
    looks pools up)."""
    by_id = parse_uuid(name_or_id)
    filters = (networks.NetworkFilters(ids=[by_id], external=True) if by_id
               else networks.NetworkFilters(names=[name_or_id], external=True))
    found = await networks.list_networks(pool, ctx, filters) if name_or_id else []
    if not found:
        raise errors.NotFound("Floating IP pool not found.", code="floating_ip_pool_not_found")
    if len(found) > 1:
        raise errors.InvalidInput(f"Multiple floating IP pools matches found for name '{name_or_id}'")
    return str(found[0]["id"])


async def _by_address(pool: Pool, ctx: RequestContext, address: str) -> asyncpg.Record:
    found = await floatingips.list_floatingips(pool, ctx, floatingips.FloatingIpFilters(addresses=[address]))
    if not found:
        raise errors.NotFound(f"Floating IP not found for address {address}.", code="floatingip_not_found")
    if len(found) > 1:
        raise errors.Conflict(f"Multiple floating IPs are found for address {address}.")
    return found[0]


async def _associate(pool: Pool, cells: Cells, ctx: RequestContext, msg: m.FloatingIpRequest) -> None:
    """The floating IP `msg.address` on the instance's port holding `msg.fixed_address`, or
    its first IPv4 address (Nova's choice); one associated elsewhere moves here."""
    mine = await ports.list_ports(pool, ctx, ports.PortFilters(device_ids=[msg.instance_uuid]))
    if not mine:
        raise errors.InvalidInput("Instance network is not ready yet")
    addresses = await ports.fixed_ips(pool, mine)
    fixed = [(str(p["id"]), ipaddress.ip_address(a["ip_address"])) for p in mine for a in addresses[str(p["id"])]]
    if not fixed:
        raise errors.InvalidInput("No fixed IPs associated to instance")
    if msg.fixed_address:
        wanted = ipaddress.ip_address(msg.fixed_address)
        chosen = [f for f in fixed if f[1] == wanted]
        if not chosen:
            raise errors.InvalidInput("Specified fixed address not assigned to instance")
    else:
        chosen = [f for f in fixed if f[1].version == 4]
        if not chosen:
            raise errors.InvalidInput(f"Unable to associate floating IP {msg.address} to any fixed IPs for instance "
                                      f"{msg.instance_uuid}. Instance has no fixed IPv4 addresses to associate.")
    port_id, address = chosen[0]
    fip = await _by_address(pool, ctx, msg.address)
    await floatingips.update_floatingip(pool, cells, ctx, str(fip["id"]),
                                        {"port_id": port_id, "fixed_ip_address": str(address)})
