"""The typed client the compute API and compute hosts use to reach the volume service."""

from __future__ import annotations

from typing import Any

from nova_async.bus import Bus
from nova_async.common.context import RequestContext
from nova_async.volume import messages as m

TOPIC = "volume"
# Making a volume from an image copies the image: longer than a bus call's usual wait.
CREATE_TIMEOUT = 600.0


class VolumeClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def get(self, volume_id: str, project_id: str, is_admin: bool = False) -> m.VolumeInfo:
        reply = await self.bus.call(TOPIC, m.GetVolume(volume_id=volume_id, project_id=project_id,
                                                       is_admin=is_admin))
        assert isinstance(reply, m.VolumeInfo)
        return reply

    async def create(self, msg: m.CreateVolume, context: RequestContext | None = None) -> m.VolumeInfo:
        reply = await self.bus.call(TOPIC, msg, context=context, timeout=CREATE_TIMEOUT)
        assert isinstance(reply, m.VolumeInfo)
        return reply

    async def snapshot(self, msg: m.SnapshotVolume, context: RequestContext | None = None) -> m.SnapshotInfo:
        reply = await self.bus.call(TOPIC, msg, context=context)
        assert isinstance(reply, m.SnapshotInfo)
        return reply

    async def delete(self, volume_id: str, context: RequestContext | None = None) -> None:
        await self.bus.call(TOPIC, m.DeleteVolume(volume_id=volume_id), context=context)

    async def reserve(self, volume_id: str, instance_uuid: str, project_id: str, is_admin: bool = False,
                      context: RequestContext | None = None) -> m.AttachmentInfo:
        reply = await self.bus.call(TOPIC, m.ReserveVolume(volume_id=volume_id, instance_uuid=instance_uuid,
                                                           project_id=project_id, is_admin=is_admin),
                                    context=context)
        assert isinstance(reply, m.AttachmentInfo)
        return reply

    async def connect(self, attachment_id: str, connector: dict[str, Any], mountpoint: str = "",
                      context: RequestContext | None = None) -> m.ConnectionInfo:
        reply = await self.bus.call(TOPIC, m.ConnectAttachment(attachment_id=attachment_id, connector=connector,
                                                               mountpoint=mountpoint), context=context)
        assert isinstance(reply, m.ConnectionInfo)
        return reply

    async def complete(self, attachment_id: str, context: RequestContext | None = None) -> None:
        await self.bus.call(TOPIC, m.CompleteAttachment(attachment_id=attachment_id), context=context)

    async def begin_detach(self, attachment_id: str, context: RequestContext | None = None) -> None:
        await self.bus.call(TOPIC, m.BeginDetach(attachment_id=attachment_id), context=context)

    async def roll_detaching_back(self, attachment_id: str, context: RequestContext | None = None) -> None:
        await self.bus.call(TOPIC, m.RollDetachingBack(attachment_id=attachment_id), context=context)

    async def delete_attachment(self, attachment_id: str, context: RequestContext | None = None) -> None:
        await self.bus.call(TOPIC, m.DeleteAttachment(attachment_id=attachment_id), context=context)

    async def of_instance(self, instance_uuid: str) -> list[m.AttachmentRecord]:
        reply = await self.bus.call(TOPIC, m.VolumesOfInstance(instance_uuid=instance_uuid))
        assert isinstance(reply, m.AttachmentList)
        return list(reply.attachments)

    async def proxy(self, context: RequestContext, kind: str, action: str, id: str = "",
                    body: dict[str, Any] | None = None) -> m.VolumeProxyReply:
        """Nova's os-volumes / os-snapshots proxy (messages.VolumeProxyRequest), as `context`."""
        reply = await self.bus.call(TOPIC, m.VolumeProxyRequest(kind=kind, action=action, id=id, body=body or {}),
                                    context=context)
        assert isinstance(reply, m.VolumeProxyReply)
        return reply
