"""What other roles may ask the image service over the bus."""

from __future__ import annotations

from nova_async.bus.messages import Message


class GetImage(Message, frozen=True, kw_only=True):
    """Raise NotFound unless the image exists and the caller's project may use it."""

    image_id: str
    project_id: str
    is_admin: bool = False


class ImageInfo(Message, frozen=True, kw_only=True):
    id: str
    name: str
    status: str
    size: int | None
    disk_format: str | None
    container_format: str | None
    min_disk: int
    min_ram: int
    properties: dict[str, str]
    # Where the bits are, for a compute host on this machine; empty until uploaded.
    path: str = ""
