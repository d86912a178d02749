"""Work sent to one compute host (topic `compute.<host>`)."""

from __future__ import annotations

import enum

from nova_async.bus.messages import Message
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
_TASK_STATES = {PowerOp.STOP: "powering-off", PowerOp.START: "powering-on", PowerOp.PAUSE: "pausing",
                PowerOp.UNPAUSE: "unpausing", PowerOp.SUSPEND: "suspending", PowerOp.RESUME: "resuming"}
_REBOOT_TASK_STATES = {RebootType.SOFT: "reboot_started", RebootType.HARD: "reboot_started_hard"}
POWER_TASK_STATES = frozenset(_TASK_STATES.values()) | frozenset(_REBOOT_TASK_STATES.values())


class PowerAction(Message, frozen=True, kw_only=True):
    """Reboot, stop, start, pause, unpause, suspend or resume the guest. The instance
    already holds `task_state` (the API set it); compute ends it."""

    instance_uuid: str
    action: PowerOp
    reboot_type: RebootType = RebootType.SOFT

    @property
    def task_state(self) -> str:
        if self.action is PowerOp.REBOOT:
            return _REBOOT_TASK_STATES[self.reboot_type]
        return _TASK_STATES[self.action]


class RebuildInstance(Message, frozen=True, kw_only=True):
    """Rebuild the guest from the image the row now names (the API changed it, and set
    task_state 'rebuilding'); ports and claims stay, disks and the guest are made anew."""

    instance_uuid: str


class GetConsoleOutput(Message, frozen=True, kw_only=True):
    """What the guest printed on its serial console, the last `lines` lines of it (None:
    all that is kept). A call: answered with ConsoleOutput."""

    instance_uuid: str
    lines: int | None = None


class ConsoleOutput(Message, frozen=True, kw_only=True):
    output: str
