"""Changing a port (PUT /v2.0/ports/{id}), as Neutron does.

Everything happens in one transaction: the network's subnets are row-locked (in id order,
as every allocation takes them) before the port's own row, then the port's addresses are
replaced, its security groups rewritten and its row updated. Addresses the request still
lists are kept, the rest released, new ones allocated; the primary key of ip_allocations
stays the arbiter of who holds an address.

Port security ties three attributes together, with Neutron's answers: security groups need
port security and an address (naming groups without them: 400
PortSecurityAndIPRequiredForSecurityGroups; taking away port security or the last address
while groups remain: 409 PortSecurityPortHasSecurityGroup), and allowed address pairs need
port security (409 AddressPairAndPortSecurityRequired). Neutron's policy lets only an admin
change `binding:host_id` and `mac_address`, and only the network's owner (or an admin)
change `port_security_enabled` and `allowed_address_pairs`; a bound port keeps its MAC."""

from __future__ import annotations

from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network import ipam, networks, ports, security_groups

Q = queries("network")

def check_group_ids(ids: list[str]) -> list[str]:
    out = []
    for given in ids:
        canonical = parse_uuid(given)
        if canonical is None:
            raise errors.InvalidInput(f"Invalid input for security_groups: '{given}' is not a valid UUID.")
        if canonical not in out:
            out.append(canonical)
    return out


def _group_not_found(group_id: str) -> errors.NotFound:
    return errors.NotFound(f"Security group {group_id} does not exist", code="security_group_not_found")


async def update_port(pool: Pool, ctx: RequestContext, port_id: str, body: dict[str, Any]) -> asyncpg.Record:
    pairs = ports.check_address_pairs(body["allowed_address_pairs"]) if "allowed_address_pairs" in body else None
    groups = check_group_ids(body["security_groups"]) if "security_groups" in body else None
    async with pool.acquire() as conn, conn.transaction():
        seen = await ports.get_port(conn, ctx, port_id)
        _authorize(ctx, seen, body)
        if "fixed_ips" in body:
            subnets = await conn.fetch(Q.network_subnets, seen["network_id"])
            wanted = [(ports.subnet_for(subnets, e, str(seen["network_id"])), e.get("ip_address"))
                      for e in body["fixed_ips"]]
            locked = await ipam.lock_subnets(conn, [s["id"] for s in subnets])
        row = await conn.fetchrow(Q.lock_port, seen["id"])
        if row is None:  # deleted since we read it
            raise ports.not_found(port_id)
        if "fixed_ips" in body:
            await _replace_addresses(conn, row, [(locked[str(s["id"])], ip) for s, ip in wanted])

        old_mac = str(row["mac_address"])
        mac = body.get("mac_address", old_mac).lower()
        if mac != old_mac and row["binding_host"]:
            raise errors.Conflict(f"Unable to complete operation on port {port_id}, port is already bound, "
                                  f"port type: bridge, old_mac {old_mac}, new_mac {mac}.", code="port_bound")
        security = body.get("port_security_enabled", row["port_security_enabled"])
        if groups is not None:
            visible = {str(r["id"]) for r in await conn.fetch(Q.visible_security_groups, ctx.is_admin,
                                                                   ctx.project_id, groups)}
            for group in groups:
                if group not in visible:
                    raise _group_not_found(group)
            final_groups = groups
        else:
            final_groups = (await security_groups.port_groups(conn, [row]))[str(row["id"])]
        if {"port_security_enabled", "security_groups", "fixed_ips"} & body.keys() and final_groups:
            has_address = bool(await conn.fetch(Q.port_ips, [row["id"]]))
            if not (security and has_address):
                if groups:
                    raise errors.InvalidInput("Port security must be enabled and port must have an IP address "
                                              "in order to use security groups.",
                                              code="port_security_required_for_groups")
                raise errors.Conflict("Port has security group associated. Cannot disable port security or IP "
                                      "address until security group is removed.", code="port_security_has_groups")
        final_pairs = ports.with_macs(pairs, mac) if pairs is not None else row["allowed_address_pairs"]
        if final_pairs and not security:
            raise errors.Conflict("Port Security must be enabled in order to have allowed address pairs on a port.",
                                  code="address_pair_needs_port_security")

        host = body.get("binding:host_id", row["binding_host"])
        status = row["status"] if host == row["binding_host"] else ("ACTIVE" if host else "DOWN")
        try:
            updated = await conn.fetchrow(
                Q.update_port, row["id"], body.get("name", row["name"]), body.get("description", row["description"]),
                body.get("admin_state_up", row["admin_state_up"]), body.get("device_id", row["device_id"]),
                body.get("device_owner", row["device_owner"]), host, status, mac, security, final_pairs)
        except asyncpg.UniqueViolationError:
            raise errors.Conflict(f"Unable to complete operation for network {row['network_id']}. "
                                  f"The mac address {mac} is in use.", code="mac_in_use") from None
        if groups is not None:   # a group deleted since we saw it: 404, as for an unknown one
            await security_groups.join_port(conn, row["id"], groups, enabled=True)
        return updated


def _authorize(ctx: RequestContext, port: asyncpg.Record, body: dict[str, Any]) -> None:
    """Neutron's attribute policies; whoever may see the port may change the rest of it."""
    network_owner = ctx.is_admin or port["network_project_id"] == ctx.project_id
    for attr in ("binding:host_id", "mac_address"):
        if attr in body and not ctx.is_admin:
            raise networks.not_allowed(f"update_port:{attr}")
    for attr in ("port_security_enabled", "allowed_address_pairs"):
        if attr in body and not network_owner:
            raise networks.not_allowed(f"update_port:{attr}")
    if body.get("device_owner", "").startswith("network:") and not network_owner:
        raise networks.not_allowed("update_port:device_owner")


async def _replace_addresses(conn: asyncpg.Connection, port: asyncpg.Record,
                             wanted: list[tuple[asyncpg.Record, str | None]]) -> None:
    """Make the port's addresses exactly `wanted` (subnet, address or None for any), keeping
    those it already has. The caller holds the rows of the subnets involved."""
    port_id = str(port["id"])
    current = [(str(r["subnet_id"]), ipam.host(r["ip_address"])) for r in await conn.fetch(Q.port_ips, [port["id"]])]
    keep: set[tuple[str, str]] = set()
    named: set[tuple[str, str]] = set()
    new: list[tuple[asyncpg.Record, str | None]] = []
    for subnet, address in wanted:
        if address is None:
            continue
        key = (str(subnet["id"]), str(ipam.parse_address(address, subnet["cidr"], "fixed ip")))
        if key in named:
            raise errors.InvalidInput(f"Invalid input: fixed ip {key[1]} is listed twice.")
        named.add(key)
        if key in current:
            keep.add(key)
        else:
            new.append((subnet, key[1]))
    for subnet, address in wanted:
        if address is not None:
            continue
        # A subnet named without an address keeps one the port already has there, as in Neutron.
        spare = next((c for c in current if c[0] == str(subnet["id"]) and c not in keep), None)
        if spare is not None:
            keep.add(spare)
        else:
            new.append((subnet, None))
    for subnet_id, address in current:
        if (subnet_id, address) not in keep:
            await conn.execute(Q.release_port_ip, port["id"], subnet_id, address)
    for subnet, address in new:
        try:
            await ipam.allocate(conn, subnet, port_id, address)
        except asyncpg.UniqueViolationError:
            raise errors.Conflict(f"IP address {address} already allocated in subnet {subnet['id']}.",
                                  code="ip_in_use") from None
