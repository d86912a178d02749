"""What other roles may ask the volume service over the bus (client.py sends them)."""

from __future__ import annotations

from typing import Any

from nova_async.bus.messages import Message


class VolumeInfo(Message, frozen=True, kw_only=True):
    """A volume as the compute API and compute hosts need it."""

    id: str
    project_id: str
    name: str = ""
    size: int                      # GiB
    status: str
    bootable: bool = False
    multiattach: bool = False
    availability_zone: str = "nova"
    image_id: str = ""             # the image it was made from, if any
    image_metadata: dict[str, str] = {}   # volume_image_metadata: that image's properties


class GetVolume(Message, frozen=True, kw_only=True):
    """The volume, if `project_id` may see it (an admin sees every volume); NotFound else."""

    volume_id: str
    project_id: str
    is_admin: bool = False


class CreateVolume(Message, frozen=True, kw_only=True):
    """A volume for an instance being built (block_device_mapping_v2 with destination
    volume): blank, or from an image or a snapshot. Answered once it is `available` (or with
    the error that put it in `error`, after which it is deleted again). Counted against the
    project's volume quota like any other volume (409 over quota)."""

    project_id: str
    user_id: str
    size: int                      # GiB; 0 with an image: as big as the image needs
    name: str = ""
    source_type: str = "blank"     # blank | image | snapshot
    source_id: str = ""            # the image or snapshot id
    instance_uuid: str = ""        # for the log and the notification
    availability_zone: str = "nova"


class SnapshotVolume(Message, frozen=True, kw_only=True):
    """A snapshot of the volume as `project_id` (the compute API's createImage of a
    volume-backed server): taken even while the volume is in use (Cinder's force), made in
    the background; answered at once with the snapshot, `creating`."""

    volume_id: str
    project_id: str
    user_id: str
    name: str = ""
    description: str = ""


class SnapshotInfo(Message, frozen=True, kw_only=True):
    id: str
    volume_id: str
    status: str
    size: int


class DeleteVolume(Message, frozen=True, kw_only=True):
    """Delete a volume that has no attachment left (delete_on_termination). Idempotent:
    a volume already gone is fine."""

    volume_id: str


class ReserveVolume(Message, frozen=True, kw_only=True):
    """Cinder's attachment create without a connector: the volume goes available → reserved
    and an attachment for `instance_uuid` is made. NotFound when `project_id` may not see
    it; Conflict (409) when it is not available (in use, being deleted, reserved by a racing
    attach). Answered with AttachmentInfo."""

    volume_id: str
    instance_uuid: str
    project_id: str
    is_admin: bool = False


class AttachmentInfo(Message, frozen=True, kw_only=True):
    attachment_id: str
    volume: VolumeInfo


class ConnectAttachment(Message, frozen=True, kw_only=True):
    """Cinder's attachment update: the compute host gives its connector (host name, and what
    it can attach) and the device name the guest will see; the volume goes reserved →
    attaching and the answer (ConnectionInfo) says how to reach its bits."""

    attachment_id: str
    connector: dict[str, Any]
    mountpoint: str = ""           # "/dev/vdb"


class ConnectionInfo(Message, frozen=True, kw_only=True):
    """How a host reaches a volume's bits: a file or a block device on that host.
    `as_cinder()` is the shape kept in attachments and block device mappings."""

    driver_volume_type: str        # "file" (file backend) or "local" (a block device: lvm-thin)
    device_path: str
    disk_kind: str                 # "file" | "block": the libvirt <disk type=...>
    format: str = "raw"
    volume_id: str
    access_mode: str = "rw"

    def as_cinder(self) -> dict[str, Any]:
        return {"driver_volume_type": self.driver_volume_type, "serial": self.volume_id,
                "data": {"device_path": self.device_path, "disk_kind": self.disk_kind,
                         "format": self.format, "volume_id": self.volume_id,
                         "access_mode": self.access_mode}}


class CompleteAttachment(Message, frozen=True, kw_only=True):
    """The guest has the disk: attachment attached, volume attaching → in-use (os-complete)."""

    attachment_id: str


class BeginDetach(Message, frozen=True, kw_only=True):
    """A detach starts: volume in-use → detaching. Conflict when it is not attached."""

    attachment_id: str


class RollDetachingBack(Message, frozen=True, kw_only=True):
    """A detach failed and the guest still has the disk: volume detaching → in-use."""

    attachment_id: str


class DeleteAttachment(Message, frozen=True, kw_only=True):
    """The host has let go of the device (or never had it): the attachment is deleted and the
    volume is available again when it has no other attachment. Idempotent."""

    attachment_id: str


class VolumesOfInstance(Message, frozen=True, kw_only=True):
    """The attachments an instance holds (for recovery and clean-up). Answered with
    AttachmentList."""

    instance_uuid: str


class AttachmentRecord(Message, frozen=True, kw_only=True):
    attachment_id: str
    volume_id: str
    status: str                    # the attachment's: reserved, attaching, attached, detaching…
    volume_status: str
    connection_info: dict[str, Any] = {}


class AttachmentList(Message, frozen=True, kw_only=True):
    attachments: list[AttachmentRecord] = []


class VolumeProxyRequest(Message, frozen=True, kw_only=True):
    """Nova's deprecated os-volumes / os-snapshots proxy, answered by the Cinder API's own
    domain code with the caller's context (the bus context). `kind`: volume | snapshot;
    `action`: list | show | create | delete (show and delete by `id`); `body`: what Cinder's
    create takes (name, description, size, snapshot_id, volume_type, metadata,
    availability_zone for a volume; volume_id, name, description, force for a snapshot)."""

    kind: str
    action: str
    id: str = ""
    body: dict[str, Any] = {}


class ProxiedAttachment(Message, frozen=True, kw_only=True):
    server_id: str
    device: str | None = None


class ProxiedVolume(Message, frozen=True, kw_only=True):
    """A volume as Nova's proxy reads Cinder's view of it."""

    id: str
    status: str
    size: int
    availability_zone: str
    created_at: str
    name: str | None = None
    description: str | None = None
    volume_type: str | None = None
    snapshot_id: str | None = None
    metadata: dict[str, str] = {}
    attachments: list[ProxiedAttachment] = []


class ProxiedSnapshot(Message, frozen=True, kw_only=True):
    id: str
    volume_id: str
    status: str
    size: int
    created_at: str
    name: str | None = None
    description: str | None = None


class VolumeProxyReply(Message, frozen=True, kw_only=True):
    volumes: list[ProxiedVolume] = []
    snapshots: list[ProxiedSnapshot] = []
