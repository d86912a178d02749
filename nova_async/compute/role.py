"""The compute role: one or more compute hosts, each serving its own bus topic.

Per host, in order: open its libvirt connection → register (service, compute node,
placement provider) → reconcile with the database (recovery.py) → then take work from
`compute.<host>`, refresh inventories, keep power states true to the guests
(lifecycle.py: on libvirt's events, and periodically), and — when
compute.resize_confirm_window is set — confirm resizes left waiting longer than that, and —
when compute.shelved_offload_time is above 0 — offload servers shelved longer than that.
The role is ready once every host has reconciled; from then one heartbeat every
`report_interval` keeps all its hosts' services up.

After a database or broker outage (each time it comes back) a host picks up again what the
outage may have cut off, as at start: builds, deletes, rebuilds and power actions left unfinished
on it, each queued behind whatever its instance is doing and checked again when its turn
comes (the job in front may have finished it).

Work for one instance is serialised by `InstanceWorkers`; different instances build in
parallel. Reading a guest's console changes nothing, so it is answered at once, outside
the instance's queue (a long build or stop must not hold it up).

Shutdown: the supervisor stops bus intake (the consumers return) and sets `stopping` (the
heartbeats return); each host's workers finish the jobs they hold; then the libvirt
connections close, and last the libvirt thread pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid as uuidlib
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog

from nova_async.bus import caps as version_caps
from nova_async.bus import Message
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.compute import events, lifecycle, recovery, registration, rescue, resize, shelve, snapshot, volumes
from nova_async.compute.build import build_and_run, rebuild
from nova_async.compute.client import topic
from nova_async.compute.console import console_output
from nova_async.compute.console import console_endpoint
from nova_async.compute.diagnostics import diagnostics
from nova_async.compute.messages import GetConsoleEndpoint, GetDiagnostics
from nova_async.compute.disks import ImageCache, unreachable_by_qemu
from nova_async.compute.domain_xml import canonical_uuid
from nova_async.compute.host import GuestTimeouts, Host
from nova_async.compute.hypervisor import FIRST_OPEN_WAIT, Hypervisor, runs_in_process
from nova_async.compute.messages import (
    AttachVolume,
    BuildAndRunInstance,
    DetachVolume,
    ExtendVolume,
    GetConsoleOutput,
    PowerAction,
    RebuildInstance,
    RescueInstance,
    ResizeStep,
    ShelveInstance,
    ShelveOffloadInstance,
    SnapshotInstance,
    TerminateInstance,
    UnrescueInstance,
    UnshelveInstance,
)
from nova_async.compute.power import change_power
from nova_async.compute.simhosts import HostSpec, host_specs
from nova_async.compute.terminate import terminate
from nova_async.compute.workers import InstanceWorkers
from nova_async.dataplane import client as dataplane_client
from nova_async.db.session_locks import key
from nova_async.role import Deps, Role

log = structlog.get_logger("compute")

LIBVIRT_THREADS = 8        # concurrent blocking libvirt calls against a daemon
RECOVERY_CONCURRENCY = 8   # interrupted builds/deletes/power actions redone at once per host


class SyncPowerState(msgspec.Struct, frozen=True, kw_only=True):
    """Bring the instance's recorded power state in line with its guest (lifecycle.py). Queued
    by the role itself, on libvirt's events and periodically; never sent on the bus."""

    instance_uuid: str


@dataclass(frozen=True)
class Job:
    """One piece of an instance's queued work: the message that asks for it, the request it
    belongs to, and whether it is work found unfinished after an outage (it then runs only
    if it still is when its turn comes: the job in front may have finished it)."""

    msg: Message | SyncPowerState
    request_id: str
    resumed: bool = False


# A message's handler gets the host whose topic it came on, and the request id it runs under.
HostHandler = Callable[[Host, Any, str], Awaitable[Message | None]]

# A periodic duty of a host (_each_host), given its instance workers.
HostDuty = Callable[[Host, InstanceWorkers[Job]], Awaitable[None]]

# Reads of a running guest: answered at once, outside the instance's queue.
_READS = (GetConsoleOutput, GetConsoleEndpoint, GetDiagnostics)


class ComputeRole(Role):
    name = "compute"
    stop_tier = 0

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.hosts: dict[str, Host] = {}  # by host name; tests look at their hypervisors
        self._serving: dict[str, InstanceWorkers[Job]] = {}   # hosts taking messages, with their workers
        self.events = False               # libvirt lifecycle events reach this role
        # As in every role, by message type; but each host serves a topic of its own, so a
        # handler also gets the host (and the request id: most run later, from a queue).
        self.handlers: dict[type, HostHandler] = {
            BuildAndRunInstance: lambda host, m, rid: build_and_run(host, m.instance_uuid, rid,
                                                                    list(m.alternates)),
            TerminateInstance: lambda host, m, rid: terminate(host, m.instance_uuid, rid),
            PowerAction: change_power,
            RebuildInstance: lambda host, m, rid: rebuild(host, m.instance_uuid, rid,
                                                          preserve_ephemeral=m.preserve_ephemeral),
            ResizeStep: resize.run_step,
            SnapshotInstance: lambda host, m, rid: snapshot.snapshot(host, m.instance_uuid, m.image_id, rid,
                                                                     rotation=m.rotation),
            ShelveInstance: shelve.shelve,
            ShelveOffloadInstance: shelve.offload,
            UnshelveInstance: shelve.unshelve,
            RescueInstance: rescue.rescue,
            UnrescueInstance: rescue.unrescue,
            AttachVolume: volumes.attach,
            DetachVolume: volumes.detach,
            ExtendVolume: volumes.extend,
            SyncPowerState: lambda host, m, _: lifecycle.sync(host, m.instance_uuid),
            GetConsoleOutput: lambda host, m, _: console_output(host, m),
            GetConsoleEndpoint: lambda host, m, _: console_endpoint(host, m),
            GetDiagnostics: lambda host, m, _: diagnostics(host, m),
        }

    async def _run_hosts_alone(self, specs: list[HostSpec], stack: contextlib.AsyncExitStack) -> None:
        """Refuse to start a compute host that another process on this database runs already:
        two would take each other's casts and build one server twice. Its lock (of this
        process's session: db/session_locks.py) goes with the process, or when the role ends."""
        locks = self.deps.locks
        if locks is None:
            return
        for spec in specs:
            lock = key("compute-host", spec.name)
            if not await locks.take_one(lock):
                raise errors.Unavailable(
                    f"compute host {spec.name} is run by another nova-async process on this database: "
                    f"each host name runs in one process at a time (give this one another --host, "
                    f"or stop the other)")
            stack.push_async_callback(locks.give_back, [lock])

    async def run(self) -> None:
        specs = host_specs(self.settings)
        instances_root = (self.settings.state_path / "instances").resolve()
        instances_root.mkdir(parents=True, exist_ok=True)
        images = ImageCache(instances_root)
        if not all(s.simulated or runs_in_process(s.uri) for s in specs):   # QEMU will open these disks
            blocked = unreachable_by_qemu(instances_root)
            if blocked:
                raise errors.Unavailable(blocked)
        c = self.settings.compute
        timeouts = GuestTimeouts(shutdown=c.shutdown_timeout, soft_reboot=c.soft_reboot_timeout)
        dataplane_served = dataplane_client.served(self.settings)
        self.events = events.enable()  # before any connection opens
        if not self.events:
            log.warning("libvirt events go to another event loop in this process; power states are "
                        "reconciled periodically only", interval=c.sync_power_state_interval)
        async with contextlib.AsyncExitStack() as stack:
            await self._run_hosts_alone(specs, stack)
            executor = None
            if not all(runs_in_process(s.uri) for s in specs):
                executor = ThreadPoolExecutor(LIBVIRT_THREADS, thread_name_prefix="libvirt")
                stack.callback(executor.shutdown, wait=True)  # last: connections close through it
            for spec in specs:
                in_process = runs_in_process(spec.uri)
                hypervisor = Hypervisor(spec.uri, None if in_process else executor)
                await hypervisor.open(wait=0.0 if in_process else FIRST_OPEN_WAIT)
                stack.push_async_callback(hypervisor.close)
                cell = await self.cells.map_host(spec.name, self.cells.named(c.cell))
                self.hosts[spec.name] = Host(name=spec.name, hypervisor=hypervisor, pool=cell.pool,
                                             api_pool=self.pool, bus=self.bus, images=images,
                                             instances_root=instances_root, disk_gb=spec.disk_gb,
                                             timeouts=timeouts, force_config_drive=c.force_config_drive,
                                             shelved_offload_time=c.shelved_offload_time,
                                             notifications=self.settings.notifications.enabled,
                                             dataplane=dataplane_served and not spec.simulated,
                                             hooks=self.deps.hooks)
                hypervisor.on_connection = functools.partial(registration.libvirt_connection, self.hosts[spec.name])
            # Before any host builds: nothing may be half-copied or half-removed under it.
            images.sweep_partial()
            await recovery.sweep_instance_dirs(self.cells, instances_root)
            async with asyncio.TaskGroup() as tg:
                # The periodic duties of every host, one loop each for all of them: a task per
                # host and duty was most of what a thousand simulated hosts held at rest.
                tg.create_task(self._each_host("refreshing the inventory", c.resource_refresh_interval,
                                               lambda host, _: registration.refresh_inventory(host, c)),
                               name="compute:refresh")
                tg.create_task(self._each_host("power state reconciliation", c.sync_power_state_interval,
                                               self._reconcile), name="compute:reconcile")
                tg.create_task(self.after_each_return(
                    lambda: self._for_each_host("resuming interrupted work", self._resume)), name="compute:resume")
                started = asyncio.Semaphore(0)   # each host releases it once, when it has recovered
                for host in self.hosts.values():
                    tg.create_task(self._run_host(host, started), name=f"compute:{host.name}")
                for _ in self.hosts:
                    await started.acquire()
                await self._libvirt_states()   # a service an earlier run left AUTO-disabled is back
                tg.create_task(self._heartbeat(), name="compute:heartbeat")
                self.ready.set()
                log.info("compute ready", hosts=",".join(self.hosts))

    async def _run_host(self, host: Host, started: asyncio.Semaphore) -> None:
        structlog.contextvars.bind_contextvars(host=host.name)
        await registration.register(host, self.settings.compute, version_caps.receivable(self.handlers))
        await self._recover(host)
        started.release()
        handle = functools.partial(self._handle, host)
        async with InstanceWorkers(handle, name=f"compute:{host.name}") as workers:
            if self.events:
                await host.hypervisor.watch(functools.partial(self._sync_soon, workers))
            # At once, as guests may have changed while the service was down; then with the
            # other hosts' (_each_host).
            await self._for_each_host("power state reconciliation", self._reconcile, [(host, workers)])
            self._serving[host.name] = workers
            try:
                async with asyncio.TaskGroup() as tg:
                    if self.settings.compute.resize_confirm_window > 0:
                        tg.create_task(self._confirm_resizes(host, workers), name=f"compute:{host.name}:confirm")
                    if self.settings.compute.shelved_offload_time > 0:
                        tg.create_task(self._offload_shelved(host, workers), name=f"compute:{host.name}:offload")
                    # Returns once the role is told to stop; the workers then finish their jobs.
                    await self.serve(topic(host.name), functools.partial(self._on_message, host, workers))
            finally:
                del self._serving[host.name]
        log.info("compute host stopped")

    async def _heartbeat(self) -> None:
        while not await self.sleep_unless_stopping(self.settings.compute.report_interval):
            await registration.heartbeat([h for h in self.hosts.values() if h.service_id])
            await self._libvirt_states()

    async def _libvirt_states(self) -> None:
        """Every host's service as its libvirt connection is: said again each beat, for a
        change the database missed (on_connection says each change as it happens)."""
        hosts = [h for h in self.hosts.values() if h.service_id]
        await registration.libvirt_states([h for h in hosts if h.hypervisor.connected],
                                          [(h, h.hypervisor.why_lost) for h in hosts if not h.hypervisor.connected])

    async def _each_host(self, what: str, interval: float, duty: HostDuty) -> None:
        """`duty` for every host this process serves, every `interval` seconds until the role stops."""
        while not await self.sleep_unless_stopping(interval):
            await self._for_each_host(what, duty)

    async def _for_each_host(self, what: str, duty: HostDuty,
                             hosts: list[tuple[Host, InstanceWorkers[Job]]] | None = None) -> None:
        """`duty` for each of `hosts` (default: those served now), one after the other; one
        that fails is logged and does not keep the others from theirs."""
        if hosts is None:
            hosts = [(self.hosts[name], workers) for name, workers in self._serving.items()]
        for host, workers in hosts:
            with structlog.contextvars.bound_contextvars(host=host.name):
                try:
                    await duty(host, workers)
                except Exception:
                    log.exception(f"{what} failed; trying again next time")

    async def _reconcile(self, host: Host, workers: InstanceWorkers[Job]) -> None:
        for instance_uuid in await lifecycle.out_of_sync(host):
            self._sync_soon(workers, instance_uuid)

    async def _confirm_resizes(self, host: Host, workers: InstanceWorkers[Job]) -> None:
        """Confirm resizes left in VERIFY_RESIZE longer than resize_confirm_window (Nova's
        _poll_unconfirmed_resizes), as if their owner had."""
        window = self.settings.compute.resize_confirm_window
        while not await self.sleep_unless_stopping(max(0.5, min(window / 2, 60.0))):
            try:
                for step, request_id in await resize.due_for_confirm(host, window):
                    if not workers.closed:
                        workers.submit(step.instance_uuid, Job(step, request_id))
            except Exception:
                log.exception("confirming resizes failed; trying again next time")

    async def _offload_shelved(self, host: Host, workers: InstanceWorkers[Job]) -> None:
        """Offload servers left SHELVED longer than shelved_offload_time (Nova's
        _poll_shelved_instances), as if their owner had asked."""
        window = self.settings.compute.shelved_offload_time
        while not await self.sleep_unless_stopping(max(0.5, min(window / 2, 60.0))):
            try:
                for msg, request_id in await shelve.due_for_offload(host, window):
                    if not workers.closed:
                        workers.submit(msg.instance_uuid, Job(msg, request_id))
            except Exception:
                log.exception("offloading shelved servers failed; trying again next time")

    @staticmethod
    def _sync_soon(workers: InstanceWorkers[Job], instance_uuid: str) -> None:
        """Queue a power-state sync behind whatever the instance is doing."""
        if not workers.closed:
            workers.submit(instance_uuid, Job(SyncPowerState(instance_uuid=instance_uuid), ""))

    async def _recover(self, host: Host) -> None:
        await recovery.sweep_orphan_domains(host)
        await snapshot.abandon_interrupted(host)
        await shelve.drop_leftover_images(host)
        await volumes.recover(host)
        work = (await recovery.unfinished(host) + await recovery.interrupted_power_actions(host)
                + await recovery.interrupted_resizes(host) + await recovery.interrupted_shelves_and_rescues(host))
        if not work:
            return
        log.info("resuming interrupted work", builds=sum(isinstance(w.msg, BuildAndRunInstance) for w in work),
                 deletes=sum(isinstance(w.msg, TerminateInstance) for w in work),
                 power_actions=sum(isinstance(w.msg, PowerAction) for w in work),
                 resizes=sum(isinstance(w.msg, ResizeStep) for w in work),
                 shelves_and_rescues=sum(isinstance(w.msg, recovery.SHELVE_AND_RESCUE) for w in work))
        slots = asyncio.Semaphore(RECOVERY_CONCURRENCY)

        async def redo(item: recovery.Unfinished) -> None:
            async with slots:
                with structlog.contextvars.bound_contextvars(instance_uuid=item.instance_uuid):
                    try:
                        await self._handle(host, item.instance_uuid, Job(item.msg, item.request_id))
                    except Exception:
                        log.exception("recovery of an instance failed")

        # Nothing else touches these instances yet: the host is not consuming.
        async with asyncio.TaskGroup() as tg:
            for item in work:
                tg.create_task(redo(item), name=f"compute:{host.name}:recover:{item.instance_uuid}")

    @staticmethod
    async def _resume(host: Host, workers: InstanceWorkers[Job]) -> None:
        """After an outage: what start-up recovery would redo, queued behind each instance's
        current job (resize, shelve and rescue steps are left to the next start)."""
        work = await recovery.unfinished(host) + await recovery.interrupted_power_actions(host)
        if work:
            log.info("queueing work the database outage may have interrupted", instances=len(work))
        for item in work:
            if not workers.closed:
                workers.submit(item.instance_uuid, Job(item.msg, item.request_id, resumed=True))

    async def _on_message(self, host: Host, workers: InstanceWorkers[Job], msg: Message,
                          context: RequestContext | None) -> Message | None:
        handler = self.handlers.get(type(msg))
        if handler is None:
            raise errors.InvalidInput(f"compute cannot handle {type(msg).__name__}")
        msg = msgspec.structs.replace(msg, instance_uuid=canonical_uuid(msg.instance_uuid))
        if isinstance(msg, _READS):
            with structlog.contextvars.bound_contextvars(instance_uuid=msg.instance_uuid):
                return await handler(host, msg, "")
        request_id = (context.request_id if context else "") or f"req-{uuidlib.uuid4()}"
        workers.submit(msg.instance_uuid, Job(msg, request_id))
        return None

    async def _handle(self, host: Host, instance_uuid: str, job: Job) -> None:
        if job.resumed and not await recovery.still_unfinished(host, job.msg):
            return
        with structlog.contextvars.bound_contextvars(request_id=job.request_id):
            await self.handlers[type(job.msg)](host, job.msg, job.request_id)
