"""DHCP ports: the address a host's DHCP server answers from, on each network it serves.

Neutron's way: the DHCP server is a port like any other (device_owner `network:dhcp`), so
its address comes from IPAM and can never be handed to a guest. One port per network and
data-plane host (device_id `dhcp-<host>`), with an address on every IPv4 subnet of the
network that has DHCP on (the data plane serves DHCPv4 only, so far). The data plane asks for it (EnsureDhcpPort) on each pass; the answer is
idempotent: the same port, its addresses completed or trimmed to the subnets that have
DHCP now, or no port (deleted) when none has.

A subnet or network being deleted takes its DHCP addresses and ports with it (Neutron does
the same): they are the service's own, not the user's, and must not make the delete fail."""

from __future__ import annotations

import asyncpg

from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network import ipam, ports
from nova_async.network import messages as m

Q = queries("network")
DQ = queries("network_dhcp")

DEVICE_OWNER = "network:dhcp"


def device_id(host: str) -> str:
    return f"dhcp-{host}"


async def ensure(pool: Pool, network_id: str, host: str) -> list[m.Vif]:
    """The DHCP port of `host` on the network, as it should be now ([] when none is needed)."""
    async with pool.acquire() as conn, conn.transaction():
        subnets = await conn.fetch(Q.network_subnets, network_id)
        # Subnets, then the network: the order deletes and allocations take them in.
        locked = await ipam.lock_subnets(conn, [s["id"] for s in subnets])
        net = await conn.fetchrow(Q.lock_network, network_id)
        if net is None:
            return []
        port = await conn.fetchrow(DQ.dhcp_port, network_id, device_id(host))
        wanted = [locked[str(s["id"])] for s in subnets if s["enable_dhcp"] and s["ip_version"] == 4]
        if not wanted:
            if port is not None:
                await conn.execute(DQ.dhcp_delete_port, port["id"])
            return []
        if port is None:
            port = await ports.make_port(conn, ports.NewPort(
                network=net, project_id=net["project_id"], subnets=[(s, None) for s in wanted],
                device_id=device_id(host), device_owner=DEVICE_OWNER, host=host))
        else:
            have = {str(r["subnet_id"]) for r in await conn.fetch(DQ.dhcp_port_ips, port["id"])}
            for s in wanted:
                if str(s["id"]) not in have:
                    await ipam.allocate(conn, s, str(port["id"]))
            for subnet_id in have - {str(s["id"]) for s in wanted}:
                await conn.execute(DQ.dhcp_release_ip, port["id"], subnet_id)
        by_id = {str(s["id"]): s for s in subnets}
        ips = [m.IpInfo(address=ipam.host(r["ip_address"]), version=by_id[str(r["subnet_id"])]["ip_version"],
                        subnet_id=str(r["subnet_id"]), cidr=str(by_id[str(r["subnet_id"])]["cidr"]),
                        gateway=None if by_id[str(r["subnet_id"])]["gateway_ip"] is None
                        else ipam.host(by_id[str(r["subnet_id"])]["gateway_ip"]))
               for r in await conn.fetch(DQ.dhcp_port_ips, port["id"])]
        port_id = str(port["id"])
        return [m.Vif(port_id=port_id, network_id=str(net["id"]), network_name=net["name"],
                      mac_address=str(port["mac_address"]), ips=ips, mtu=net["mtu"],
                      bridge="brq" + str(net["id"])[:11], tap="tap" + port_id[:11])]


async def release_subnet(conn: asyncpg.Connection, subnet_id: object) -> None:
    """In a subnet delete's transaction, with the subnet locked: the DHCP addresses on it go.
    (A DHCP port left with no address is deleted by its host's next EnsureDhcpPort.)"""
    await conn.execute(DQ.dhcp_release_subnet, subnet_id)


async def release_network(conn: asyncpg.Connection, network_id: object) -> None:
    """In a network delete's transaction, with its subnets and itself locked: its DHCP ports go."""
    await conn.execute(DQ.dhcp_delete_network_ports, network_id)
