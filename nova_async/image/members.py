"""Image members: a shared image offered to other projects, and their answers.

Glance's rules: only a 'shared' image has members (403 for any other); the image's owner (or
an admin) adds and removes them; only the member project itself (or an admin) answers, with
pending, accepted or rejected. The owner sees every member, a member only its own entry.
What a member's answer changes is the image lists (store.list_images); the image itself is
readable by any member (store.visible)."""

from __future__ import annotations

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.db.pool import Pool
from nova_async.image import store
from nova_async.image.store import Q

STATUSES = ("pending", "accepted", "rejected")
# Glance's default image_member_quota.
MAX_MEMBERS = 128


def _only_shared(image: asyncpg.Record) -> None:
    if image["visibility"] != "shared":
        raise errors.Forbidden(f"Image {image['id']} is {image['visibility']}: only shared images have members.")


def _not_found(image: asyncpg.Record, member: str) -> errors.NotFound:
    return errors.NotFound(f"Project {member} is not a member of image {image['id']}.")


async def add(pool: Pool, ctx: RequestContext, image_id: str, member: str) -> asyncpg.Record:
    """Offer the image to `member`; the image's row lock keeps two callers from both passing
    the quota check."""
    async with pool.acquire() as conn, conn.transaction():
        image = await store.visible(conn, ctx, image_id, for_update=True)
        if not store.may_change(image, ctx):
            raise errors.Forbidden(f"Only the owner of image {image_id} may add members to it.")
        _only_shared(image)
        if await conn.fetchval(Q.count_members, image["id"]) >= MAX_MEMBERS:
            raise errors.TooLarge(f"Image {image_id} has the most members allowed ({MAX_MEMBERS}).")
        try:
            return await conn.fetchrow(Q.insert_member, image["id"], member)
        except asyncpg.UniqueViolationError:
            raise errors.Conflict(f"Project {member} is already a member of image {image_id}.",
                                  code="image_member_exists") from None


async def list_members(pool: Pool, ctx: RequestContext, image_id: str) -> list[asyncpg.Record]:
    image = await store.visible(pool, ctx, image_id)
    _only_shared(image)
    mine = None if store.may_change(image, ctx) else ctx.project_id
    return await pool.fetch(Q.list_members, image["id"], mine)


async def get(pool: Pool, ctx: RequestContext, image_id: str, member: str) -> asyncpg.Record:
    image = await store.visible(pool, ctx, image_id)
    _only_shared(image)
    if not store.may_change(image, ctx) and member != ctx.project_id:
        raise _not_found(image, member)   # another member's entry is not shown to a member
    row = await pool.fetchrow(Q.get_member, image["id"], member)
    if row is None:
        raise _not_found(image, member)
    return row


async def answer(pool: Pool, ctx: RequestContext, image_id: str, member: str, status: str) -> asyncpg.Record:
    """The member project accepts, rejects, or goes back to pending; the owner may not answer
    for it (403)."""
    image = await store.visible(pool, ctx, image_id)
    if not (ctx.is_admin or member == ctx.project_id):
        raise errors.Forbidden(f"Only project {member} may answer for its membership of image {image_id}.")
    _only_shared(image)
    if status not in STATUSES:
        raise errors.InvalidInput(f"Invalid status: {status!r}; expected one of {', '.join(STATUSES)}.")
    row = await pool.fetchrow(Q.set_member_status, image["id"], member, status)
    if row is None:
        raise _not_found(image, member)
    return row


async def remove(pool: Pool, ctx: RequestContext, image_id: str, member: str) -> None:
    image = await store.visible(pool, ctx, image_id)
    if not store.may_change(image, ctx):
        raise errors.Forbidden(f"Only the owner of image {image_id} may remove its members.")
    _only_shared(image)
    if await pool.fetchval(Q.delete_member, image["id"], member) is None:
        raise _not_found(image, member)
