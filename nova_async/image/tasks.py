"""Glance's tasks (/v2/tasks): an `import` task makes an image from the bytes at a URL, in
the background, and reports how it went (pending → processing → success or failure).

The work belongs to the image role's `Work` (common/work.py), entered by its `run()`:
nothing here is fire-and-forget. An import creates the image from the task's
image_properties, downloads the URL (http or https only, at most the image size cap, a
connect and a read timeout), and stores the bytes through the image upload path
(store.upload: checksums, size, status active). A finished task expires 48 hours later, as
Glance's task_time_to_live has it.

What a failure leaves: Glance leaves the image an import made, queued and without data,
and nobody asked for such an image; here an import that fails takes its image away again
and its result stays null, so a failed task never leaves a half-made image behind.

Crash safety: a task is a row, written before the 201, with the process that runs it (its
incarnation, `worker`). A task found pending or processing whose process is dead (found when
the image role starts, or by another copy's periodic look) was cut off (the download died
with the process):
it is failed with a message saying so, and the image it made is deleted unless its data
had arrived (an upload the restart cut off is queued again by store.reset_interrupted_uploads
first, so only an image whose data is whole, active, stays)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import structlog

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import check, parse_uuid
from nova_async.common.work import Work
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.db.session_locks import SessionLocks
from nova_async.image import schemas, store
from nova_async.image.blobs import ImageFiles

Q = queries("image_tasks")
log = structlog.get_logger("image")

TYPES = ("import",)
STATUSES = ("pending", "processing", "success", "failure")
SORT_KEYS = ("id", "type", "status", "owner", "created_at", "updated_at", "expires_at")
_SCHEMES = ("http", "https")
# Glance's limit_param_default and api_limit_max.
DEFAULT_LIMIT = 25
MAX_LIMIT = 1000
# A server that accepts the connection and then says nothing fails the task, however
# large the image: the limit is on each wait, not on the whole download.
_CONNECT_TIMEOUT = 30.0
_READ_TIMEOUT = 60.0
_CHUNK = 1024 * 1024
RESTARTED = "The image service restarted while the task was "


class ImportFailed(Exception):
    """Why an import failed, in words for the task's message."""


@dataclass(frozen=True)
class TaskFilters:
    type: str | None = None
    status: str | None = None
    sort_key: str = "created_at"
    sort_dir: str = "desc"
    marker: str | None = None
    limit: int = DEFAULT_LIMIT


def check_new(body: Any) -> tuple[str, dict[str, Any]]:
    """(type, input) of a POST /v2/tasks body, or InvalidInput (400) saying what is wrong."""
    if not isinstance(body, dict):
        raise errors.InvalidInput("The task must be a JSON object.")
    for required in ("type", "input"):
        if required not in body:
            raise errors.InvalidInput(f"Task '{required}' is required")
    unknown = sorted(set(body) - {"type", "input"})
    if unknown:
        raise errors.InvalidInput(f"Task attribute '{unknown[0]}' cannot be set.")
    kind, task_input = body["type"], body["input"]
    if kind not in TYPES:
        raise errors.InvalidInput(f"Invalid type value: {kind}")
    if not isinstance(task_input, dict):
        raise errors.InvalidInput("Task 'input' must be a JSON object.")
    for required in ("import_from", "import_from_format", "image_properties"):
        if required not in task_input:
            raise errors.InvalidInput(f"Input does not contain '{required}' field")
    url = task_input["import_from"]
    if not isinstance(url, str) or not _fetchable(url):
        raise errors.InvalidInput(f"import_from must be an http or https URL with a host, not {url!r}.")
    if task_input["import_from_format"] not in schemas.DISK_FORMATS:
        raise errors.InvalidInput(f"Invalid import_from_format: {task_input['import_from_format']!r}. "
                                  f"It must be one of: {', '.join(schemas.DISK_FORMATS)}.")
    props = task_input["image_properties"]
    if not isinstance(props, dict):
        raise errors.InvalidInput("image_properties must be a JSON object.")
    try:
        schemas.check_writable(props)
    except errors.Forbidden as exc:   # in a task's input it is bad input, not a refusal
        raise errors.InvalidInput(exc.message) from None
    check(schemas.IMAGE, props)
    return kind, task_input


def _fetchable(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in _SCHEMES and bool(parts.hostname) and (parts.port or 1) > 0
    except ValueError:   # a port that is not a number, a bad IPv6 literal
        return False


async def create(pool: Pool, ctx: RequestContext, work: Work, files: ImageFiles, size_cap: int,
                 kind: str, task_input: dict[str, Any]) -> asyncpg.Record:
    """Record the task, then hand its import to the role's work. A role that is stopping
    takes no work (503): the task is failed there and then, not left pending."""
    row = await pool.fetchrow(Q.insert_task, uuid.uuid4(), kind, ctx.project_id or None, task_input, files.worker)
    try:
        work.spawn(f"image-task:{row['id']}", run_import(pool, ctx, files, row["id"], size_cap))
    except errors.Unavailable as exc:
        await pool.execute(Q.finish_task, row["id"], "failure", None, exc.message)
        raise
    return row


def _not_found(task_id: str) -> errors.NotFound:
    return errors.NotFound(f"Task with the given id {task_id} not found")


async def get(pool: Pool, ctx: RequestContext, task_id: str) -> asyncpg.Record:
    canonical = parse_uuid(task_id)
    row = None if canonical is None else await pool.fetchrow(Q.get_task, canonical)
    if row is None or not (ctx.is_admin or row["owner"] == ctx.project_id):
        raise _not_found(task_id)
    return row


async def list_tasks(pool: Pool, ctx: RequestContext, f: TaskFilters) -> list[asyncpg.Record]:
    rows = await pool.fetch(Q.list_tasks, ctx.is_admin, ctx.project_id, f.type, f.status)
    # id breaks ties, so that pages never overlap; a task without expires_at sorts as
    # PostgreSQL puts NULL (last ascending).
    rows.sort(key=lambda r: str(r["id"]), reverse=f.sort_dir == "desc")
    rows.sort(key=lambda r: (r[f.sort_key] is None, r[f.sort_key] if r[f.sort_key] is not None else 0)
              if f.sort_key != "id" else str(r["id"]), reverse=f.sort_dir == "desc")
    if f.marker is not None:
        at = [i for i, r in enumerate(rows) if str(r["id"]) == f.marker]
        if not at:
            raise errors.InvalidInput(f"Invalid marker: task {f.marker} could not be found.")
        rows = rows[at[0] + 1:]
    return rows[:f.limit]


async def list_for_image(pool: Pool, ctx: RequestContext, image_id: str) -> list[asyncpg.Record]:
    """The tasks that made an image the caller may see (404 for an image they may not)."""
    image = await store.get(pool, ctx, image_id)
    return await pool.fetch(Q.list_image_tasks, image["id"])


# --- the work -------------------------------------------------------------------------

async def run_import(pool: Pool, ctx: RequestContext, files: ImageFiles, task_id: uuid.UUID,
                     size_cap: int) -> None:
    """Do one import task to its end, recording success or failure in its row."""
    row = await pool.fetchrow(Q.start_task, task_id)
    if row is None:   # failed by a restart's recovery already
        return
    task_input = row["input"]
    core, props = schemas.split(dict(task_input["image_properties"]))
    core.setdefault("owner", row["owner"])
    image_id = None
    try:
        image = await store.create(pool, ctx, core, props)
        image_id = image["id"]
        await pool.execute(Q.set_task_image, task_id, image_id)
        await store.upload(pool, ctx, str(image_id), _download(task_input["import_from"], size_cap), files)
    except (ImportFailed, errors.NovaAsyncError) as exc:
        message = str(exc) if isinstance(exc, ImportFailed) else exc.message
        if image_id is not None:
            await pool.fetchrow(Q.delete_task_image, image_id)
            files.remove(str(image_id))
        await pool.execute(Q.finish_task, task_id, "failure", None, message)
        log.info("image import failed", task_id=str(task_id), reason=message)
        return
    await pool.execute(Q.finish_task, task_id, "success", {"image_id": str(image_id)}, "")
    log.info("image imported", task_id=str(task_id), image_id=str(image_id))


async def _download(url: str, size_cap: int) -> AsyncIterator[bytes]:
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT, sock_read=_READ_TIMEOUT)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as resp:
            if resp.status >= 400:
                raise ImportFailed(f"{url} answered {resp.status} {resp.reason}.")
            if resp.content_length is not None and resp.content_length > size_cap:
                raise ImportFailed(f"{url} holds {resp.content_length} bytes, more than the image "
                                   f"size cap of {size_cap}.")
            got = 0
            async for chunk in resp.content.iter_chunked(_CHUNK):
                got += len(chunk)
                if got > size_cap:
                    raise ImportFailed(f"{url} sent more than the image size cap of {size_cap} bytes.")
                yield chunk
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        raise ImportFailed(f"Could not download {url}: {str(exc) or type(exc).__name__}") from None


async def fail_unfinished(pool: Pool, files: ImageFiles, locks: SessionLocks | None, *,
                          at_start: bool) -> list[asyncpg.Record]:
    """The tasks whose process died (its download died with it) fail, and their unfinished
    images go; at start (`at_start`) those no process recorded too (store.reset_interrupted_uploads
    says why). A live process's tasks, this one's or another copy's, are left alone."""
    workers = {r["worker"] for r in await pool.fetch(Q.unfinished_task_workers)}
    dead = await locks.dead(workers) if locks is not None and workers else set()
    rows = await pool.fetch(Q.fail_unfinished_tasks, RESTARTED, list(dead), at_start)
    for row in rows:
        if row["image_id"] is not None and await pool.fetchrow(Q.delete_task_image, row["image_id"]):
            files.remove(str(row["image_id"]))
        log.warning("image task failed: the service restarted", task_id=str(row["id"]))
    return rows

