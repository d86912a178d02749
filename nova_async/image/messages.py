"""What other roles may ask the image service over the bus."""

from __future__ import annotations

from nova_async.bus.messages import Message


class GetImage(Message, frozen=True, kw_only=True):
    """Raise NotFound unless the image exists and the caller's project may use it."""

    REDELIVERABLE = True
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
    created_at: str = ""      # ISO 8601, for views that show them (the compute images API)
    updated_at: str = ""


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


class UploadNoData(Message, frozen=True, kw_only=True):
    """Make the queued image active with no data (size 0), as Nova does for the image of a
    volume-backed server, whose disks are volume snapshots its properties name. Answered
    with the image."""

    image_id: str


class DeleteImage(Message, frozen=True, kw_only=True):
    """Delete the image (a snapshot that failed); nothing happens when it is already gone."""

    image_id: str


class ListImages(Message, frozen=True, kw_only=True):
    """The images `project_id` may see, newest first, filtered as the compute API's image
    list asks (each filter left empty filters nothing): answered with an ImageList."""

    project_id: str
    is_admin: bool = False
    name: str = ""
    status: list[str] = []
    min_ram: int = 0
    min_disk: int = 0
    properties: dict[str, str] = {}
    changed_since: str = ""   # ISO 8601: only images changed at or after it
    marker: str = ""
    limit: int | None = None


class ImageList(Message, frozen=True, kw_only=True):
    images: list[ImageInfo]


class SetImageProperties(Message, frozen=True, kw_only=True):
    """Change an image's properties as its owner (or an admin): `set` are added or replaced,
    `remove` taken away (NotFound for one it does not have), and with `replace` every other
    property goes. Answered with the image."""

    image_id: str
    project_id: str
    is_admin: bool = False
    set: dict[str, str] = {}
    remove: list[str] = []
    replace: bool = False


class DeleteImageAs(Message, frozen=True, kw_only=True):
    """Delete the image as `project_id` would through the image API: NotFound when it cannot
    see it, Forbidden when it may not delete it (another's, or protected)."""

    image_id: str
    project_id: str
    is_admin: bool = False
