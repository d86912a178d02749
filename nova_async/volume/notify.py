"""The volume role's notifications (volume.create.start, volume.attach.end, …): the same
Notification envelope on the bus as compute's, with the volume in the payload."""

from __future__ import annotations

from typing import Any

import structlog

from nova_async.bus import Bus, Notification

log = structlog.get_logger("volume")


async def notify(bus: Bus, event_type: str, volume_id: str, **payload: Any) -> None:
    """Tell listeners; a listener never fails the work."""
    try:
        await bus.publish(Notification(event_type=event_type, payload={"volume_id": volume_id, **payload}))
    except Exception:
        log.exception("notification failed", event_type=event_type)
