"""Power actions: which states each may start from, the task_state each holds, what a
libvirt state means to Nova, and the hypervisor's power operations on the test driver."""

from __future__ import annotations

import uuid

import libvirt
import pytest

from nova_async.api.server_ops import allowed_vm_states
from nova_async.compute.domain_xml import DomainSpec, domain_name, domain_xml
from nova_async.compute.hypervisor import GuestGone, GuestState, Hypervisor
from nova_async.compute.messages import (
    POWER_TASK_STATES,
    PowerAction,
    PowerOp,
    RebootType,
)
from nova_async.compute.power import STEPS, observed
from nova_async.compute.simhosts import write_node_file

SOFT, HARD = RebootType.SOFT, RebootType.HARD

# (operation, reboot type) → vm_states it may start from, task_state while it runs
TABLE = [
    (PowerOp.REBOOT, SOFT, {"active"}, "reboot_started"),
    (PowerOp.REBOOT, HARD, {"active", "stopped", "paused", "suspended", "error"}, "reboot_started_hard"),
    (PowerOp.STOP, SOFT, {"active", "error"}, "powering-off"),
    (PowerOp.START, SOFT, {"stopped"}, "powering-on"),
    (PowerOp.PAUSE, SOFT, {"active"}, "pausing"),
    (PowerOp.UNPAUSE, SOFT, {"paused"}, "unpausing"),
    (PowerOp.SUSPEND, SOFT, {"active"}, "suspending"),
    (PowerOp.RESUME, SOFT, {"suspended"}, "resuming"),
]


@pytest.mark.parametrize("op, kind, allowed, task_state", TABLE)
def test_allowed_states_and_task_state(op, kind, allowed, task_state):
    assert allowed_vm_states(op, kind) == allowed
    assert PowerAction(instance_uuid="u", action=op, reboot_type=kind).task_state == task_state
    assert task_state in POWER_TASK_STATES


def test_every_operation_has_a_compute_step():
    assert set(STEPS) == set(PowerOp)
    assert len(POWER_TASK_STATES) == len(TABLE)


@pytest.mark.parametrize("guest, expected", [
    (None, ("error", 0)),
    (GuestState(libvirt.VIR_DOMAIN_RUNNING, False), ("active", 1)),
    (GuestState(libvirt.VIR_DOMAIN_BLOCKED, False), ("active", 1)),
    (GuestState(libvirt.VIR_DOMAIN_PAUSED, False), ("paused", 3)),
    (GuestState(libvirt.VIR_DOMAIN_SHUTOFF, True), ("suspended", 7)),
    (GuestState(libvirt.VIR_DOMAIN_PMSUSPENDED, False), ("suspended", 7)),
    (GuestState(libvirt.VIR_DOMAIN_SHUTOFF, False), ("stopped", 4)),
    (GuestState(libvirt.VIR_DOMAIN_CRASHED, False), ("stopped", 6)),
])
def test_what_a_guest_state_means(guest, expected):
    assert observed(guest) == expected


@pytest.fixture
async def hv(tmp_path):
    hypervisor = Hypervisor(write_node_file(tmp_path, "sim-p", 4, 4096), None)
    await hypervisor.open()
    yield hypervisor
    await hypervisor.close()


async def state(hv: Hypervisor, name: str) -> tuple[int, bool]:
    guest = await hv.guest_state(name)
    assert guest is not None
    return guest.state, guest.saved


RUNNING, PAUSED, OFF, SAVED = ((libvirt.VIR_DOMAIN_RUNNING, False), (libvirt.VIR_DOMAIN_PAUSED, False),
                               (libvirt.VIR_DOMAIN_SHUTOFF, False), (libvirt.VIR_DOMAIN_SHUTOFF, True))


async def test_power_operations_on_the_test_driver(hv):
    instance = str(uuid.uuid4())
    name = domain_name(instance)
    await hv.start(domain_xml(DomainSpec(instance_uuid=instance, display_name="p", memory_mb=64, vcpus=1,
                                         domain_type="test")))
    # each operation, then the same again: asking for the state it is in changes nothing
    for operate, expected in [
        (lambda: hv.reboot(name, hard=False, timeout=1), RUNNING),
        (lambda: hv.power_off(name, timeout=1), OFF),
        (lambda: hv.power_off(name, timeout=1), OFF),
        (lambda: hv.power_on(name, timeout=1), RUNNING),
        (lambda: hv.power_on(name, timeout=1), RUNNING),
        (lambda: hv.pause(name), PAUSED),
        (lambda: hv.pause(name), PAUSED),
        (lambda: hv.unpause(name), RUNNING),
        (lambda: hv.unpause(name), RUNNING),
        (lambda: hv.save(name), SAVED),
        (lambda: hv.save(name), SAVED),
        (lambda: hv.power_on(name, timeout=1), RUNNING),   # restores the saved image
        (lambda: hv.save(name), SAVED),
        (lambda: hv.reboot(name, hard=True, timeout=1), RUNNING),  # drops the saved image
        (lambda: hv.pause(name), PAUSED),
        (lambda: hv.reboot(name, hard=True, timeout=1), RUNNING),
        (lambda: hv.power_off(name, timeout=1), OFF),
        (lambda: hv.reboot(name, hard=True, timeout=1), RUNNING),
    ]:
        await operate()
        assert await state(hv, name) == expected
    await hv.save(name)
    assert await hv.remove(name) is True  # a managed-save image does not block undefining
    assert await hv.guest_state(name) is None


async def test_operations_on_a_missing_guest_say_it_is_gone(hv):
    name = domain_name(str(uuid.uuid4()))
    for operate in (lambda: hv.reboot(name, hard=False, timeout=1), lambda: hv.power_off(name, timeout=1),
                    lambda: hv.power_on(name, timeout=1), lambda: hv.pause(name), lambda: hv.save(name)):
        with pytest.raises(GuestGone):
            await operate()


class GoingDown:
    """A domain whose guest has shut down while its QEMU has not exited yet (libvirt's
    VIR_DOMAIN_SHUTDOWN): the test driver never shows that state, a loaded host does."""

    def __init__(self, polls_until_off: int) -> None:
        self.polls, self.created, self.destroyed = polls_until_off, 0, 0

    def isActive(self) -> bool:
        self.polls -= 1
        return self.polls >= 0 and not self.destroyed

    def state(self) -> tuple[int, int]:
        return (libvirt.VIR_DOMAIN_SHUTDOWN if self.isActive() else libvirt.VIR_DOMAIN_SHUTOFF), 0

    def destroy(self) -> None:
        self.destroyed += 1

    def create(self) -> None:
        self.created += 1


@pytest.mark.parametrize("polls_until_off, timeout, destroyed", [(3, 5.0, 0), (10**6, 0.05, 1)])
async def test_starting_a_guest_on_its_way_down_boots_it_once_it_is_off(hv, monkeypatch, polls_until_off,
                                                                        timeout, destroyed):
    dom = GoingDown(polls_until_off)

    async def domain(_name):
        return dom
    monkeypatch.setattr(hv, "_domain", domain)
    await hv.power_on("going-down", timeout=timeout)   # left to finish, or pulled at the deadline
    assert (dom.created, dom.destroyed) == (1, destroyed)
    assert GuestState(libvirt.VIR_DOMAIN_SHUTDOWN, False).going_down
