"""What the event stream (event_stream.py) sends: its events rendered from `server_events`
rows (0069), who may see each, and the cursor a client reconnects with.

A server event shows the fields GET /servers shows for them, through the same code
(server_views: status, addresses, fault details), with the values the change committed.
Action and fault events likewise, with what was written (the triggers copy it).

The cursor is the position after an event in every cell: `v1.` then, per cell in the order of
their uuids, the first 8 hex digits of the cell's uuid, `-`, and its position there, e.g.
`v1.00000000-12.5f1c9e0a-1042`. Opaque to clients; parsed strictly (a 400 otherwise)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from nova_async.api import server_views
from nova_async.bus import Notification
from nova_async.common import errors
from nova_async.common.timeutil import iso, iso_micro
from nova_async.db.queries import queries

Q = queries("server_events")

_CURSOR = re.compile(r"v1(?:\.[0-9a-f]{8}-(?:0|[1-9][0-9]{0,17}))+")
_CURSOR_MAX = 4096
OLDEST = "oldest"


def cell_key(cell_uuid: str) -> str:
    return cell_uuid.replace("-", "")[:8]


def format_cursor(positions: dict[str, int]) -> str:
    """`positions`: cell uuid → the last position seen there."""
    return "v1." + ".".join(f"{cell_key(u)}-{positions[u]}" for u in sorted(positions))


def parse_cursor(raw: str) -> dict[str, int]:
    """A cursor as cell key → position; InvalidInput (400) for anything not one."""
    if len(raw) > _CURSOR_MAX or not _CURSOR.fullmatch(raw):
        raise errors.InvalidInput(f"Invalid event cursor {raw[:100]!r}: give the id of an event this stream "
                                  f"sent (Last-Event-ID or since=), or since={OLDEST}.")
    found: dict[str, int] = {}
    for part in raw.split(".")[1:]:
        key, _, seq = part.partition("-")
        if key in found:
            raise errors.InvalidInput(f"Invalid event cursor {raw[:100]!r}: cell {key} is named twice.")
        found[key] = int(seq)
    return found


@dataclass(frozen=True)
class Audience:
    """Who a stream is for: what GET /servers would show them."""
    project_id: str | None      # None: every project (an admin's all_tenants)
    server_id: str | None       # only this server's events
    is_admin: bool

    notifications: bool = False  # also the versioned notifications (`notifications=1`)

    def sees(self, event: Event) -> bool:
        return ((self.project_id is None or event.project_id == self.project_id)
                and (self.server_id is None or event.instance_uuid == self.server_id))

    def hears(self, note: Notification) -> bool:
        """A versioned notification, by the same rule: an instance's (or a volume's) goes to
        its project's streams, a service's to admins only."""
        if not self.notifications:
            return False
        data = note.data
        if note.event_type.startswith("service."):
            return self.is_admin and self.server_id is None
        if self.server_id is not None and data.get("uuid") != self.server_id:
            return False
        return self.project_id is None or data.get("tenant_id") == self.project_id


@dataclass
class Event:
    """One row of server_events, rendered."""
    cell: str
    seq: int
    kind: str                   # the SSE event type: server, action or fault
    instance_uuid: str
    project_id: str
    data: dict[str, Any]
    admin_data: dict[str, Any] = field(default_factory=dict)   # fields only admins see
    _json: dict[bool, str] = field(default_factory=dict, repr=False)

    def json(self, is_admin: bool) -> str:
        """The data line, encoded once per kind of reader however many streams send it."""
        text = self._json.get(is_admin)
        if text is None:
            data = {**self.data, **self.admin_data} if is_admin else self.data
            text = self._json[is_admin] = msgspec.json.encode(data).decode()
        return text


def frame(cursor: str, kind: str, data_json: str) -> str:
    return f"id: {cursor}\nevent: {kind}\ndata: {data_json}\n\n"


def notification_frame(note: Notification) -> str:
    """A versioned notification (its whole envelope): with no `id:`, so a client's cursor
    stays where the last server event left it (notifications are live only, never replayed)."""
    return f"event: notification\ndata: {msgspec.json.encode(note.envelope()).decode()}\n\n"


def reset_frame(cursor: str, reason: str) -> str:
    return frame(cursor, "reset", msgspec.json.encode({"reason": reason}).decode())


def keepalive(cursor: str | None) -> str:
    """A comment, and the cursor when it moved without an event for this client: an `id:`
    with no data sets EventSource's lastEventId without an event (the SSE processing model)."""
    return f": keepalive\nid: {cursor}\n\n" if cursor else ": keepalive\n\n"


def render(cell_uuid: str, rows: list[Any]) -> list[Event]:
    """Events of `rows` (sql/queries/server_events.sql `read`) of one cell, in their order."""
    out = []
    for r in rows:
        kind = r["kind"]
        if kind in ("server", "deleted"):
            data, admin_data = _server(r)
            kind = "server"
        elif kind == "action":
            data, admin_data = _action(r), {}
        else:
            data, admin_data = _fault(r)
        out.append(Event(cell=cell_uuid, seq=r["seq"], kind=kind, instance_uuid=r["instance_uuid"],
                         project_id=r["project_id"], data=data, admin_data=admin_data))
    return out


def _server(r: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    if r["deleted"]:
        return {"id": r["instance_uuid"], "tenant_id": r["project_id"], "deleted": True}, {}
    data = {
        "id": r["instance_uuid"], "name": r["name"], "tenant_id": r["project_id"],
        "status": server_views.status(r["vm_state"], r["task_state"]),
        "OS-EXT-STS:vm_state": r["vm_state"], "OS-EXT-STS:task_state": r["task_state"],
        "OS-EXT-STS:power_state": r["power_state"],
        "addresses": server_views.addresses(r["network_info"] or []),
        "flavor": {"original_name": r["flavor_name"]},
        "image": {"id": r["image_ref"]} if r["image_ref"] else "",
        "locked": r["locked"], "updated": iso(r["updated"]), "created": iso(r["created"]), "deleted": False,
    }
    return data, {"OS-EXT-SRV-ATTR:host": r["host"]}


def _action(r: Any) -> dict[str, Any]:
    return {"server_id": r["instance_uuid"], "request_id": r["request_id"], "action": r["action"],
            "start_time": iso_micro(r["start_time"]), "finish_time": iso_micro(r["finish_time"]),
            "message": r["message"], "event": r["event"], "result": r["result"]}


def _fault(r: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    data = {"server_id": r["instance_uuid"], "code": r["code"], "message": r["message"],
            "created": iso(r["created"])}
    details = {"details": r["details"]}
    if server_views.fault_details_shown(r["code"], is_admin=False):
        return {**data, **details}, {}
    return data, details
