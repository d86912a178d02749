"""Ports for instances, as the API and compute ask for them over the bus.

- validate: before a boot is accepted, every requested network/port must be usable by the
  instance's project (its own or shared networks, its own free ports).
- allocate: an instance gets all its ports, or none. It is idempotent: a per-instance
  advisory lock plus "ports with this device_id already exist" means a retried or duplicated
  request gets the same ports back, rebound to the new host. When every NIC is a new port on
  a whole network (most boots), the instances whose ports are asked for at once share one
  statement and transaction (sql/functions/network_allocate_ports_many.sql): their ports are
  made together, a set at a time, with the answers each would have got alone; a call that is
  refused or retried is answered alone (network_allocate_ports.sql). Ports named by id and
  fixed addresses take the general path below, one transaction per instance, which gives the
  same answers.
  The ports made for an instance join the security groups it asked for (by default the
  project's `default` group); ports the user made keep their own.
- deallocate: ports made for the instance are deleted; ports the user made are released.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from nova_async.common import errors
from nova_async.common.web import parse_uuid
from nova_async.db.coalesce import Coalesced
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.db.shared_read import SharedRead
from nova_async.network import ipam, networks, ports, security_groups
from nova_async.network import messages as m

Q = queries("network")
L3 = queries("l3")
# The common case's allocations, shared by the boots that reach it at once (one transaction).
# A call answered alone (refused, retried) is a subtransaction: past 64 in one transaction
# (PostgreSQL's cache of them per session), every other session's snapshot has to look them up
# while it runs.
ALLOCATE_PORTS = Coalesced(Q.allocate_ports, many=True, most=64)
NETWORK_TARGET = SharedRead(Q.network_target, many=True)   # a burst of boots names the same network
Db = Pool | asyncpg.Connection

DEVICE_OWNER = "compute:nova"


@dataclass(frozen=True)
class Target:
    """One NIC to be: a new port on `network` (address from `subnet`), or an existing `port`."""

    network: asyncpg.Record | dict  # at least id, project_id, shared (name, mtu: from network_target)
    subnet: asyncpg.Record | None = None
    fixed_ip: str | None = None
    port: asyncpg.Record | None = None


def _usable(row: asyncpg.Record | dict | None, project_id: str) -> bool:
    return row is not None and (row["project_id"] == project_id or row["shared"])


async def _network_target(db: Db, project_id: str, network_id: str, fixed_ip: str | None) -> Target:
    canonical = parse_uuid(network_id)
    rows = await NETWORK_TARGET(db, canonical) if canonical else []
    net = {"id": rows[0]["network_uuid"], "project_id": rows[0]["network_project_id"],
           "shared": rows[0]["network_shared"], "name": rows[0]["network_name"],
           "mtu": rows[0]["network_mtu"]} if rows else None
    if not _usable(net, project_id):
        raise networks.not_found(network_id)
    subnets = [r for r in rows if r["id"] is not None]
    if not subnets:
        raise errors.InvalidInput(f"Network {network_id} has no subnet, so an instance on it would "
                                  "get no address; add a subnet first.", code="network_requires_subnet")
    if fixed_ip is None:
        return Target(network=net, subnet=subnets[0])
    for s in subnets:
        try:
            addr = str(ipam.parse_address(fixed_ip, s["cidr"], "fixed ip"))
        except errors.InvalidInput:
            continue
        if await db.fetchval(Q.ip_taken, s["id"], addr):
            raise errors.Conflict(f"IP address {addr} already allocated in subnet {s['id']}.", code="ip_in_use")
        return Target(network=net, subnet=s, fixed_ip=addr)
    raise errors.InvalidInput(f"Fixed IP {fixed_ip} is not a usable address on network {network_id}.")


async def _port_target(db: Db, project_id: str, req: m.RequestedNetwork, instance_uuid: str | None) -> Target:
    assert req.port_id is not None
    canonical = parse_uuid(req.port_id)
    port = await db.fetchrow(Q.get_port, canonical) if canonical else None
    if port is None or port["project_id"] != project_id:
        raise ports.not_found(req.port_id)
    if port["device_id"] and port["device_id"] != instance_uuid:
        raise errors.Conflict(f"Port {req.port_id} is still in use by {port['device_id']}.", code="port_in_use")
    if req.network_id and parse_uuid(req.network_id) != str(port["network_id"]):
        raise errors.InvalidInput(f"Port {req.port_id} is not on network {req.network_id}.")
    net = await db.fetchrow(Q.get_network, port["network_id"])
    return Target(network=net, port=port)


async def _resolve(db: Db, project_id: str, requested: Sequence[m.RequestedNetwork],
                   instance_uuid: str | None = None) -> list[Target]:
    """What each requested NIC is to be. Read from the pool (a check before a boot is accepted),
    each question is a statement of its own; on a connection, in its transaction."""
    if any(r.network_id == "none" for r in requested):
        # Nova's `"networks": "none"`: the instance is to have no NIC at all.
        if len(requested) > 1:
            raise errors.InvalidInput("'none' cannot be combined with other requested networks.")
        return []
    requested = [r for r in requested if r.network_id != "auto"]
    if not requested:
        # Nothing named ("auto" or no "networks"): the project's only network, if it has one.
        usable = await networks.usable_networks(db, project_id)
        if len(usable) > 1:
            raise errors.Conflict("Multiple possible networks found, use a Network ID to be more specific.",
                                  code="network_ambiguous")
        return [await _network_target(db, project_id, str(n["id"]), None) for n in usable]
    targets = []
    for req in requested:
        if req.port_id:
            targets.append(await _port_target(db, project_id, req, instance_uuid))
        elif req.network_id:
            targets.append(await _network_target(db, project_id, req.network_id, req.fixed_ip))
        else:
            raise errors.InvalidInput("Each requested network needs a network id or a port id.")
    return targets


async def validate(pool: Pool, project_id: str, requested: Sequence[m.RequestedNetwork]) -> None:
    await _resolve(pool, project_id, requested)


# What a refusal raised by network_allocate_ports (sql/functions/) stands for, by its DETAIL.
_REFUSALS: dict[str, type[errors.NovaAsyncError]] = {
    "network_not_found": errors.NotFound, "network_requires_subnet": errors.InvalidInput,
    "network_ambiguous": errors.Conflict, "subnet_not_found": errors.Conflict,
    "ip_exhausted": errors.Conflict, "mac_generation_failed": errors.Conflict}


def _whole_networks(requested: Sequence[m.RequestedNetwork]) -> list[str] | None | bool:
    """The networks to put a new port on each, when that is all the request asks: canonical
    uuids, or None for "the project's only network"; False when it asks more (a port, a fixed
    address, "none", a malformed id), which the general path answers."""
    wanted = []
    for r in requested:
        if r.port_id or r.fixed_ip or r.network_id == "none":
            return False
        if r.network_id == "auto":
            continue
        canonical = parse_uuid(r.network_id) if r.network_id else None  # no id: the general path says so
        if canonical is None:
            return False
        wanted.append(canonical)
    return wanted or None


async def allocate(pool: Pool, msg: m.AllocatePorts) -> list[m.Vif]:
    wanted = _whole_networks(msg.requested)
    if wanted is not False:  # the common case, in one statement with the others arriving now
        networks_text = None if wanted is None else "{" + ",".join(wanted) + "}"  # canonical uuids
        rows = await ALLOCATE_PORTS(pool, msg.instance_uuid, msg.host, msg.project_id, networks_text)
        if rows and rows[0]["message"] is not None:
            refusal = _REFUSALS.get(rows[0]["refusal"] or "")
            if refusal is None:
                raise errors.NovaAsyncError(f"network_allocate_ports: {rows[0]['message']}")
            raise refusal(rows[0]["message"], code=rows[0]["refusal"])
        if rows:
            # A statement of its own after the ports' (the coalesced one is shared with other
            # boots). Until it lands the new ports are in no group, which lets nothing in; and
            # the guest is started only once this call has answered.
            groups = await security_groups.for_instance(pool, msg.project_id, msg.security_groups)
            await security_groups.attach_to_instance(pool, msg.instance_uuid, groups)
        return _vifs(rows)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(Q.lock_device, msg.instance_uuid)
        groups = await security_groups.for_instance(conn, msg.project_id, msg.security_groups)
        existing = await conn.fetch(Q.rebind_device_vifs, msg.instance_uuid, msg.host)
        if existing:
            await security_groups.attach_to_instance(conn, msg.instance_uuid, groups)
            # ports the instance had before (a reschedule, a move): a floating IP may be on them
            return _vifs(existing, await _floating_ips(conn, msg.instance_uuid))
        targets = await _resolve(conn, msg.project_id, msg.requested, msg.instance_uuid)
        locked = await ipam.lock_subnets(conn, [t.subnet["id"] for t in targets if t.subnet is not None])
        known: list[dict] | None = []  # what device_vifs would read, while every port is a new one
        for index, t in enumerate(targets):
            if t.port is not None:
                adopted = await conn.fetchrow(Q.adopt_port, t.port["id"], msg.instance_uuid, DEVICE_OWNER,
                                              msg.host, index)
                if adopted is None:
                    raise errors.Conflict(f"Port {t.port['id']} was taken meanwhile.", code="port_in_use")
                known = None
                continue
            assert t.subnet is not None
            subnet = locked[str(t.subnet["id"])]
            port = await ports.make_port(conn, ports.NewPort(
                network=t.network, project_id=msg.project_id, subnets=[(subnet, t.fixed_ip)],
                device_id=msg.instance_uuid, device_owner=DEVICE_OWNER, host=msg.host, auto_created=True,
                device_index=index))
            if known is not None and port.get("address") is not None and "name" in t.network:
                known.append({"port_id": port["id"], "network_id": port["network_id"],
                              "mac_address": port["mac_address"], "network_name": t.network["name"],
                              "mtu": t.network["mtu"], "ip_address": port["address"], "subnet_id": subnet["id"],
                              "cidr": subnet["cidr"], "gateway_ip": subnet["gateway_ip"],
                              "ip_version": subnet["ip_version"]})
            else:
                known = None
        if targets:
            await security_groups.attach_to_instance(conn, msg.instance_uuid, groups)
        # Ports made here are known without reading them back (the subnet stays locked until
        # the commit: the shorter that is, the sooner the next instance gets its address).
        return _vifs(known) if known is not None else await vifs(conn, msg.instance_uuid)


async def deallocate(pool: Pool, instance_uuid: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(Q.lock_device, instance_uuid)
        await conn.execute(Q.delete_device_ports, instance_uuid)
        await conn.execute(Q.release_device_ports, instance_uuid)


async def vifs(db: asyncpg.Connection | Pool, instance_uuid: str) -> list[m.Vif]:
    """The instance's ports as compute needs them, in NIC order, with their floating IPs."""
    return _vifs(await db.fetch(Q.device_vifs, instance_uuid), await _floating_ips(db, instance_uuid))


async def _floating_ips(db: asyncpg.Connection | Pool, instance_uuid: str) -> dict[str, list[str]]:
    """The floating IPs of the instance's ports, by port id."""
    floating: dict[str, list[str]] = {}
    for r in await db.fetch(L3.instance_floating_ips, instance_uuid):
        floating.setdefault(str(r["port_id"]), []).append(r["address"])
    return floating


def _vifs(rows: list[asyncpg.Record] | list[dict], floating: dict[str, list[str]] | None = None) -> list[m.Vif]:
    ips: dict[str, list[m.IpInfo]] = {}
    for r in rows:
        found = ips.setdefault(str(r["port_id"]), [])
        if r["ip_address"] is not None:
            found.append(m.IpInfo(address=ipam.host(r["ip_address"]), version=r["ip_version"],
                                  subnet_id=str(r["subnet_id"]), cidr=str(r["cidr"]),
                                  gateway=None if r["gateway_ip"] is None else ipam.host(r["gateway_ip"])))
    out, seen = [], set()
    for r in rows:
        port_id, network_id = str(r["port_id"]), str(r["network_id"])
        if port_id in seen:
            continue
        seen.add(port_id)
        out.append(m.Vif(port_id=port_id, network_id=network_id, network_name=r["network_name"],
                         mac_address=str(r["mac_address"]), ips=ips[port_id], mtu=r["mtu"],
                         bridge="brq" + network_id[:11], tap="tap" + port_id[:11],
                         floating_ips=(floating or {}).get(port_id, [])))
    return out
