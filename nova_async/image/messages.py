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


class CreateImage(Message, frozen=True, kw_only=True):
    """A new, queued image owned by `project_id` (a server snapshot: compute fills it)."""

    name: str
    project_id: str
    disk_format: str = "qcow2"
    container_format: str = "bare"
    visibility: str = "private"
    min_disk: int = 0
    min_ram: int = 0
    properties: dict[str, str] = {}


class UploadImageFile(Message, frozen=True, kw_only=True):
    """Store the file at `path` (on this machine) as the queued image's data; answered with
    the image, now active."""

    image_id: str
    path: str


class DeleteImage(Message, frozen=True, kw_only=True):
    """Delete the image (a snapshot that failed); nothing happens when it is already gone."""

    image_id: str
