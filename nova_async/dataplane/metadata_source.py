"""Who is asking the metadata service, and what their guest is told.

A request is tied to an instance by two things only: the network whose namespace the
listening socket lives in, and the TCP peer address. The port on that network holding that
address names the instance (its device_id), which must exist in its cell and not be
deleted. Nothing the guest sends counts — no X-Forwarded-For, no X-Instance-ID: a guest
could write anything there, and on a shared network it would read another's user data.

Each request reads the database afresh (a few indexed queries), so a change of key,
metadata or floating IP is seen on the next request, with no cache to invalidate."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import uuid as uuidlib
from typing import Any

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.common.instance_metadata import InstanceFacts, Nic
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

log = structlog.get_logger("dataplane.metadata")
Q = queries("dataplane_metadata")


class Requesters:
    def __init__(self, pool: Pool, cells: Cells, dns_servers: tuple[str, ...] = ()) -> None:
        self.pool = pool
        self.cells = cells
        self.dns_servers = dns_servers   # what DHCP hands out when a subnet names none

    async def facts(self, network_id: str, address: str) -> InstanceFacts:
        """The instance whose port on `network_id` holds `address`; NotFound for anyone else."""
        unknown = errors.NotFound(f"No instance on this network has the address {address}.")
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise unknown from None
        device_id = await self.pool.fetchval(Q.requester, network_id, address)
        try:
            instance_uuid = str(uuidlib.UUID(device_id or ""))
        except ValueError:   # no port, or one a router or DHCP server holds
            raise unknown from None
        cell = await self.cells.of_instance(instance_uuid)
        row = await cell.pool.fetchrow(Q.instance, instance_uuid) if cell else None
        if row is None:
            raise unknown
        async with self.pool.acquire() as conn:
            nic_rows = await conn.fetch(Q.nics, instance_uuid)
            extras = await conn.fetchrow(Q.extras, instance_uuid, row["user_id"], row["key_name"] or "")
        return facts(row, nic_rows, extras, self.dns_servers)


def facts(row: asyncpg.Record | dict[str, Any], nic_rows: list[Any], extras: asyncpg.Record | dict[str, Any],
          dns_servers: tuple[str, ...] = ()) -> InstanceFacts:
    """An instance row, its NIC rows and its extras (sql/queries/dataplane_metadata.sql) as
    the facts its guest is told; the same choices as compute's drive_content (build.py)."""
    key_name = row["key_name"] or "default"
    return InstanceFacts(
        uuid=row["uuid"], name=row["display_name"], project_id=row["project_id"],
        hostname=row["hostname"] or "", availability_zone=row["availability_zone"] or "nova",
        launch_index=row["launch_index"] or 0, user_data=_user_data(row),
        public_keys={key_name: row["key_data"]} if row["key_data"] else {},
        nics=_nics(row["uuid"], nic_rows, dns_servers),
        meta={str(k): str(v) for k, v in (row["metadata"] or {}).items()},
        key_type=extras["key_type"] or "ssh", reservation_id=row["reservation_id"] or "",
        instance_type=row["flavor_name"] or "", image_ref=row["image_ref"] or "",
        security_groups=tuple(extras["security_groups"] or ()),
        floating_ips=tuple(extras["floating_ips"] or ()))


def _user_data(row: Any) -> bytes | None:
    if row["user_data"] is None:
        return None
    try:  # the API checked it is base64 and kept it as it came
        return base64.b64decode(row["user_data"])
    except (binascii.Error, ValueError):
        log.warning("the instance's stored user_data is not base64; none is served", instance_uuid=row["uuid"])
        return None


def _nics(instance_uuid: str, rows: list[Any], dns_servers: tuple[str, ...]) -> tuple[Nic, ...]:
    """One NIC per port, from its first IPv4 address (as the config drive does)."""
    nics: list[Nic] = []
    seen: set[str] = set()
    for r in rows:
        if r["port_id"] in seen:
            continue
        seen.add(r["port_id"])
        try:
            nics.append(Nic(
                port_id=r["port_id"], mac=r["mac_address"], ip_address=r["ip_address"],
                netmask=str(ipaddress.IPv4Network(r["cidr"]).netmask), network_id=r["network_id"],
                gateway=r["gateway_ip"] or "", mtu=r["mtu"], dhcp=r["enable_dhcp"],
                dns=tuple(str(d) for d in r["dns_nameservers"] or ()) or dns_servers,
                routes=tuple((str(h["destination"]), str(h["nexthop"])) for h in r["host_routes"] or ())))
        except (errors.InvalidInput, ValueError, KeyError, TypeError) as exc:
            # One odd port must not cost the guest everything else it is told.
            log.warning("a port is left out of network_data", instance_uuid=instance_uuid,
                        port_id=r["port_id"], error=str(exc))
    return tuple(nics)
