"""Keeping vm_state/power_state true to what guests do when nobody asked them to.

A guest can power itself off, crash, or be started by hand with virsh. libvirt tells us at
once through lifecycle events (`events.py` delivers them on the service's loop); the role
queues a `sync` for that instance behind whatever it is already doing, and a periodic
reconciliation compares every settled instance on the host with its guest, for whatever an
event did not bring (a missed event, a restart of libvirtd, a process that had no events).

What a sync does follows Nova's power-state sync, with the database as the truth for what
the user asked for:
  - ACTIVE or PAUSED, guest off or crashed   → the instance is STOPPED (SHUTOFF);
  - STOPPED, guest running or paused        → the guest is powered off again;
  - anything else                           → only power_state is brought up to date.
A guest still on its way down (shut down, QEMU not yet exited) is not judged yet: taking it
for off would show SHUTOFF while a start still finds it running and does nothing.
An instance with a task_state is left alone: the action in progress sets its state.
"""

from __future__ import annotations

import structlog

from nova_async.common.states import PowerState, VmState
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host
from nova_async.compute.power import observed
from nova_async.db import instances
from nova_async.db.queries import queries

log = structlog.get_logger("compute.lifecycle")
Q = queries("compute")

_OFF = (PowerState.SHUTDOWN, PowerState.CRASHED)
_ON = (PowerState.RUNNING, PowerState.PAUSED)


async def sync(host: Host, instance_uuid: str) -> None:
    """Compare one instance with its guest and act on the difference (see the module doc)."""
    row = await host.pool.fetchrow(instances.Q.get, instance_uuid)
    if (row is None or row["host"] != host.name or row["task_state"] is not None
            or row["vm_state"] not in (VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED)):
        return
    name = domain_name(instance_uuid)
    guest = await host.hypervisor.guest_state(name)
    if guest is not None and guest.going_down:
        return  # its STOPPED event (or the next reconciliation) brings the settled state
    power_state = observed(guest)[1]
    vm_state = row["vm_state"]
    if vm_state in (VmState.ACTIVE, VmState.PAUSED) and power_state in _OFF:
        vm_state = VmState.STOPPED
        log.warning("the guest stopped on its own; the instance is now SHUTOFF", power_state=power_state)
    elif vm_state == VmState.STOPPED and power_state in _ON:
        log.warning("the guest runs but the instance is stopped; powering it off")
        await host.hypervisor.power_off(name, timeout=0)
        power_state = observed(await host.hypervisor.guest_state(name))[1]
    if (vm_state, power_state) == (row["vm_state"], row["power_state"]):
        return
    changed = await host.pool.fetchval(Q.sync_power_state, instance_uuid, host.name, vm_state,
                                       power_state, row["vm_state"])
    if changed:
        log.info("power state synchronised", vm_state=vm_state, power_state=power_state)
        if vm_state != row["vm_state"]:
            await host.notify("instance.power_off.end", instance_uuid, reason="the guest stopped")


async def out_of_sync(host: Host) -> list[str]:
    """Instances on this host whose recorded power_state differs from their guest's."""
    rows = await host.pool.fetch(Q.settled_instances, host.name)
    if not rows:
        return []
    guests = await host.hypervisor.guests()
    return [str(r["uuid"]) for r in rows
            if observed(guests.get(str(r["uuid"])))[1] != r["power_state"]]
