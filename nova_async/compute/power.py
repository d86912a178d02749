"""Changing a guest's power state on this host: reboot, stop, start, pause, unpause,
suspend and resume.

The API has already moved the instance into the operation's task_state (so nothing else
can start) and recorded the action. Here the hypervisor does the work as one
instance-action event, and the row then takes the operation's end state with task_state
cleared — compare-and-swapped on that task_state, so a delete that arrived meanwhile is
never overwritten. A failure clears task_state and records a fault; vm_state stays, unless
the guest turned out to be gone, which is an ERROR.

Every operation starts from the domain's actual state (see Hypervisor), so running one
again after a crash finishes it rather than failing: recovery relies on that.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import libvirt
import structlog

from nova_async.common import errors
from nova_async.common.states import PowerState, VmState
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host, describe
from nova_async.compute.hypervisor import GuestGone, GuestState
from nova_async.compute.messages import PowerAction, PowerOp, RebootType
from nova_async.db import instances
from nova_async.db.instances import Q as IQ

log = structlog.get_logger("compute.power")

Operate = Callable[[Host, str, PowerAction], Awaitable[None]]


@dataclass(frozen=True)
class Step:
    event: str           # the instance-action event
    notification: str    # `<notification>.start/.end/.error` are published
    vm_state: VmState    # where the instance ends up
    power_state: PowerState
    operate: Operate


def _power_on(host: Host, name: str, _msg: PowerAction) -> Awaitable[None]:
    return host.hypervisor.power_on(name, timeout=host.timeouts.shutdown)


def _reboot(host: Host, name: str, msg: PowerAction) -> Awaitable[None]:
    return host.hypervisor.reboot(name, hard=msg.reboot_type is RebootType.HARD,
                                  timeout=host.timeouts.soft_reboot)


STEPS: dict[PowerOp, Step] = {
    PowerOp.REBOOT: Step("compute_reboot_instance", "instance.reboot", VmState.ACTIVE, PowerState.RUNNING, _reboot),
    PowerOp.STOP: Step("compute_stop_instance", "instance.power_off", VmState.STOPPED, PowerState.SHUTDOWN,
                       lambda host, name, _: host.hypervisor.power_off(name,
                                                                       timeout=host.timeouts.shutdown)),
    PowerOp.START: Step("compute_start_instance", "instance.power_on", VmState.ACTIVE, PowerState.RUNNING, _power_on),
    PowerOp.PAUSE: Step("compute_pause_instance", "instance.pause", VmState.PAUSED, PowerState.PAUSED,
                        lambda host, name, _: host.hypervisor.pause(name)),
    PowerOp.UNPAUSE: Step("compute_unpause_instance", "instance.unpause", VmState.ACTIVE, PowerState.RUNNING,
                          lambda host, name, _: host.hypervisor.unpause(name)),
    PowerOp.SUSPEND: Step("compute_suspend_instance", "instance.suspend", VmState.SUSPENDED, PowerState.SUSPENDED,
                          lambda host, name, _: host.hypervisor.save(name)),
    # create() restores the managed-save image suspend wrote.
    PowerOp.RESUME: Step("compute_resume_instance", "instance.resume", VmState.ACTIVE, PowerState.RUNNING, _power_on),
}


def observed(guest: GuestState | None) -> tuple[VmState, PowerState]:
    """The (vm_state, power_state) a guest in this libvirt state means to Nova."""
    if guest is None:
        return VmState.ERROR, PowerState.NOSTATE
    if guest.running:
        return VmState.ACTIVE, PowerState.RUNNING
    if guest.state == libvirt.VIR_DOMAIN_PAUSED:
        return VmState.PAUSED, PowerState.PAUSED
    if guest.saved or guest.state == libvirt.VIR_DOMAIN_PMSUSPENDED:
        return VmState.SUSPENDED, PowerState.SUSPENDED
    if guest.state == libvirt.VIR_DOMAIN_CRASHED:
        return VmState.STOPPED, PowerState.CRASHED
    return VmState.STOPPED, PowerState.SHUTDOWN


async def change_power(host: Host, msg: PowerAction, request_id: str) -> None:
    instance_uuid, step = msg.instance_uuid, STEPS[msg.action]
    row = await host.pool.fetchrow(IQ.get, instance_uuid)
    if row is None or row["task_state"] != msg.task_state or row["host"] != host.name:
        # Deleted, taken over by a delete, or not ours: whoever holds it now finishes it.
        log.info("power action skipped", action=str(msg.action),
                 task_state=row["task_state"] if row else None, instance_host=row["host"] if row else None)
        await instances.finish_action(host.pool, instance_uuid, request_id)
        return
    await host.notify(f"{step.notification}.start", instance_uuid, request_id=request_id)
    try:
        async with instances.event(host.pool, instance_uuid, request_id, step.event, host.name):
            await step.operate(host, domain_name(instance_uuid), msg)
    except Exception as exc:
        await _failed(host, msg, request_id, exc)
        return
    done = await instances.set_state(host.pool, instance_uuid, vm_state=step.vm_state, task_state=None,
                                     power_state=step.power_state, expected_task_state=msg.task_state)
    if done is None:
        log.info("a delete took over before the power action was recorded", action=str(msg.action))
    else:
        log.info("power action done", action=str(msg.action), vm_state=step.vm_state)
    # The action is finished before anyone is told, so a listener reads a finished log.
    await instances.finish_action(host.pool, instance_uuid, request_id)
    await host.notify(f"{step.notification}.end", instance_uuid, request_id=request_id)
    if done is not None:
        await host.hooks.post("post_action", done, action=str(msg.action))


async def _failed(host: Host, msg: PowerAction, request_id: str, exc: Exception) -> None:
    reason = describe(exc)
    log.error("power action failed", action=str(msg.action), reason=reason)
    instance_uuid = msg.instance_uuid
    vm_state, power_state = None, None  # unchanged, unless the guest says otherwise
    try:
        guest = await host.hypervisor.guest_state(domain_name(instance_uuid))
        if guest is None or isinstance(exc, GuestGone):
            vm_state, power_state = observed(None)
        else:
            power_state = observed(guest)[1]
    except errors.NovaAsyncError as read_exc:
        log.warning("could not read the guest's state after a failure", error=read_exc.message)
    code = exc.status if isinstance(exc, errors.NovaAsyncError) else 500
    details = "".join(traceback.format_exception(exc))[-10000:]
    async with host.pool.acquire() as conn, conn.transaction():
        changed = await conn.fetchrow(IQ.set_state, instance_uuid, vm_state, None, power_state, True,
                                      msg.task_state)
        if changed is not None:
            await conn.execute(IQ.add_fault, instance_uuid, code, reason[:1000], details, host.name)
    await instances.finish_action(host.pool, instance_uuid, request_id, "Error")
    await host.notify(f"{STEPS[msg.action].notification}.error", instance_uuid, reason=reason)
