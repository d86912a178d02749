"""The typed client other roles use to reach the image service over the bus."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.bus.shared import SharedCalls
from nova_async.image import messages as m

TOPIC = "image"


class ImageClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._shared = SharedCalls(bus)   # a burst of boots asks for the same image

    async def get(self, image_id: str, project_id: str, is_admin: bool = False) -> m.ImageInfo:
        reply = await self._shared.call(TOPIC, m.GetImage(image_id=image_id, project_id=project_id,
                                                          is_admin=is_admin))
        assert isinstance(reply, m.ImageInfo)
        return reply

    async def create(self, msg: m.CreateImage) -> m.ImageInfo:
        reply = await self.bus.call(TOPIC, msg)
        assert isinstance(reply, m.ImageInfo)
        return reply

    async def upload_file(self, image_id: str, path: str) -> m.ImageInfo:
        # A long upload of a big disk: allow it the time a copy of gigabytes takes.
        reply = await self.bus.call(TOPIC, m.UploadImageFile(image_id=image_id, path=path), timeout=1800)
        assert isinstance(reply, m.ImageInfo)
        return reply

    async def upload_no_data(self, image_id: str) -> m.ImageInfo:
        reply = await self.bus.call(TOPIC, m.UploadNoData(image_id=image_id))
        assert isinstance(reply, m.ImageInfo)
        return reply

    async def delete(self, image_id: str) -> None:
        await self.bus.call(TOPIC, m.DeleteImage(image_id=image_id))

    async def list(self, msg: m.ListImages) -> list[m.ImageInfo]:
        reply = await self.bus.call(TOPIC, msg)
        assert isinstance(reply, m.ImageList)
        return reply.images

    async def set_properties(self, msg: m.SetImageProperties) -> m.ImageInfo:
        reply = await self.bus.call(TOPIC, msg)
        assert isinstance(reply, m.ImageInfo)
        return reply

    async def delete_as(self, image_id: str, project_id: str, is_admin: bool) -> None:
        await self.bus.call(TOPIC, m.DeleteImageAs(image_id=image_id, project_id=project_id, is_admin=is_admin))
