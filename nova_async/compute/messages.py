"""Work sent to one compute host (topic `compute.<host>`)."""

from __future__ import annotations

import enum

import msgspec

from nova_async.bus.messages import Message
from nova_async.common.states import TaskState
from nova_async.scheduler.messages import Destination


class BuildAndRunInstance(Message, frozen=True, kw_only=True):
    """Build the instance (row holds flavor, image, requested networks) on this host's node.
    Its placement allocation is already claimed against `node`'s provider."""

    instance_uuid: str
    node: str
    alternates: list[Destination] = []


class TerminateInstance(Message, frozen=True, kw_only=True):
    """Destroy the guest and free everything it held. Idempotent."""

    instance_uuid: str


class PowerOp(enum.StrEnum):
    """A change of a guest's power state, named as in the instance-action log."""

    REBOOT = "reboot"
    STOP = "stop"
    START = "start"
    PAUSE = "pause"
    UNPAUSE = "unpause"
    SUSPEND = "suspend"
    RESUME = "resume"


class RebootType(enum.StrEnum):
    SOFT = "SOFT"
    HARD = "HARD"


# The task_state an instance holds while each operation is under way: the API sets it (so
# no second action can start), compute clears it when the guest got there or failed to.
_TASK_STATES = {PowerOp.STOP: TaskState.POWERING_OFF, PowerOp.START: TaskState.POWERING_ON,
                PowerOp.PAUSE: TaskState.PAUSING, PowerOp.UNPAUSE: TaskState.UNPAUSING,
                PowerOp.SUSPEND: TaskState.SUSPENDING, PowerOp.RESUME: TaskState.RESUMING}
_REBOOT_TASK_STATES = {RebootType.SOFT: TaskState.REBOOT_STARTED, RebootType.HARD: TaskState.REBOOT_STARTED_HARD}
POWER_TASK_STATES = frozenset(_TASK_STATES.values()) | frozenset(_REBOOT_TASK_STATES.values())


class PowerAction(Message, frozen=True, kw_only=True):
    """Reboot, stop, start, pause, unpause, suspend or resume the guest. The instance
    already holds `task_state` (the API set it); compute ends it."""

    instance_uuid: str
    action: PowerOp
    reboot_type: RebootType = RebootType.SOFT

    @property
    def task_state(self) -> TaskState:
        if self.action is PowerOp.REBOOT:
            return _REBOOT_TASK_STATES[self.reboot_type]
        return _TASK_STATES[self.action]


class RebuildInstance(Message, frozen=True, kw_only=True):
    """Rebuild the guest from the image the row now names (the API changed it, and set
    task_state 'rebuilding'); ports and claims stay, disks and the guest are made anew, but
    for the ephemeral disk when `preserve_ephemeral` (the rebuild action's option of that
    name: the data a user keeps there survives a rebuild of the root disk, as in Nova).

    1.1: preserve_ephemeral (1.0 hosts make every disk anew)."""

    VERSION = "1.1"
    ADDED_IN = {"preserve_ephemeral": "1.1"}

    instance_uuid: str
    preserve_ephemeral: bool = False


class ResizeStepName(enum.StrEnum):
    """The steps of a resize, each run on the host named (as Nova splits them)."""

    RESIZE = "resize"              # source: stop the guest, keep the old disks, grow them
    FINISH = "finish"              # destination: the guest with the new flavor
    CONFIRM = "confirm"            # source: forget the old flavor, its disks and allocation
    REVERT = "revert"              # destination: remove the resized guest
    FINISH_REVERT = "finish_revert"  # source: the old disks, flavor and allocation back


class ResizeStep(Message, frozen=True, kw_only=True):
    """One step of the resize recorded as migration `migration_uuid`."""

    instance_uuid: str
    migration_uuid: str
    step: ResizeStepName


class SnapshotInstance(Message, frozen=True, kw_only=True):
    """createImage: write the instance's root disk into image `image_id` (queued, made by the
    API, which set task_state 'image_snapshot'). createBackup also says how many backups of
    its type to keep (`rotation`): the older ones are deleted once it is uploaded."""

    instance_uuid: str
    image_id: str
    rotation: int | None = None


class ShelveInstance(Message, frozen=True, kw_only=True):
    """shelve: the guest powered off and its root disk written into image `image_id` (queued,
    made by the API, which set task_state 'shelving'); SHELVED, then off the host at once when
    compute.shelved_offload_time is 0."""

    instance_uuid: str
    image_id: str


class ShelveOffloadInstance(Message, frozen=True, kw_only=True):
    """shelveOffload (or a volume-backed shelve): the guest, its local disks and its placement
    allocation taken off this host; the instance keeps its ports and volumes, and no host."""

    instance_uuid: str


class UnshelveInstance(Message, frozen=True, kw_only=True):
    """unshelve on this host: the shelved guest started again, or an offloaded one spawned
    from its shelved image (or root volume) here, where the conductor claimed `node`."""

    instance_uuid: str
    node: str = ""


class RescueInstance(Message, frozen=True, kw_only=True):
    """rescue: the guest booted from a disk made of the image the row's rescue_image_ref names,
    its own root disk attached second (task_state 'rescuing', set by the API)."""

    instance_uuid: str


class UnrescueInstance(Message, frozen=True, kw_only=True):
    """unrescue: the rescue guest removed, the instance's own guest booted again."""

    instance_uuid: str


class GetConsoleOutput(Message, frozen=True, kw_only=True):
    """What the guest printed on its serial console, the last `lines` lines of it (None:
    all that is kept). A call: answered with ConsoleOutput."""

    instance_uuid: str
    lines: int | None = None


class ConsoleOutput(Message, frozen=True, kw_only=True):
    output: str


class ConsoleKind(enum.StrEnum):
    """A guest console the console proxy can relay: its serial port, or its VNC screen."""

    SERIAL = "serial"
    VNC = "vnc"


class GetConsoleEndpoint(Message, frozen=True, kw_only=True):
    """Where the console proxy can reach the running guest's `kind` console on the host. A
    call: answered with ConsoleEndpoint."""

    instance_uuid: str
    kind: ConsoleKind


class ConsoleEndpoint(Message, frozen=True, kw_only=True):
    """A unix socket (`path`) or a TCP address (`host`, `port`) on the compute host."""

    path: str = ""
    host: str = ""
    port: int = 0


class GetDiagnostics(Message, frozen=True, kw_only=True):
    """The running guest's hypervisor statistics. A call: answered with Diagnostics."""

    instance_uuid: str


class CpuStats(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    time: int                      # nanoseconds of host CPU the vCPU used
    utilisation: int | None = None


class NicStats(msgspec.Struct, frozen=True, kw_only=True):
    device: str                    # the tap on the host (the legacy view's key)
    mac_address: str
    rx_octets: int = 0
    rx_packets: int = 0
    rx_errors: int = 0
    rx_drop: int = 0
    tx_octets: int = 0
    tx_packets: int = 0
    tx_errors: int = 0
    tx_drop: int = 0


class DiskStats(msgspec.Struct, frozen=True, kw_only=True):
    device: str                    # the guest's target device (vda, hda…)
    read_bytes: int = 0
    read_requests: int = 0
    write_bytes: int = 0
    write_requests: int = 0
    errors_count: int = 0


class Diagnostics(Message, frozen=True, kw_only=True):
    state: str                     # Nova's power state name: running, paused, shutdown…
    driver: str
    hypervisor: str
    hypervisor_os: str
    uptime: int | None             # seconds since the guest's QEMU process started
    config_drive: bool
    memory_max_kib: int
    memory_used_kib: int
    memory_stats: dict[str, int] = {}   # libvirt's balloon statistics, by its names
    cpus: list[CpuStats] = []
    nics: list[NicStats] = []
    disks: list[DiskStats] = []


class AttachVolume(Message, frozen=True, kw_only=True):
    """Attach the volume to the guest, live and in its persistent definition. The API has
    reserved the attachment (`attachment_id`) and recorded the block device mapping
    `bdm_id` with the device name it chose; compute connects, attaches and completes it, or
    deletes the attachment and the mapping when it cannot."""

    instance_uuid: str
    volume_id: str
    attachment_id: str
    bdm_id: str


class DetachVolume(Message, frozen=True, kw_only=True):
    """Detach the volume from the guest (live and persistent), then delete its attachment
    and block device mapping; the volume is available again."""

    instance_uuid: str
    volume_id: str
    attachment_id: str


class ExtendVolume(Message, frozen=True, kw_only=True):
    """An attached volume grew (the volume role extended its bits): tell the running guest
    its disk's new size (virDomainBlockResize), as Nova's volume-extended event does."""

    instance_uuid: str
    volume_id: str
    size_gb: int
