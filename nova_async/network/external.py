"""The external network: where routers' gateways and floating IPs take their addresses.

Made once per database, on the first start of a process that runs the network role
(service.py), from settings `[network] external_*`: an admin-owned `router:external`
network (every project sees it, as Neutron shows external networks) with one subnet whose
gateway is the host (or the site's router) and whose other addresses are for routers and
floating IPs. It is flat on physical network `external` when `external_interface` plugs a
NIC into it, local otherwise. Once made it is the operator's: renaming or deleting it is
not undone at the next start."""

from __future__ import annotations

import uuid

import asyncpg
import structlog

from nova_async.config import NetworkSettings
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.network import ipam, providers

log = structlog.get_logger("network")
Q = queries("l3")
NQ = queries("network")

STEP = "external-network"


async def ensure(pool: Pool, settings: NetworkSettings) -> asyncpg.Record | None:
    """Make the external network unless this database already had its first start; the
    network made, or None. Two processes starting together make it once."""
    if not settings.external_network:
        return None
    plan = ipam.plan_subnet(settings.external_cidr, 6 if ":" in settings.external_cidr else 4,
                            settings.external_gateway or ipam.DEFAULT_GATEWAY)
    network_type, physnet = (("flat", providers.EXTERNAL_PHYSNET) if settings.external_interface
                             else ("local", None))
    async with pool.acquire() as conn, conn.transaction():
        if not await conn.fetchval(Q.claim_bootstrap_step, STEP):
            return None
        # Keystone's admin project when the identity role made one; noauth's name otherwise.
        project = await conn.fetchval(Q.admin_project) or "admin"
        net = await conn.fetchrow(NQ.insert_network, str(uuid.uuid4()), settings.external_network,
                                  "External network: routers' gateways and floating IPs", project, True, False,
                                  True, 1500, network_type, physnet)
        subnet = await conn.fetchrow(
            NQ.insert_subnet, str(uuid.uuid4()), net["id"], project, f"{settings.external_network}-subnet", "",
            plan.cidr, plan.cidr.version, None if plan.gateway is None else str(plan.gateway), plan.pools_json(),
            False, [], [])
    log.info("made the external network", name=settings.external_network, network_id=str(net["id"]),
             cidr=str(plan.cidr), gateway=subnet["gateway_ip"] and ipam.host(subnet["gateway_ip"]),
             type=network_type)
    return net
