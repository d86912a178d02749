"""The volume role's notifications (volume.create.start, volume.attach.end, …): the same
versioned envelope on the bus as compute's, from publisher `cinder-volume:<host>` (our volume
service stands in for Cinder), the volume in a payload of our own (payloads.volume: Nova has no
versioned object for these, and Cinder's are unversioned)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

from nova_async.notifications import payloads
from nova_async.notifications.emitter import Emitter

if TYPE_CHECKING:
    from nova_async.volume.state import VolumeApi


async def notify(api: VolumeApi, event_type: str, volume_id: str, **fields: Any) -> None:
    """Tell listeners; a listener never fails the work (Emitter.emit logs a failure)."""
    emitter = Emitter(api.bus, "cinder-volume", api.settings.compute.host or socket.gethostname(),
                      enabled=api.settings.notifications.enabled)
    if "error" in fields:   # the reason a step failed, under the name the .error events use
        fields["reason"] = fields.pop("error")
    await emitter.emit(event_type, payloads.volume(volume_id, **fields))
