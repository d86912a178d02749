"""Instances as conductor, compute and API all see them: state changes, faults, and the
instance-action log (every step recorded with start, finish and result).

This is the shared object layer Nova calls `nova.objects`; the SQL is in
`sql/queries/instances.sql`."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from typing import Protocol

import asyncpg
import msgspec
import structlog

from nova_async.common import errors
from nova_async.common.states import VmState
from nova_async.db.coalesce import Coalesced
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

log = structlog.get_logger("instances")
Q = queries("instances")
GQ = queries("server_groups")
BQ = queries("block_devices")
MQ = queries("migrations")

_ANY = object()  # set_state without a compare-and-swap on task_state
# Steps that many instances reach at once (a burst of boots) are recorded together.
START_EVENT = Coalesced(Q.start_event)
FINISH_EVENT = Coalesced(Q.finish_event)
RECORD_STEPS = Coalesced(Q.record_steps)


async def get(db: Pool | asyncpg.Connection, uuid: str) -> asyncpg.Record:
    row = await db.fetchrow(Q.get, uuid)
    if row is None:
        raise errors.NotFound(f"Instance {uuid} could not be found.")
    return row


async def set_state(db, uuid: str, *, vm_state: str | None, task_state: str | None,
                    power_state: int | None = None, expected_task_state=_ANY) -> asyncpg.Record | None:
    """Change state; with `expected_task_state`, only if task_state still holds it (else None)."""
    check = expected_task_state is not _ANY
    return await db.fetchrow(Q.set_state, uuid, vm_state, task_state, power_state, check,
                             expected_task_state if check else None)


async def set_error(db, uuid: str, message: str, *, host: str | None = None, code: int = 500,
                    details: str = "") -> None:
    """ERROR with a fault that says why (shown as the server's `fault`)."""
    async with _tx(db) as conn:
        await conn.execute(Q.add_fault, uuid, code, message[:1000], details[:10000], host)
        await conn.execute(Q.set_state, uuid, VmState.ERROR, None, None, False, None)


class Allocations(Protocol):
    """The placement client, as far as a delete needs it (db/ may not import a role)."""

    async def delete_allocations(self, consumer_uuid: str) -> None: ...


async def mark_deleted(db, api_db: Pool, uuid: str) -> None:
    """The last step of every delete, once nothing is held for the instance any more: its row
    marked deleted in its cell (`db`), its server-group membership (in the API database)
    dropped."""
    await db.execute(Q.mark_deleted, uuid)
    await api_db.execute(GQ.drop_member, uuid)


async def finish_unhosted_delete(db, api_db: Pool, placement: Allocations, uuid: str) -> None:
    """Finish the delete of an instance that never got a host (never scheduled, scheduling
    failed, or deleted while being scheduled): the only thing it may hold is a placement
    claim. The API and the conductor both end such a delete here."""
    await placement.delete_allocations(uuid)
    await mark_deleted(db, api_db, uuid)


class Ports(Protocol):
    """The network client, as far as a local delete needs it."""

    async def deallocate(self, instance_uuid: str) -> None: ...


class Volumes(Protocol):
    """The volume client, as far as a local delete needs it."""

    async def delete_attachment(self, attachment_id: str) -> None: ...

    async def delete(self, volume_id: str) -> None: ...


async def release_volumes(db, volumes: Volumes, uuid: str) -> None:
    """The volumes of an instance no host will let go of (offloaded, or its host down), as a
    terminate lets go of them (compute/volumes.release): each attachment deleted, the volumes
    that were to go with it deleted, each mapping last."""
    for bdm in await db.fetch(BQ.of_instance, uuid):
        if bdm["destination_type"] != "volume" or bdm["volume_id"] is None:
            continue
        if bdm["attachment_id"] is not None:
            await volumes.delete_attachment(str(bdm["attachment_id"]))
        if bdm["delete_on_termination"]:
            await volumes.delete(str(bdm["volume_id"]))
        await db.execute(BQ.delete, bdm["id"])


async def delete_locally(db, api_db: Pool, placement: Allocations, ports: Ports, volumes: Volumes,
                         uuid: str) -> None:
    """Delete an instance whose compute host is down, as Nova's local delete: what it holds
    outside that host (ports, volumes, its claim and an unconfirmed resize's) is let go of,
    and the row is marked deleted. Its guest and disks are the host's to remove when it comes
    back (its start-up recovery removes those of instances that no longer exist). Each step
    may run again."""
    await ports.deallocate(uuid)
    await release_volumes(db, volumes, uuid)
    for migration in await db.fetch(MQ.migration_consumers, uuid):
        await placement.delete_allocations(str(migration["uuid"]))
    await finish_unhosted_delete(db, api_db, placement, uuid)


async def fault(db, uuid: str) -> asyncpg.Record | None:
    return await db.fetchrow(Q.latest_fault, uuid)


async def start_action(db, uuid: str, request_id: str, action: str, project_id: str, user_id: str) -> None:
    await db.execute(Q.start_action, uuid, request_id, action, project_id, user_id, None)


async def finish_action(db, uuid: str, request_id: str, message: str | None = None) -> None:
    await db.execute(Q.finish_action, uuid, request_id, message)


@contextlib.asynccontextmanager
async def event(db, uuid: str, request_id: str, name: str, host: str | None = None) -> AsyncIterator[None]:
    """Record one step of an action: its start, then Success or Error with the reason. Each
    role records its own steps; a step whose action is not found is not recorded."""
    row = await START_EVENT(db, uuid, request_id, name, host)
    event_id = None if row is None else row["id"]
    try:
        yield
    except BaseException as exc:
        if event_id is not None:
            await FINISH_EVENT(db, event_id, "Error", _error_text(exc))
        raise
    if event_id is not None:
        await FINISH_EVENT(db, event_id, "Success", None)


@contextlib.asynccontextmanager
async def events(db, uuids: list[str], request_id: str, name: str) -> AsyncIterator[None]:
    """The same step, recorded for each of several instances (a multi-create request): every
    start in one statement, every finish in one."""
    rows = await START_EVENT.each(db, [(uuid, request_id, name, None) for uuid in uuids])
    event_ids = [row["id"] for row in rows if row is not None]
    try:
        yield
    except BaseException as exc:
        if event_ids:
            error = _error_text(exc)
            await FINISH_EVENT.each(db, [(event_id, "Error", error) for event_id in event_ids])
        raise
    if event_ids:
        await FINISH_EVENT.each(db, [(event_id, "Success", None) for event_id in event_ids])


class Steps:
    """Steps of an action recorded once each, when they have ended, and together (`record`):
    for the steps inside a longer one that `event` records as it starts (the scheduler's
    decision inside the conductor's; a build's network, disks and spawn inside the build),
    whose starts nobody needs to see while they run. Each is one row, written once, where
    `event` writes it twice, and the event stream shows the action once for all of them.
    The same steps may be recorded for several instances (one request's). Their times are
    this process's clock, as Nova's events are their service's."""

    def __init__(self, db, uuids: str | list[str], request_id: str, host: str | None = None) -> None:
        self._db = db
        self._uuids = [uuids] if isinstance(uuids, str) else uuids
        self._request_id, self._host = request_id, host
        self._ended: list[tuple[datetime, datetime, str, str, str | None]] = []

    @contextlib.asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        """One step, kept with its outcome (Success, or Error with the reason) when it ends."""
        started = datetime.now(timezone.utc)
        outcome: tuple[str, str | None] = ("Success", None)
        try:
            yield
        except BaseException as exc:
            outcome = ("Error", _error_text(exc))
            raise
        finally:
            self._ended.append((started, datetime.now(timezone.utc), name, *outcome))

    async def record(self) -> None:
        """Every step that ended and is not recorded yet, in the order they started."""
        ended, self._ended = sorted(self._ended), []
        if ended:
            steps = msgspec.json.encode([
                {"event": name, "start_time": start, "finish_time": finish, "result": result, "traceback": tb}
                for start, finish, name, result, tb in ended]).decode()
            await RECORD_STEPS.each(self._db, [(uuid, self._request_id, self._host, steps) for uuid in self._uuids])


def _error_text(exc: BaseException) -> str:
    """What an event's traceback column says of the error that ended it."""
    detail = exc.message if isinstance(exc, errors.NovaAsyncError) else repr(exc)
    tb = "".join(traceback.format_exception(exc))[-4000:]
    return f"{detail}\n{tb}"


@contextlib.asynccontextmanager
async def _tx(db) -> AsyncIterator[asyncpg.Connection]:
    if isinstance(db, Pool):
        async with db.acquire() as conn, conn.transaction():
            yield conn
    else:
        async with db.transaction():
            yield db
