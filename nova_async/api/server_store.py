"""Servers as the servers resource reads and changes them (handlers/servers.py), apart from
HTTP: a page of the list across every cell, one server as show answers it, and an update of
its name, hostname, description or access addresses. Creating and deleting have their own
modules (server_create.py, server_delete.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from nova_async.api import lookup
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("servers")
IQ = queries("instances")
# A summary list reads three columns, not whole rows: a request spec, user data and network
# info are most of a row's bytes, and a poller listing a thousand servers reads them all.
_LIST_SUMMARY = Q.list.format(columns="i.uuid, i.display_name, i.created_at")
_LIST_DETAIL = Q.list.format(columns="i.*, f.message AS fault_message, f.code AS fault_code, "
                                     "f.details AS fault_details, f.created_at AS fault_created_at")
_UPDATABLE = ("name", "hostname", "description", "accessIPv4", "accessIPv6")


@dataclass(frozen=True)
class ListFilter:
    """What a list request asks for, checked: None means "any"."""
    project_id: str | None
    name: str | None
    vm_states: Any
    reservation_id: str | None
    host: str | None
    limit: int
    marker: str | None          # as the request wrote it
    since: datetime | None
    before: datetime | None
    flavor: str | None = None   # a flavor id
    image: str | None = None    # an image id
    ip: str | None = None       # a regex on fixed IPs, anchored at their start
    task_states: Any = None     # with vm_states, from a status that names a task (REBOOT)


async def listing(state: ApiState, f: ListFilter, *, detail: bool) -> list[asyncpg.Record]:
    """A page of servers, newest first, from every cell; whole rows with their latest fault
    when `detail`, else the columns of a summary. 400 for a marker no cell has or a name
    that is not a regular expression."""
    marker_at = marker_uuid = None
    if f.marker is not None:
        marker_id = parse_uuid(f.marker)
        cell = await state.cells.of_instance(marker_id) if marker_id else None
        marker = await cell.pool.fetchrow(Q.marker, marker_id) if cell else None
        if marker is None:
            raise errors.InvalidInput(f"marker [{f.marker}] not found")
        marker_at, marker_uuid = marker["created_at"], marker["uuid"]
    try:
        # Every cell's first page, merged newest first: the same order each cell sorts by.
        rows = await state.cells.gather(_LIST_DETAIL if detail else _LIST_SUMMARY, f.project_id, f.name,
                                        f.vm_states, f.reservation_id, f.host, f.limit, marker_at, marker_uuid,
                                        f.since, f.before, f.flavor, f.image, f.ip, f.task_states)
    except asyncpg.InvalidRegularExpressionError:
        raise errors.InvalidInput(f"Invalid regular expression in a filter: name {f.name!r}, "
                                  f"ip {f.ip!r}") from None
    rows.sort(key=lambda r: (r["created_at"], r["uuid"]), reverse=True)
    # A server being moved between cells is in both for a moment: listed once.
    unique = list({r["uuid"]: r for r in rows}.values())
    return unique[:f.limit]


async def show(state: ApiState, ctx: RequestContext, server_id: str) -> dict[str, Any]:
    """The server as show answers it (its row, latest fault and groups), or a 404."""
    _, row = await lookup.visible_instance(state, ctx, server_id, Q.get_with_fault)
    return await lookup.with_groups(state, row)


async def changeable(state: ApiState, ctx: RequestContext, server_id: str) -> tuple[Pool, asyncpg.Record]:
    """(its cell's pool, its row) for a server the caller may update: 404 when not visible,
    409 when locked and the caller is no admin. Apart from `update` because these answers
    come before the body's 400s."""
    pool, row = await lookup.visible_instance(state, ctx, server_id)
    if row["locked"] and not ctx.is_admin:
        raise errors.Conflict(f"Instance {server_id} is locked.")
    return pool, row


def auto_disk_config(request: dict[str, Any]) -> bool | None:
    """A create, update or rebuild request's OS-DCF:diskConfig as the column keeps it (None: not given)."""
    given = request.get("OS-DCF:diskConfig")
    return None if given is None else given == "AUTO"


async def update(state: ApiState, pool: Pool, server_id: str, uuid: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Set the fields `changes` names (others stay); the server as show answers it."""
    if "pinned_availability_zone" in changes:
        await _pin(state, pool, uuid, changes["pinned_availability_zone"])
    await pool.execute(Q.update, uuid, *(changes.get(k) for k in _UPDATABLE), *(k in changes for k in _UPDATABLE),
                       auto_disk_config(changes))
    row = await lookup.shown(state, pool, uuid)
    if row is None:
        raise lookup.not_found(server_id)
    return row


async def _pin(state: ApiState, pool: Pool, uuid: str, zone: str | None) -> None:
    """2.104: unpin (None), or pin to the zone the server is in now, as Nova: a pinned server
    is unpinned before it can be pinned elsewhere (409)."""
    row = await pool.fetchrow(IQ.get, uuid)
    if row is None or zone == row["availability_zone"]:
        return
    if zone is not None:
        if row["availability_zone"] is not None:
            raise errors.Conflict("Cannot change pinned availability zone directly. Unpin first by setting "
                                  "pinned_availability_zone to null.")
        current = (await state.pool.fetchval(Q.host_zone, row["host"]) if row["host"] else None) or "nova"
        if zone != current:
            raise errors.Conflict(f"Server can only be pinned to its current availability zone '{current}', "
                                  f"but '{zone}' was requested.")
    await pool.execute(Q.pin_zone, uuid, zone)
