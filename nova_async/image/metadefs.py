"""The metadata definitions catalog (Glance's /v2/metadefs): namespaces of property, object
and tag definitions that tell clients (Horizon, above all) which keys they may set on an
image, a flavor or a volume, and what values those keys take. Nothing here checks an
image's properties against it; it is a catalog, as in Glance.

Glance's default policy: anyone reads what they can see (public namespaces, their own
project's, all for an admin); only an admin creates, changes or deletes. A protected
namespace cannot be deleted until it is unprotected (403)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("metadefs")
Db = Pool | asyncpg.Connection

# The kinds of definition a namespace holds (metadef_items.kind).
OBJECT, PROPERTY, TAG = "object", "property", "tag"


@dataclass(frozen=True)
class Namespace:
    """A namespace row and its resource type associations; `items` (kind → rows) only
    where the whole namespace is shown."""
    row: asyncpg.Record
    associations: list[asyncpg.Record]
    items: dict[str, list[asyncpg.Record]] | None = None


def _admin_only(ctx: RequestContext) -> None:
    if not ctx.is_admin:
        raise errors.Forbidden("Only an admin may change the metadata definitions catalog.")


def _may_see(row: asyncpg.Record, ctx: RequestContext) -> bool:
    return ctx.is_admin or row["visibility"] == "public" or row["owner"] == ctx.project_id


async def _namespace(db: Db, ctx: RequestContext, name: str, *, for_update: bool = False) -> asyncpg.Record:
    row = await db.fetchrow(Q.get_namespace_for_update if for_update else Q.get_namespace, name)
    if row is None or not _may_see(row, ctx):
        raise errors.NotFound(f"Metadata definition namespace {name} was not found.")
    return row


def _conflict(what: str) -> errors.Conflict:
    return errors.Conflict(f"{what} already exists.", code="metadef_exists")


# --- namespaces ------------------------------------------------------------------------------

async def list_namespaces(pool: Pool, ctx: RequestContext, visibility: str | None,
                          resource_types: list[str] | None) -> list[Namespace]:
    rows = await pool.fetch(Q.list_namespaces, ctx.is_admin, ctx.project_id, visibility, resource_types)
    assocs = await pool.fetch(Q.list_associations, [r["id"] for r in rows])
    return [Namespace(r, [a for a in assocs if a["namespace_id"] == r["id"]]) for r in rows]


async def get_namespace(pool: Pool, ctx: RequestContext, name: str) -> Namespace:
    row = await _namespace(pool, ctx, name)
    return await _whole(pool, row)


async def _whole(db: Db, row: asyncpg.Record) -> Namespace:
    items = {kind: await db.fetch(Q.list_items, row["id"], kind) for kind in (OBJECT, PROPERTY, TAG)}
    return Namespace(row, await db.fetch(Q.list_associations, [row["id"]]), items)


async def create_namespace(pool: Pool, ctx: RequestContext, body: dict[str, Any]) -> Namespace:
    """A namespace and whatever definitions its body already holds, all or nothing."""
    _admin_only(ctx)
    async with pool.acquire() as conn, conn.transaction():
        try:
            row = await conn.fetchrow(
                Q.insert_namespace, body["namespace"], body.get("display_name"), body.get("description"),
                body.get("visibility", "private"), body.get("protected", False),
                body.get("owner") or ctx.project_id or None)
        except asyncpg.UniqueViolationError:
            raise _conflict(f"Metadata definition namespace {body['namespace']}") from None
        for assoc in body.get("resource_type_associations", []):
            await _associate(conn, row, assoc)
        for name, definition in body.get("properties", {}).items():
            await _insert_item(conn, row, PROPERTY, name, definition)
        for obj in body.get("objects", []):
            await _insert_item(conn, row, OBJECT, obj["name"], _item_body(obj))
        for t in body.get("tags", []):
            await _insert_item(conn, row, TAG, t["name"], {})
        return await _whole(conn, row)


async def update_namespace(pool: Pool, ctx: RequestContext, name: str, body: dict[str, Any]) -> Namespace:
    """PUT: the namespace's own fields as the body gives them (it may be renamed); its
    definitions stay."""
    _admin_only(ctx)
    async with pool.acquire() as conn, conn.transaction():
        row = await _namespace(conn, ctx, name, for_update=True)
        try:
            row = await conn.fetchrow(
                Q.update_namespace, row["id"], body["namespace"], body.get("display_name"),
                body.get("description"), body.get("visibility", row["visibility"]),
                body.get("protected", row["protected"]), body.get("owner") or row["owner"])
        except asyncpg.UniqueViolationError:
            raise _conflict(f"Metadata definition namespace {body['namespace']}") from None
        return Namespace(row, await conn.fetch(Q.list_associations, [row["id"]]))


async def delete_namespace(pool: Pool, ctx: RequestContext, name: str) -> None:
    _admin_only(ctx)
    async with pool.acquire() as conn, conn.transaction():
        row = await _namespace(conn, ctx, name, for_update=True)
        if row["protected"]:
            raise errors.Forbidden(f"Metadata definition namespace {name} is protected and cannot be deleted.")
        await conn.execute(Q.delete_namespace, row["id"])


# --- resource types and their associations ---------------------------------------------------

async def resource_types(pool: Pool) -> list[asyncpg.Record]:
    return await pool.fetch(Q.list_resource_types)


async def associations(pool: Pool, ctx: RequestContext, name: str) -> list[asyncpg.Record]:
    row = await _namespace(pool, ctx, name)
    return await pool.fetch(Q.list_associations, [row["id"]])


async def associate(pool: Pool, ctx: RequestContext, name: str, body: dict[str, Any]) -> asyncpg.Record:
    _admin_only(ctx)
    async with pool.acquire() as conn, conn.transaction():
        return await _associate(conn, await _namespace(conn, ctx, name, for_update=True), body)


async def _associate(conn: asyncpg.Connection, ns: asyncpg.Record, body: dict[str, Any]) -> asyncpg.Record:
    # An association naming a resource type the catalog lacks creates it, as Glance does.
    await conn.execute(Q.ensure_resource_type, body["name"])
    try:
        return await conn.fetchrow(Q.insert_association, ns["id"], body["name"], body.get("prefix"),
                                   body.get("properties_target"))
    except asyncpg.UniqueViolationError:
        raise _conflict(f"Resource type {body['name']} of namespace {ns['namespace']}") from None


async def dissociate(pool: Pool, ctx: RequestContext, name: str, resource_type: str) -> None:
    _admin_only(ctx)
    row = await _namespace(pool, ctx, name)
    if await pool.fetchval(Q.delete_association, row["id"], resource_type) is None:
        raise errors.NotFound(f"Resource type {resource_type} is not associated with namespace {name}.")


# --- objects, properties and tags ------------------------------------------------------------

def _item_body(definition: dict[str, Any]) -> dict[str, Any]:
    """What is stored of an item's definition: all but its name and the read-only fields."""
    return {k: v for k, v in definition.items()
            if k not in ("name", "created_at", "updated_at", "schema", "self")}


def _missing(kind: str, name: str, namespace: str) -> errors.NotFound:
    return errors.NotFound(f"Metadata definition {kind} {name} was not found in namespace {namespace}.")


async def _insert_item(conn: asyncpg.Connection, ns: asyncpg.Record, kind: str, name: str,
                       body: dict[str, Any]) -> asyncpg.Record:
    try:
        return await conn.fetchrow(Q.insert_item, ns["id"], kind, name, body)
    except asyncpg.UniqueViolationError:
        raise _conflict(f"Metadata definition {kind} {name} of namespace {ns['namespace']}") from None


async def list_items(pool: Pool, ctx: RequestContext, namespace: str, kind: str) -> list[asyncpg.Record]:
    row = await _namespace(pool, ctx, namespace)
    return await pool.fetch(Q.list_items, row["id"], kind)


async def get_item(pool: Pool, ctx: RequestContext, namespace: str, kind: str, name: str) -> asyncpg.Record:
    row = await _namespace(pool, ctx, namespace)
    item = await pool.fetchrow(Q.get_item, row["id"], kind, name)
    if item is None:
        raise _missing(kind, name, namespace)
    return item


async def add_item(pool: Pool, ctx: RequestContext, namespace: str, kind: str, name: str,
                   definition: dict[str, Any]) -> asyncpg.Record:
    _admin_only(ctx)
    async with pool.acquire() as conn, conn.transaction():
        ns = await _namespace(conn, ctx, namespace, for_update=True)
        return await _insert_item(conn, ns, kind, name, _item_body(definition))


async def replace_item(pool: Pool, ctx: RequestContext, namespace: str, kind: str, name: str,
                       definition: dict[str, Any]) -> asyncpg.Record:
    """PUT: the item becomes the body's (renamed when the body names it otherwise)."""
    _admin_only(ctx)
    async with pool.acquire() as conn, conn.transaction():
        ns = await _namespace(conn, ctx, namespace, for_update=True)
        new_name = definition.get("name") or name
        try:
            item = await conn.fetchrow(Q.update_item, ns["id"], kind, name, new_name, _item_body(definition))
        except asyncpg.UniqueViolationError:
            raise _conflict(f"Metadata definition {kind} {new_name} of namespace {namespace}") from None
        if item is None:
            raise _missing(kind, name, namespace)
        return item


async def delete_item(pool: Pool, ctx: RequestContext, namespace: str, kind: str, name: str) -> None:
    _admin_only(ctx)
    row = await _namespace(pool, ctx, namespace)
    if await pool.fetchval(Q.delete_item, row["id"], kind, name) is None:
        raise _missing(kind, name, namespace)


async def replace_tags(pool: Pool, ctx: RequestContext, namespace: str, names: list[str],
                       *, append: bool) -> list[asyncpg.Record]:
    """POST …/tags: these tags instead of the namespace's (or beside them, with Glance's
    X-Openstack-Append header); a name given twice is a 409, as in Glance."""
    _admin_only(ctx)
    if len(set(names)) != len(names):
        raise _conflict("A tag given twice")
    async with pool.acquire() as conn, conn.transaction():
        ns = await _namespace(conn, ctx, namespace, for_update=True)
        if not append:
            await conn.execute(Q.delete_items, ns["id"], TAG)
        return [await _insert_item(conn, ns, TAG, n, {}) for n in names]


async def delete_all(pool: Pool, ctx: RequestContext, namespace: str, kind: str) -> None:
    _admin_only(ctx)
    row = await _namespace(pool, ctx, namespace)
    await pool.execute(Q.delete_items, row["id"], kind)
