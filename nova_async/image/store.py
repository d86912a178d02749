"""Image records and their rules: who may see or change an image, and the life of an upload
(queued → saving → active).

Visibility, as Glance has it: public and community images are usable by everyone, private
ones by their owner's project, shared ones by their owner's and by the projects it was
offered to (members.py; any member, whatever its answer), and an admin sees everything. An
image a caller may not see does not exist for them (404); one they may see but not change
answers 403."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import check, parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.db.session_locks import SessionLocks
from nova_async.db.shared_read import SharedRead
from nova_async.image import patch, schemas
from nova_async.image.blobs import HASH_ALGO, ImageFiles, Written

Q = queries("image")
GET_IMAGE = SharedRead(Q.get_image)   # a burst of boots asks for the same image
log = structlog.get_logger("image")

Db = Pool | asyncpg.Connection


@dataclass(frozen=True)
class ImageFilters:
    ids: list[str] | None = None
    names: list[str] | None = None
    statuses: list[str] | None = None
    visibility: str | None = None
    os_hidden: bool | None = False
    owner: str | None = None
    tags: list[str] | None = None
    properties: dict[str, str] = field(default_factory=dict)
    disk_formats: list[str] | None = None
    container_formats: list[str] | None = None
    size_min: int | None = None
    size_max: int | None = None
    # (key, "asc"|"desc") pairs, most significant first; Glance's default is newest first.
    sort: list[tuple[str, str]] = field(default_factory=lambda: [("created_at", "desc")])
    marker: str | None = None
    limit: int | None = None
    # Which of the shared images offered to the caller's project a list shows: those it
    # answered so (Glance's member_status filter; 'all': any answer).
    member_status: str = "accepted"
    # Columns asked for by value (EXACT_COLUMNS), already of the column's type.
    exact: dict[str, Any] = field(default_factory=dict)


# The image columns Glance also filters a list by, with `?column=value` (any other unknown
# key is a property), and their types.
EXACT_COLUMNS: dict[str, type] = {"size": int, "virtual_size": int, "min_disk": int, "min_ram": int,
                                  "protected": bool, "checksum": str, "os_hash_value": str}


def may_see(row: asyncpg.Record, ctx: RequestContext) -> bool:
    """Whether the caller sees the image without being one of its members."""
    return ctx.is_admin or row["visibility"] in ("public", "community") or row["owner"] == ctx.project_id


async def _is_member(db: Db, row: asyncpg.Record, ctx: RequestContext) -> bool:
    return (row["visibility"] == "shared" and bool(ctx.project_id)
            and await db.fetchrow(Q.get_member, row["id"], ctx.project_id) is not None)


def may_change(row: asyncpg.Record, ctx: RequestContext) -> bool:
    return ctx.is_admin or row["owner"] == ctx.project_id


def _not_found(image_id: str) -> errors.NotFound:
    return errors.NotFound(f"No image found with ID {image_id}", code="image_not_found")


def _check_policy(ctx: RequestContext, core: dict[str, Any]) -> None:
    if core.get("visibility") == "public" and not ctx.is_admin:
        raise errors.Forbidden("Only an admin may make an image public (visibility 'public').")
    owner = core.get("owner")
    if owner is not None and owner != ctx.project_id and not ctx.is_admin:
        raise errors.Forbidden("Only an admin may give an image to another project (owner).")


def _unique(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))


async def visible(db: Db, ctx: RequestContext, image_id: str, *, for_update: bool = False) -> asyncpg.Record:
    """The image, if the caller may see it (404 otherwise)."""
    canonical = parse_uuid(image_id)
    if canonical is None:
        raise _not_found(image_id)
    row = await (db.fetchrow(Q.get_image_for_update, canonical) if for_update else GET_IMAGE(db, canonical))
    if row is None or not (may_see(row, ctx) or await _is_member(db, row, ctx)):
        raise _not_found(image_id)
    return row


async def _changeable(db: Db, ctx: RequestContext, image_id: str, *, for_update: bool = False) -> asyncpg.Record:
    row = await visible(db, ctx, image_id, for_update=for_update)
    if not may_change(row, ctx):
        raise errors.Forbidden(f"You are not permitted to modify image {image_id}.")
    return row


async def create(db: Db, ctx: RequestContext, core: dict[str, Any], props: dict[str, str]) -> asyncpg.Record:
    _check_policy(ctx, core)
    image_id = parse_uuid(core["id"]) if core.get("id") else str(uuid.uuid4())
    try:
        return await db.fetchrow(
            Q.insert_image, image_id, core.get("name"), core.get("disk_format"),
            core.get("container_format"), core.get("visibility", "shared"), core.get("min_disk", 0),
            core.get("min_ram", 0), core.get("protected", False), core.get("os_hidden", False),
            core.get("owner") or ctx.project_id or None, _unique(core.get("tags", [])), props)
    except asyncpg.UniqueViolationError:
        raise errors.Conflict(f"An image with identifier {image_id} already exists.",
                              code="image_exists") from None


async def get(db: Db, ctx: RequestContext, image_id: str) -> asyncpg.Record:
    return await visible(db, ctx, image_id)


class _Last:
    """Sorts after every value: PostgreSQL's place for NULL in an ascending order (and so
    first in a descending one), which is where Glance's database puts images without one."""

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return not isinstance(other, _Last)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Last)


_LAST = _Last()


def _sorted(rows: list[asyncpg.Record], keys: list[tuple[str, str]]) -> list[asyncpg.Record]:
    """Stable sorts from the least significant key up; created_at then id break ties, as
    Glance appends them, so pages never overlap."""
    chain = list(keys)
    for tie in ("created_at", "id"):
        if tie not in {k for k, _ in chain}:
            chain.append((tie, chain[-1][1] if chain else "desc"))
    out = list(rows)
    for key, direction in reversed(chain):
        out.sort(key=lambda r, k=key: _LAST if r[k] is None else r[k], reverse=direction == "desc")
    return out


async def list_images(db: Db, ctx: RequestContext, f: ImageFilters) -> list[asyncpg.Record]:
    if f.marker is not None:
        try:
            await visible(db, ctx, f.marker)
        except errors.NotFound:
            raise errors.InvalidInput(f"Invalid marker: image {f.marker} could not be found.") from None
    ids = None if f.ids is None else [i for i in map(parse_uuid, f.ids) if i]
    rows = _sorted(await db.fetch(
        Q.list_images, ctx.is_admin, ctx.project_id, f.visibility, ids, f.names, f.statuses,
        f.os_hidden, f.owner, f.tags, f.properties, f.disk_formats, f.container_formats,
        f.size_min, f.size_max, f.member_status), f.sort)
    rows = [r for r in rows if all(r[column] == value for column, value in f.exact.items())]
    if f.marker is not None:
        # A marker the filters exclude starts nothing: the page after it is empty.
        after = [i for i, r in enumerate(rows) if str(r["id"]) == str(parse_uuid(f.marker))]
        rows = rows[after[0] + 1:] if after else []
    return rows if f.limit is None else rows[:f.limit]


async def list_for_compute(db: Db, ctx: RequestContext, f: Any) -> list[asyncpg.Record]:
    """The compute API's image list (`f`: a ListImages message's filters)."""
    marker_at = marker_id = None
    if f.marker:
        try:
            marker = await visible(db, ctx, f.marker)
        except errors.NotFound:
            raise errors.InvalidInput(f"marker [{f.marker}] not found") from None
        marker_at, marker_id = marker["created_at"], marker["id"]
    since = None
    if f.changed_since:
        try:
            since = datetime.fromisoformat(f.changed_since)
        except ValueError:
            raise errors.InvalidInput(f"Invalid changes-since value: {f.changed_since}") from None
    return await db.fetch(Q.list_for_compute, ctx.is_admin, ctx.project_id, f.name or None, f.status or None,
                          f.min_ram, f.min_disk, f.properties, since, marker_at, marker_id, f.limit)


async def set_properties(pool: Pool, ctx: RequestContext, image_id: str, changes: dict[str, str],
                         remove: list[str], replace: bool) -> asyncpg.Record:
    """Add or replace properties, take some away (NotFound for one it lacks), or (`replace`)
    make `changes` all of them; as the owner, with the row locked from read to write."""
    async with pool.acquire() as conn, conn.transaction():
        row = await _changeable(conn, ctx, image_id, for_update=True)
        properties = {} if replace else dict(row["properties"])
        for key in remove:
            if key not in properties:
                raise errors.NotFound(f"Image {image_id} has no property {key}.")
            del properties[key]
        schemas.check_writable(changes)
        core = set(changes) & set(schemas.CORE)
        if core:   # the compute API's metadata are properties only
            raise errors.Forbidden(f"Attribute '{sorted(core)[0]}' is reserved.")
        properties.update(changes)
        return await conn.fetchrow(Q.set_properties, row["id"], properties)


def _document(row: asyncpg.Record) -> dict[str, Any]:
    doc = {k: row[k] for k in schemas.CORE if k != "id"}
    doc["tags"] = list(row["tags"])
    doc.update(row["properties"])
    return doc


async def update(pool: Pool, ctx: RequestContext, image_id: str,
                 ops: list[dict[str, Any]]) -> asyncpg.Record:
    """Apply a JSON patch atomically: the row is locked from read to write."""
    async with pool.acquire() as conn, conn.transaction():
        row = await _changeable(conn, ctx, image_id, for_update=True)
        before = _document(row)
        after = patch.apply(before, ops)
        check(schemas.IMAGE, after)
        core, props = schemas.split(after)
        changed = {k for k in core if core[k] != before.get(k)}
        _check_policy(ctx, {k: core[k] for k in changed})
        if changed & {"disk_format", "container_format"} and row["status"] != "queued":
            raise errors.Forbidden("disk_format and container_format can only be changed "
                                   "before data is uploaded.")
        return await conn.fetchrow(
            Q.update_image, row["id"], core.get("name"), core["visibility"], core["min_disk"],
            core["min_ram"], core["protected"], core["os_hidden"], _unique(core["tags"]), props,
            core.get("disk_format"), core.get("container_format"), core.get("owner") or row["owner"])


async def delete(pool: Pool, ctx: RequestContext, image_id: str, files: ImageFiles) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await _changeable(conn, ctx, image_id, for_update=True)
        if row["protected"]:
            raise errors.Forbidden(f"Image {image_id} is protected and cannot be deleted.")
        await conn.execute(Q.delete_image, row["id"])
    files.remove(str(row["id"]))


# Glance's default image_tag_quota.
MAX_TAGS = 128


async def add_tag(pool: Pool, ctx: RequestContext, image_id: str, tag: str) -> None:
    """PUT /v2/images/{id}/tags/{tag}: idempotent; the row lock keeps two callers from
    both passing the quota check."""
    schemas.check_tag(tag)
    async with pool.acquire() as conn, conn.transaction():
        row = await _changeable(conn, ctx, image_id, for_update=True)
        tags = list(row["tags"])
        if tag in tags:
            return
        if len(tags) >= MAX_TAGS:
            raise errors.TooLarge(f"Maximum number of tags per image ({MAX_TAGS}) reached.")
        await conn.execute(Q.set_image_tags, row["id"], [*tags, tag])


async def remove_tag(pool: Pool, ctx: RequestContext, image_id: str, tag: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        row = await _changeable(conn, ctx, image_id, for_update=True)
        tags = list(row["tags"])
        if tag not in tags:
            raise errors.NotFound(f"Tag {tag} not found on image {image_id}.")
        await conn.execute(Q.set_image_tags, row["id"], [t for t in tags if t != tag])


async def upload(pool: Pool, ctx: RequestContext, image_id: str,
                 chunks: AsyncIterator[bytes], files: ImageFiles) -> asyncpg.Record:
    """Take the image's data; only a queued image accepts it, and only once."""
    return await _take_data(pool, ctx, image_id, files, lambda key, fmt: files.write(key, chunks, fmt))


async def adopt(pool: Pool, ctx: RequestContext, image_id: str, source: Path, known: Written,
                files: ImageFiles) -> asyncpg.Record:
    """`upload` for a file on this machine whose size and hashes are known (ImageFiles.adopt)."""
    return await _take_data(pool, ctx, image_id, files, lambda key, _fmt: files.adopt(key, source, known))


async def _take_data(pool: Pool, ctx: RequestContext, image_id: str, files: ImageFiles,
                     write: Callable[[str, str | None], Awaitable[Written]]) -> asyncpg.Record:
    row = await _changeable(pool, ctx, image_id)
    if await pool.fetchrow(Q.start_upload, row["id"], files.worker) is None:
        current = await pool.fetchrow(Q.get_image, row["id"])
        if current is None:
            raise _not_found(image_id)
        raise errors.Conflict(f"Image {image_id} is {current['status']}: data can only be "
                              "uploaded once, to a queued image.", code="image_not_queued")
    key = str(row["id"])
    try:
        written = await write(key, row["disk_format"])
    except BaseException:
        await pool.execute(Q.abort_upload, row["id"])
        raise
    done = await pool.fetchrow(Q.finish_upload, row["id"], written.size, written.virtual_size,
                               written.checksum, HASH_ALGO, written.hash_value)
    if done is None:  # deleted while the data was arriving
        files.remove(key)
        raise errors.Conflict(f"Image {image_id} was deleted during the upload.", code="image_deleted")
    log.info("image data stored", image_id=key, size=written.size, checksum=written.checksum)
    return done


async def reset_interrupted_uploads(pool: Pool, files: ImageFiles, locks: SessionLocks | None, *,
                                    at_start: bool) -> None:
    """Uploads whose process died can never finish: their images take data again, and the
    temporary files they left go. Those of live processes (other copies of the role on this
    database and image directory, or this process's own) are left alone. At start (`at_start`)
    the uploads no process recorded (from before workers were recorded, or a process without
    locks) count as interrupted too, as this process's previous run may have left them."""
    # The files first: a file exists only once its image is saving, so an upload started
    # after the rows are read below cannot lose its file.
    found = files.unfinished()
    rows = await pool.fetch(Q.uploads_in_progress)
    dead = await _dead(locks, {r["worker"] for r in rows if r["worker"] is not None})
    for reset in await pool.fetch(Q.reset_interrupted_uploads, list(dead), at_start):
        log.warning("interrupted image upload reset: the image takes data again", image_id=str(reset["id"]))
    going_on = {str(r["id"]) for r in await pool.fetch(Q.uploads_in_progress)}
    files.drop_unfinished(found, keep=going_on)


async def _dead(locks: SessionLocks | None, workers: set[uuid.UUID]) -> set[uuid.UUID]:
    """Which of `workers` (processes' incarnations) are dead; without locks, none is known."""
    return await locks.dead(workers) if locks is not None and workers else set()


def file_path(row: asyncpg.Record, files: ImageFiles) -> str:
    return str(files.path(str(row["id"])).resolve()) if row["status"] == "active" else ""


def download_path(row: asyncpg.Record, ctx: RequestContext, files: ImageFiles) -> str:
    """The file GET /v2/images/{id}/file sends ("" when there is no data yet). A deactivated
    image's data is for admins only (403 for others), as in Glance."""
    if row["status"] == "deactivated":
        if not ctx.is_admin:
            raise errors.Forbidden(f"The requested image {row['id']} has been deactivated. "
                                   "Image data download is forbidden.")
        return str(files.path(str(row["id"])).resolve())
    return file_path(row, files)


# An action's target status, and the statuses it may start from (the target itself is a
# no-op, as in Glance).
_ACTIONS = {"deactivate": ("deactivated", ("active",)), "reactivate": ("active", ("deactivated",))}


async def change_activation(pool: Pool, ctx: RequestContext, image_id: str, action: str) -> None:
    """POST /v2/images/{id}/actions/deactivate|reactivate: an admin, or a member of the
    image's own project (Glance's default policy, which Tempest's owner test relies on);
    only an active or deactivated image can change."""
    target, sources = _ACTIONS[action]
    async with pool.acquire() as conn, conn.transaction():
        row = await visible(conn, ctx, image_id, for_update=True)
        if not (ctx.is_admin or (row["owner"] == ctx.project_id and "member" in ctx.roles)):
            raise errors.Forbidden(f"Only an admin or the image's owner may {action} an image.")
        if row["status"] == target:
            return
        if row["status"] not in sources:
            raise errors.InvalidInput(f"Not allowed to {action} image in status '{row['status']}'.")
        await conn.execute(Q.set_image_status, row["id"], target)
