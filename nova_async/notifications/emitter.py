"""Sending a versioned notification: Nova's envelope around a payload, onto the bus.

Every notification leaves through `Emitter.emit`, which fills the envelope as Nova's
(oslo.messaging's) notifier does: `priority` INFO, or ERROR for an `.error` event;
`publisher_id` `<binary>:<host>`; a uuid4 `message_id`; `timestamp` in oslo's format (UTC, no
zone, microseconds). The bus takes it from there: to this process's listeners, and over
RabbitMQ to the `nova` exchange as oslo.messaging publishes (bus/amqp.py).

`InstanceNotifier` is compute's: it reads the instance as it is now and builds the payload
Nova uses for that event, and says `instance.update` first whenever the instance's vm_state
or task_state differs from the last one this process told of (Nova says it at each save of a
changed state; ours are written in many places, so it is said where they are observed)."""

from __future__ import annotations

import collections
import datetime as dt
import uuid as uuidlib
from typing import Any

import structlog

from nova_async.bus import Bus, Notification
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.notifications import payloads

log = structlog.get_logger("notifications")

Q = queries("notifications")
REMEMBERED = 10_000   # instances whose last told state is kept, to tell instance.update

# The payload Nova 34 sends for each instance action (the word after `instance.`); any other
# action's is InstanceActionPayload.
ACTION_PAYLOADS = {
    "create": "InstanceCreatePayload",
    "rebuild": "InstanceActionRebuildPayload",
    "rebuild_scheduled": "InstanceActionRebuildPayload",
    "resize_prep": "InstanceActionResizePrepPayload",
    "snapshot": "InstanceActionSnapshotPayload",
    "rescue": "InstanceActionRescuePayload",
    "volume_attach": "InstanceActionVolumePayload",
    "volume_detach": "InstanceActionVolumePayload",
    "volume_extend": "InstanceActionVolumePayload",
}


def timestamp(now: dt.datetime | None = None) -> str:
    """oslo.messaging's: str() of a naive UTC datetime ("2026-11-27 09:41:07.123456")."""
    return str((now or dt.datetime.now(dt.UTC)).replace(tzinfo=None))


def priority_of(event_type: str) -> str:
    return "ERROR" if event_type.endswith(".error") else "INFO"


class Emitter:
    """Notifications from one publisher (`nova-compute:edge-1`, `nova-api:ctl`, …)."""

    def __init__(self, bus: Bus, binary: str, host: str, *, enabled: bool = True) -> None:
        self.bus = bus
        self.publisher_id = f"{binary}:{host}"
        self.enabled = enabled

    def heard(self) -> bool:
        """Whether a notification sent now would reach anyone (so is worth building)."""
        return self.enabled and self.bus.heard()

    async def emit(self, event_type: str, payload: dict[str, Any], *, priority: str | None = None) -> None:
        """Send one; a failure to send is logged, never the caller's failure."""
        if not self.heard():
            return
        note = Notification(event_type=event_type, payload=payload, priority=priority or priority_of(event_type),
                            publisher_id=self.publisher_id, message_id=str(uuidlib.uuid4()),
                            timestamp=timestamp())
        try:
            await self.bus.publish(note)
        except Exception:
            log.exception("notification failed", event_type=event_type)


class InstanceNotifier:
    """A compute host's instance notifications: the payload built from the instance's row."""

    def __init__(self, emitter: Emitter, pool: Pool) -> None:
        self.emitter = emitter
        self.pool = pool
        self._told: collections.OrderedDict[str, tuple[str | None, str | None]] = collections.OrderedDict()

    async def notify(self, event_type: str, instance_uuid: str, **details: Any) -> None:
        """`instance.<action>.<phase>` about `instance_uuid`. `details` are what the caller
        knows beyond the row: `reason` (an .error's fault), `image_id` (a snapshot's),
        `volume_id` (a volume's), `request_id`; others are ignored."""
        if not self.emitter.heard():
            return
        try:
            row = await self.pool.fetchrow(Q.instance, uuidlib.UUID(instance_uuid))
        except Exception:
            log.exception("notification failed: the instance could not be read", event_type=event_type)
            return
        if row is None:  # gone (purged): what is known, in the same shape
            row = {"uuid": instance_uuid, "vm_state": None, "task_state": None, "notification_bdms": []}
        row = dict(row)
        bdms = row.pop("notification_bdms", None) or []
        await self._state_changed(row, bdms, details.get("request_id"))
        _, action, phase = (event_type.split(".", 2) + ["", ""])[:3]
        name = ACTION_PAYLOADS.get(action, "InstanceActionPayload")
        extra: dict[str, Any] = {}
        if name == "InstanceActionSnapshotPayload":
            extra["snapshot_image_id"] = details.get("image_id")
        elif name == "InstanceActionRescuePayload":
            extra["rescue_image_ref"] = row.get("rescue_image_ref")
        elif name == "InstanceActionVolumePayload":
            extra["volume_id"] = details.get("volume_id")
        fault = None
        if phase == "error":
            fault = payloads.fault(str(details.get("reason") or "unknown error"),
                                   exception=details.get("exception") or "NovaAsyncError",
                                   module="nova_async.compute", function=action)
        payload = payloads.instance(row, name=name, bdms=bdms, fault=fault, request_id=details.get("request_id"),
                                    **extra)
        await self.emitter.emit(event_type, payload)
        if event_type == "instance.delete.end":
            self._told.pop(instance_uuid, None)

    async def _state_changed(self, row: dict[str, Any], bdms: list[Any], request_id: str | None) -> None:
        key = str(row["uuid"])
        now = (row.get("vm_state"), row.get("task_state"))
        before = self._told.get(key)
        if before == now or now[0] is None:
            return
        self._told[key] = now
        self._told.move_to_end(key)
        if len(self._told) > REMEMBERED:
            self._told.popitem(last=False)
        old_state, old_task_state = before if before is not None else (None, None)
        payload = payloads.instance(row, name="InstanceUpdatePayload", bdms=bdms, request_id=request_id,
                                    state_update=payloads.state_update(row, old_state=old_state,
                                                                       old_task_state=old_task_state))
        await self.emitter.emit("instance.update", payload)
