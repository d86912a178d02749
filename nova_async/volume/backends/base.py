"""What every volume backend does. Ids are the volume's and snapshot's uuids; sizes are GiB.

Every operation is idempotent, since the role repeats an interrupted one after a restart:
making what exists already replaces it only when it cannot be the finished result (a create
interrupted half-way is made again); deleting what is gone is fine. A new volume reads as
zeros without anything being written to it (sparse file, thin volume): nothing is ever
wiped with dd."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from nova_async.common import errors


class BackendError(errors.NovaAsyncError):
    """The backend could not do it; the message says why (the command and what it printed)."""


@dataclass(frozen=True)
class Connection:
    """How a host on this machine reaches a volume's bits."""

    path: str          # a file, or a block device such as /dev/<vg>/volume-<id>
    kind: str          # "file" | "block"
    format: str = "raw"
    driver_volume_type: str = "file"   # Cinder's name for the connection: "file" or "local"


class Backend(Protocol):
    name: str          # "file" | "lvm-thin", kept in volumes.backend

    async def setup(self) -> None:
        """At start: make the directory or check the volume group and make the thin pool."""

    async def create(self, volume_id: str, size_gb: int) -> None:
        """A new volume that reads as zeros."""

    async def create_from_image(self, volume_id: str, size_gb: int, image_path: str, image_format: str) -> None:
        """A volume holding the image's disk (converted to raw), then grown to size_gb.
        InvalidInput when the image's virtual size is larger than size_gb."""

    async def create_from_snapshot(self, volume_id: str, size_gb: int, snapshot_id: str) -> None:
        """A volume with the snapshot's bits, grown to size_gb."""

    async def clone(self, volume_id: str, size_gb: int, source_volume_id: str) -> None:
        """A volume with another volume's bits now, grown to size_gb."""

    async def extend(self, volume_id: str, size_gb: int) -> None:
        """Grow the volume to size_gb (also while a guest uses it; compute tells the guest)."""

    async def delete(self, volume_id: str) -> None:
        """Remove the volume's bits; a volume already gone is fine."""

    async def snapshot(self, snapshot_id: str, volume_id: str) -> None:
        """A point-in-time copy of the volume (reflink or thin snapshot where there is one,
        else a copy), made while a guest may be writing to it."""

    async def delete_snapshot(self, snapshot_id: str) -> None:
        """Remove the snapshot's bits; gone already is fine."""

    async def image_virtual_size(self, image_path: str, image_format: str) -> int:
        """The virtual size of an image file in bytes (qemu-img info), for "as big as the image"."""

    def connection(self, volume_id: str) -> Connection:
        """Where the volume's bits are, for a host on this machine."""

    async def volume_ids(self) -> set[str]:
        """The ids of the volumes the backend holds (for recovery: bits without a row)."""

    async def snapshot_ids(self) -> set[str]:
        """The ids of the snapshots the backend holds."""

    async def capacity_gb(self) -> tuple[int, int]:
        """(total, free) GiB, as Cinder's pool stats report them."""
