"""Security groups: who may see, make, change and delete them, and which ports are in them.

A group belongs to one project and is seen by that project only (an admin sees all). Each
project has one `default` group, made the first time the project needs one (its first
listing of groups, its first port, its first server) with Neutron's default rules; the unique
partial index security_groups_one_default makes two first requests agree on one. Any other
new group comes with Neutron's two egress rules (anywhere, IPv4 and IPv6). Groups and
rules count against the project's quota (network/quotas.py), counted under a per-project
lock so that two creators cannot both take the last one. The data plane enforces what these
tables say (dataplane/); this module only keeps them."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.coalesce import Coalesced
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.db.shared_read import SharedRead
from nova_async.network import networks, quotas

Q = queries("security_groups")
# Every boot asks for its project's default group (when it names none, as most do) and puts
# its ports in groups: a burst of boots shares these statements.
DEFAULT_GROUP = SharedRead(Q.default_group)
ATTACH = Coalesced(Q.attach_device_groups)

Db = Pool | asyncpg.Connection

DEFAULT = "default"


@dataclass(frozen=True)
class GroupFilters:
    ids: list[str] | None = None
    names: list[str] | None = None
    project_ids: list[str] | None = None
    descriptions: list[str] | None = None


def not_found(group_id: str) -> errors.NotFound:
    return errors.NotFound(f"Security group {group_id} does not exist", code="security_group_not_found")


def _may_see(row: asyncpg.Record, ctx: RequestContext) -> bool:
    return ctx.is_admin or row["project_id"] == ctx.project_id


async def ensure_default(db: Db, project_id: str) -> str:
    """The id of the project's `default` group, made now if it has none."""
    row = await DEFAULT_GROUP(db, project_id)
    found = None if row is None else row["id"]
    if found is None:
        # Another request may make it at the same moment: then this one inserts nothing and
        # reads the winner's (committed by then: the insert waited for it).
        found = await db.fetchval(Q.make_default_group, project_id) or await db.fetchval(Q.default_group,
                                                                                        project_id)
    return str(found)


async def check_quota(conn: asyncpg.Connection, project_id: str, resource: str, adding: int = 1) -> None:
    """OverQuota (409, as Neutron) unless `adding` more of `resource` fit. The caller's
    transaction holds the project's lock from here to its commit."""
    await conn.execute(Q.lock_project_groups, project_id)
    used = (await conn.fetchrow(Q.project_counts, project_id))[resource]
    limit = quotas.DEFAULTS[resource]
    if 0 <= limit < used + adding:
        raise errors.Conflict(f"Quota exceeded for resources: ['{resource}'].", code="over_quota")


async def get_group(db: Db, ctx: RequestContext, group_id: str) -> asyncpg.Record:
    canonical = parse_uuid(group_id)
    row = await db.fetchrow(Q.get_group, canonical) if canonical else None
    if row is None or not _may_see(row, ctx):
        raise not_found(group_id)
    return row


async def list_groups(db: Db, ctx: RequestContext, f: GroupFilters) -> list[asyncpg.Record]:
    await ensure_default(db, ctx.project_id)  # a project's first listing shows it its default group
    ids = None if f.ids is None else [i for i in map(parse_uuid, f.ids) if i]
    return await db.fetch(Q.list_groups, ctx.is_admin, ctx.project_id, ids, f.names, f.project_ids,
                          f.descriptions)


async def rules_of(db: Db, groups: list[asyncpg.Record]) -> dict[str, list[asyncpg.Record]]:
    """Each group's rules, in one query for a whole listing."""
    out: dict[str, list[asyncpg.Record]] = defaultdict(list)
    for r in await db.fetch(Q.group_rules, [g["id"] for g in groups]):
        out[str(r["security_group_id"])].append(r)
    return out


def _check_name(name: str | None) -> None:
    if name is not None and name.lower() == DEFAULT:
        raise errors.Conflict("Default security group already exists.",
                              code="security_group_default_exists")


async def create_group(pool: Pool, ctx: RequestContext, body: dict[str, Any]) -> asyncpg.Record:
    project = networks.owner_project(ctx, body)
    _check_name(body.get("name"))
    async with pool.acquire() as conn, conn.transaction():
        # A project's first group comes with its default one, as in Neutron.
        await ensure_default(conn, project)
        await check_quota(conn, project, "security_group")
        return await conn.fetchrow(Q.insert_group, str(uuid.uuid4()), project, body.get("name", ""),
                                   body.get("description", ""), body.get("stateful", True))


async def update_group(pool: Pool, ctx: RequestContext, group_id: str, body: dict[str, Any]) -> asyncpg.Record:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_group(conn, ctx, group_id)
        row = await conn.fetchrow(Q.lock_group, row["id"])
        if row["is_default"] and body.get("name", DEFAULT) != DEFAULT:
            raise errors.Conflict("Updating default security group not allowed.",
                                  code="security_group_cannot_update_default")
        if not row["is_default"]:
            _check_name(body.get("name"))
        stateful = body.get("stateful")
        if stateful is not None and stateful != row["stateful"] and await conn.fetchval(Q.group_in_use, row["id"]):
            raise in_use(group_id)
        return await conn.fetchrow(Q.update_group, row["id"], body.get("name"), body.get("description"), stateful)


def in_use(group_id: str) -> errors.Conflict:
    return errors.Conflict(f"Security Group {group_id} in use.", code="security_group_in_use")


async def delete_group(pool: Pool, ctx: RequestContext, group_id: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await get_group(conn, ctx, group_id)
        if row["is_default"] and not ctx.is_admin:
            raise errors.Conflict("Insufficient rights for removing default security group.",
                                  code="security_group_cannot_remove_default")
        await conn.fetchrow(Q.lock_group, row["id"])
        if await conn.fetchval(Q.group_in_use, row["id"]):
            raise in_use(group_id)
        try:
            await conn.execute(Q.delete_group, row["id"])
        except asyncpg.ForeignKeyViolationError:  # a port joined it meanwhile
            raise in_use(group_id) from None


# -- ports and instances

async def resolve(db: Db, project_id: str, wanted: list[str]) -> list[str]:
    """The ids of the project's groups `wanted` names (each by name or id; `default` is made
    if need be), in that order, each once. NotFound names the first unknown one; Conflict
    when a name fits more than one group."""
    found: dict[str, list[str]] = defaultdict(list)
    if DEFAULT in wanted:
        # No other group may be called `default` (create and update refuse the name), so
        # most boots are answered by this one query.
        found[DEFAULT].append(await ensure_default(db, project_id))
    others = [w for w in wanted if w != DEFAULT]
    for r in await db.fetch(Q.groups_by_name_or_id, project_id, others) if others else []:
        found[r["wanted"]].append(str(r["id"]))
    ids = []
    for w in wanted:
        matches = found.get(w, [])
        if not matches:
            raise errors.NotFound(f"Unable to find security_group with name or id '{w}'",
                                 code="security_group_not_found")
        by_id = [m for m in matches if m == w.lower()]
        if len(matches) > 1 and not by_id:
            raise errors.Conflict(f"Multiple security groups found matching '{w}'. Use an ID to be more specific.",
                                  code="security_group_ambiguous")
        ids.append(by_id[0] if by_id else matches[0])
    return list(dict.fromkeys(ids))


async def groups_for_port(conn: asyncpg.Connection, ctx: RequestContext, project_id: str,
                          body: dict[str, Any]) -> list[str]:
    """The groups a new port (of project_id) is to be in: those the body names (ids, which
    the port's project must own), else the project's default group; none without port
    security, or for the network's own ports (routers, DHCP), as Neutron."""
    enabled = body.get("port_security_enabled", True)
    named = body.get("security_groups")
    if not enabled:
        if named:
            raise errors.InvalidInput("Port security must be enabled and port must have an IP address in "
                                      "order to use security groups.", code="port_security_required")
        return []
    if named is None:
        if body.get("device_owner", "").startswith("network:"):
            return []
        return [await ensure_default(conn, project_id)]
    ids = []
    for group_id in dict.fromkeys(named):
        row = await get_group(conn, ctx, group_id)
        if row["project_id"] != project_id and not ctx.is_admin:
            raise not_found(group_id)
        ids.append(str(row["id"]))
    return ids


async def join_port(conn: asyncpg.Connection, port_id: str, group_ids: list[str], enabled: bool) -> None:
    """Port `port_id` in exactly the groups `group_ids` (none: in no group)."""
    if not enabled:
        await conn.execute(Q.disable_port_security, port_id)
    try:
        await conn.execute(Q.set_port_groups, port_id, group_ids)
    except asyncpg.ForeignKeyViolationError:  # deleted since it was looked up
        raise not_found(group_ids[0]) from None


async def port_groups(db: Db, ports: list[asyncpg.Record]) -> dict[str, list[str]]:
    """Each port's group ids, in one query for a whole listing."""
    out: dict[str, list[str]] = defaultdict(list)
    for r in await db.fetch(Q.port_groups, [p["id"] for p in ports]):
        out[str(r["port_id"])].append(str(r["id"]))
    return out


async def for_instance(db: Db, project_id: str, wanted: list[str] | None) -> list[str]:
    """The groups an instance's new ports join: those it asked for (ids, resolved when the
    boot was accepted), or the project's default group when it asked none (None)."""
    return wanted if wanted is not None else [await ensure_default(db, project_id)]


async def attach_to_instance(db: Db, instance_uuid: str, ids: list[str]) -> None:
    """The groups `ids` on the ports made for the instance that are in none yet. Idempotent,
    like the allocation before it."""
    if ids:
        await ATTACH(db, instance_uuid, "{" + ",".join(ids) + "}")


async def instance_groups(db: Db, instance_uuids: list[str]) -> dict[str, list[asyncpg.Record]]:
    """The groups on each instance's ports (id, name), each once, oldest first."""
    out: dict[str, list[asyncpg.Record]] = defaultdict(list)
    for r in await db.fetch(Q.device_groups, instance_uuids):
        out[r["device_id"]].append(r)
    return out


async def change_instance(pool: Pool, ctx: RequestContext, project_id: str, instance_uuid: str, group: str,
                          add: bool) -> None:
    """Nova's addSecurityGroup / removeSecurityGroup: the group (by name or id) on every port
    of the instance, or on none of them."""
    async with pool.acquire() as conn, conn.transaction():
        [group_id] = await resolve(conn, project_id, [group])
        ports = await conn.fetch(Q.device_ports, [instance_uuid])
        if not ports:
            raise errors.NotFound(f"Instance {instance_uuid} has no port to put security group {group} on.",
                                  code="security_group_not_found")
        have = {str(r["id"]) for r in (await instance_groups(conn, [instance_uuid])).get(instance_uuid, [])}
        if add:
            if not all(p["port_security_enabled"] for p in ports):
                raise errors.InvalidInput("Network requires port_security_enabled and subnet associated in "
                                          "order to apply security groups.", code="security_group_cannot_apply")
            if group_id in have:
                raise errors.InvalidInput(f"Security group {group} is already associated with the instance "
                                          f"{instance_uuid}", code="security_group_exists_for_instance")
            await conn.execute(Q.add_device_group, instance_uuid, group_id)
        else:
            if group_id not in have:
                raise errors.InvalidInput(f"Security group {group} not associated with the instance "
                                          f"{instance_uuid}", code="security_group_not_exists_for_instance")
            await conn.execute(Q.remove_device_group, instance_uuid, group_id)
