"""An instance's three states, typed: `vm_state` (what it is), `task_state` (what is being
done to it) and `power_state` (what its guest was last seen doing), with Nova's values.

They live in one shared module because every role reads or writes them: the API shows them
(and derives a server's `status` from the first two), the conductor and compute move
instances through them. The members equal the strings and integers Nova uses and our
columns hold, so they go into SQL parameters and JSON as those values, and a row's plain
string compares equal to its member. Only the values nova-async reaches or shows are listed.
"""

from __future__ import annotations

import enum


class VmState(enum.StrEnum):
    ACTIVE = "active"
    BUILDING = "building"
    PAUSED = "paused"
    SUSPENDED = "suspended"
    STOPPED = "stopped"
    RESCUED = "rescued"
    RESIZED = "resized"
    SOFT_DELETED = "soft-delete"
    DELETED = "deleted"
    ERROR = "error"
    SHELVED = "shelved"
    SHELVED_OFFLOADED = "shelved_offloaded"


class TaskState(enum.StrEnum):
    # a boot
    SCHEDULING = "scheduling"
    NETWORKING = "networking"
    BLOCK_DEVICE_MAPPING = "block_device_mapping"
    SPAWNING = "spawning"
    # a delete
    DELETING = "deleting"
    # power actions
    REBOOTING = "rebooting"
    REBOOT_PENDING = "reboot_pending"
    REBOOT_STARTED = "reboot_started"
    REBOOTING_HARD = "rebooting_hard"
    REBOOT_PENDING_HARD = "reboot_pending_hard"
    REBOOT_STARTED_HARD = "reboot_started_hard"
    POWERING_OFF = "powering-off"
    POWERING_ON = "powering-on"
    PAUSING = "pausing"
    UNPAUSING = "unpausing"
    SUSPENDING = "suspending"
    RESUMING = "resuming"
    # a rebuild
    REBUILDING = "rebuilding"
    REBUILD_BLOCK_DEVICE_MAPPING = "rebuild_block_device_mapping"
    REBUILD_SPAWNING = "rebuild_spawning"
    # a resize
    MIGRATING = "migrating"
    RESIZE_PREP = "resize_prep"
    RESIZE_MIGRATING = "resize_migrating"
    RESIZE_MIGRATED = "resize_migrated"
    RESIZE_FINISH = "resize_finish"
    RESIZE_REVERTING = "resize_reverting"
    # a snapshot (createImage)
    IMAGE_SNAPSHOT = "image_snapshot"
    IMAGE_PENDING_UPLOAD = "image_pending_upload"
    IMAGE_UPLOADING = "image_uploading"
    # the admin password being set
    PASSWORD = "password"
    # shelve: the root disk written into an image, then the guest taken off its host
    SHELVING = "shelving"
    SHELVING_IMAGE_PENDING_UPLOAD = "shelving_image_pending_upload"
    SHELVING_IMAGE_UPLOADING = "shelving_image_uploading"
    SHELVING_OFFLOADING = "shelving_offloading"
    UNSHELVING = "unshelving"
    # rescue: the guest booted from a rescue disk, its own root disk second
    RESCUING = "rescuing"
    UNRESCUING = "unrescuing"


class PowerState(enum.IntEnum):
    """Nova's power_state: an integer in the database and in `OS-EXT-STS:power_state`, so an
    IntEnum (a StrEnum would change both)."""

    NOSTATE = 0
    RUNNING = 1
    PAUSED = 3
    SHUTDOWN = 4
    CRASHED = 6
    SUSPENDED = 7

    @property
    def label(self) -> str:
        """Nova's name for it (its power_state.STATE_MAP), as diagnostics show it."""
        return "pending" if self is PowerState.NOSTATE else self.name.lower()
