"""One libvirt connection per compute host, and the few hypervisor operations compute needs.

libvirt-python calls block. Against a daemon (qemu:///system, test+unix://…) they run on a
bounded thread pool so a slow create() or a 14 s capabilities probe never stalls the event
loop. libvirt's in-process test driver answers from memory in well under a millisecond
(define/create/destroy measured at ~0.3 ms), so there the very same methods call straight
through: one code path, one switch (`executor is None`).

A daemon's connection can end under us: libvirtd restarted (a package upgrade does it), or
its keepalive given up on a stalled loop. libvirt then calls the connection's close
callback (on whichever thread noticed: the loop's, or the one whose call read the end); from
there the connection is re-opened in the background, retrying with a growing pause, and the
event watches are registered on the new one. Meanwhile a call finds no connection and fails
as Unavailable, as a call at start before open() would. A guest being started when the
connection ended is looked at again on the new one, and booted if it is not running. What
guests did while nobody listened is for the power-state reconciliation to find.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import libvirt
import structlog

from nova_async.common import errors
from nova_async.compute.domain_xml import NS, node_of, uuid_from_domain_name

log = structlog.get_logger("compute.hypervisor")
T = TypeVar("T")

# libvirt prints every error to stderr by default; we report them ourselves.
libvirt.registerErrorHandler(lambda _ctx, _err: None, None)

_GONE = (libvirt.VIR_ERR_NO_DOMAIN,)
_NOT_RUNNING = (libvirt.VIR_ERR_OPERATION_INVALID,)
OWN_START_EVENT_WINDOW = 60.0  # seconds within which start()'s own STARTED event is expected
# Re-opening a lost connection: the first try at once, then longer pauses, at most the last.
REOPEN_PAUSES = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
# How long a start() whose connection ended waits for the next one (libvirtd restarting).
RESTART_WAIT = 60.0
# How long the first connection to a daemon is tried for: one that is being started again
# (host-setup's loop after a crash, or systemd's unit) answers within seconds.
FIRST_OPEN_WAIT = 30.0
# A live detach asks the guest to let go of the disk (a PCI hot-unplug it must acknowledge);
# as Nova's libvirt driver, the request is sent again a few times, each time waiting for
# libvirt's device-removed event. (libvirt's test driver has no guest to wait for: there
# the disk is gone at once, see _redefine_simulated.)
LIVE_DETACH_ATTEMPTS = 8
LIVE_DETACH_TIMEOUT = 20.0   # seconds per attempt
# Why libvirt says a connection closed, in words.
_CLOSE_REASONS = {libvirt.VIR_CONNECT_CLOSE_REASON_ERROR: "a socket error",
                  libvirt.VIR_CONNECT_CLOSE_REASON_EOF: "the daemon closed it",
                  libvirt.VIR_CONNECT_CLOSE_REASON_KEEPALIVE: "keepalive timeout",
                  libvirt.VIR_CONNECT_CLOSE_REASON_CLIENT: "closed by this process"}
# The lifecycle events that can change what Nova shows (defined/undefined cannot).
_POWER_EVENTS = frozenset({
    libvirt.VIR_DOMAIN_EVENT_STARTED, libvirt.VIR_DOMAIN_EVENT_SUSPENDED, libvirt.VIR_DOMAIN_EVENT_RESUMED,
    libvirt.VIR_DOMAIN_EVENT_STOPPED, libvirt.VIR_DOMAIN_EVENT_SHUTDOWN, libvirt.VIR_DOMAIN_EVENT_CRASHED,
    libvirt.VIR_DOMAIN_EVENT_PMSUSPENDED,
})


def runs_in_process(uri: str) -> bool:
    """True for libvirt's test driver opened without a daemon: calls are memory lookups."""
    parts = urllib.parse.urlsplit(uri)
    return parts.scheme == "test" and not parts.netloc


class GuestGone(errors.NotFound):
    """The instance's domain is not defined on this host."""


@dataclass(frozen=True)
class GuestState:
    state: int      # libvirt's VIR_DOMAIN_RUNNING, _PAUSED, _SHUTOFF, …
    saved: bool     # a managed-save image waits: the next create() restores it

    @property
    def running(self) -> bool:
        return self.state in (libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_BLOCKED)

    @property
    def going_down(self) -> bool:
        """The guest has shut down but its QEMU has not exited yet: neither on nor off. Under
        load this lasts long enough for a sync or a start to see it."""
        return self.state == libvirt.VIR_DOMAIN_SHUTDOWN


@dataclass(frozen=True)
class NodeFacts:
    vcpus: int
    memory_mb: int
    hypervisor_type: str     # what Nova reports: "QEMU" or "test"
    hypervisor_version: int
    domain_type: str         # what domain XML asks for: "test", "qemu" or "kvm"


def cpu_info_of(capabilities: str) -> dict[str, Any]:
    """The host CPU as libvirt's capabilities XML describes it, in the shape Nova's libvirt
    driver reports as cpu_info: arch, model, vendor, topology and feature names (each
    `<feature name=…>`; libvirt's test driver lists flags as elements under `<features>`)."""
    host = ET.fromstring(capabilities).find("host")
    cpu = host.find("cpu") if host is not None else None
    if cpu is None:
        return {}
    topology = cpu.find("topology")
    features = ({f.get("name", "") for f in cpu.findall("feature")} | {f.tag for f in cpu.findall("features/*")})
    return {"arch": cpu.findtext("arch") or "", "model": cpu.findtext("model") or "",
            "vendor": cpu.findtext("vendor") or "",
            "topology": {"cells": len(host.findall("topology/cells/cell")) or 1,
                         **{k: int(topology.get(k, "1")) if topology is not None else 1
                            for k in ("sockets", "cores", "threads")}},
            "features": sorted(features - {""})}


class Hypervisor:
    def __init__(self, uri: str, executor: ThreadPoolExecutor | None) -> None:
        self.uri = uri
        self._executor = executor
        self._conn: libvirt.virConnect | None = None
        self._watch: int | None = None
        # Guests start() booted whose STARTED event is still to come, with when that stops
        # being likely: the event tells the caller, which set the state itself, nothing new.
        self._own_starts: dict[str, float] = {}
        # A live detach waits on one of these per domain name; libvirt's device-removed (or
        # removal-failed) event sets them, and the detach then reads the live XML again.
        self._removals: dict[str, set[asyncio.Event]] = {}
        self._device_watches: list[int] = []
        self._on_change: Callable[[str], None] | None = None   # watch()'s, again on a new connection
        self._reopening: asyncio.Task[None] | None = None
        self._lost: list[libvirt.virConnect] = []   # ended, still to be closed on our side
        self.why_lost = ""                          # why the last one ended, in words
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None   # where the close callback's news goes
        self._open_again_seen = asyncio.Event()              # set while a re-opened connection is up
        # Told when the connection is lost (False, why) and when it is open again (True, "").
        self.on_connection: Callable[[bool, str], Awaitable[None]] | None = None

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            return fn(*args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args))

    @property
    def conn(self) -> libvirt.virConnect:
        if self._conn is None:
            raise errors.Unavailable(f"libvirt connection {self.uri} is not open")
        return self._conn

    @property
    def connected(self) -> bool:
        return self._conn is not None

    async def open(self, wait: float = 0.0) -> None:
        """Connect. A daemon that does not answer is asked again, with REOPEN_PAUSES between,
        for up to `wait` seconds (the compute role's start: libvirtd may be starting again);
        then Unavailable."""
        deadline = time.monotonic() + wait
        for attempt in itertools.count():
            try:
                conn = await self._call(libvirt.open, self.uri)
                break
            except libvirt.libvirtError as exc:
                pause = REOPEN_PAUSES[min(attempt + 1, len(REOPEN_PAUSES) - 1)]
                if time.monotonic() + pause > deadline:
                    raise errors.Unavailable(f"cannot connect to libvirt at {self.uri}: {exc}") from None
                if attempt == 0:
                    log.warning("libvirt does not answer yet; waiting for it", uri=self.uri, error=str(exc),
                                wait_s=wait)
                await asyncio.sleep(pause)
        if self._executor is not None:   # an in-process driver's connection cannot be lost
            self._loop = asyncio.get_running_loop()
            try:
                await self._call(conn.registerCloseCallback, self._closed, conn)
            except libvirt.libvirtError as exc:
                log.warning("libvirt will not say when this connection ends", uri=self.uri, error=str(exc))
        self._conn = conn

    def _closed(self, _conn: libvirt.virConnect, reason: int, conn: libvirt.virConnect) -> None:
        """libvirt's close callback: on the loop when libvirtaio's watch saw the end, or on an
        executor thread whose call read it first. Either way the news goes to the loop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._lost_connection, conn, reason)

    def _lost_connection(self, conn: libvirt.virConnect, reason: int) -> None:
        if self._closing or conn is not self._conn:
            return   # closed by us, or a connection already given up
        self.why_lost = _CLOSE_REASONS.get(reason, f"reason {reason}")
        log.warning("libvirt connection lost; opening it again", uri=self.uri, reason=self.why_lost)
        self._conn, self._watch, self._device_watches = None, None, []   # the watches ended with it
        self._open_again_seen.clear()
        self._lost.append(conn)
        if self._reopening is None:
            self._reopening = asyncio.create_task(self._reopen(), name=f"libvirt:reopen:{self.uri}")

    async def _reopen(self) -> None:
        """Until a connection is open and stays so while on_connection hears of it (one lost
        meanwhile is lost again: its close callback came while this ran)."""
        try:
            while self._conn is None:
                await self._close_lost()
                if self.on_connection is not None:
                    await self.on_connection(False, self.why_lost)
                await self._open_again()
                await self._close_lost()
                if self._conn is not None:
                    self._open_again_seen.set()
                    if self.on_connection is not None:
                        await self.on_connection(True, "")
        finally:
            self._reopening = None

    async def _close_lost(self) -> None:
        while self._lost:
            lost = self._lost.pop()
            try:
                await self._call(lost.unregisterCloseCallback)
                await self._call(lost.close)
            except libvirt.libvirtError:
                pass   # it is gone either way

    async def _open_again(self) -> None:
        for attempt in itertools.count():
            await asyncio.sleep(REOPEN_PAUSES[min(attempt, len(REOPEN_PAUSES) - 1)])
            try:
                await self.open()
                if self._on_change is not None:
                    await self.watch(self._on_change)
            except errors.NovaAsyncError as exc:
                await self._drop()
                if attempt % 10 == 0:
                    log.warning("libvirt connection still down", uri=self.uri, attempts=attempt + 1, error=str(exc))
                continue
            log.info("libvirt connection open again", uri=self.uri, attempts=attempt + 1)
            return

    async def _drop(self) -> None:
        """The current connection closed, its watches with it, without a word to the close
        callback (it is ours that ends it)."""
        conn, self._conn = self._conn, None
        watch, self._watch = self._watch, None
        watches = ([watch] if watch is not None else []) + self._device_watches
        self._device_watches = []
        if conn is None:
            return
        for watch in watches:
            try:
                await self._call(conn.domainEventDeregisterAny, watch)
            except libvirt.libvirtError as exc:
                log.warning("stopping libvirt events failed", uri=self.uri, error=str(exc))
        if self._executor is not None:
            try:
                await self._call(conn.unregisterCloseCallback)
            except libvirt.libvirtError:
                pass
        try:
            await self._call(conn.close)
        except libvirt.libvirtError as exc:
            log.warning("closing libvirt connection failed", uri=self.uri, error=str(exc))

    async def watch(self, on_change: Callable[[str], None]) -> None:
        """Call `on_change(instance_uuid)` on the event loop whenever one of our guests starts,
        stops, pauses, resumes, crashes or suspends, whoever made it happen, but for the start
        that start() itself made. Delivered only when events.enable() ran before this
        connection was opened. A connection opened again after a loss is watched the same."""
        self._on_change = on_change

        def relay(_conn: Any, dom: libvirt.virDomain, event: int, _detail: int, _opaque: Any) -> None:
            try:
                instance_uuid = uuid_from_domain_name(dom.name())
                if event == libvirt.VIR_DOMAIN_EVENT_STARTED and self._own_start(dom.name()):
                    return
                if event in _POWER_EVENTS and instance_uuid is not None:
                    on_change(instance_uuid)
            except Exception:  # an exception must not reach libvirt's dispatcher
                log.exception("handling a libvirt lifecycle event failed")

        self._watch = await self._libvirt("watch lifecycle events", self.conn.domainEventRegisterAny,
                                          None, libvirt.VIR_DOMAIN_EVENT_ID_LIFECYCLE, relay, None)

        def removed(_conn: Any, dom: libvirt.virDomain, *_rest: Any) -> None:
            try:
                for waiter in self._removals.get(dom.name(), ()):
                    waiter.set()
            except Exception:  # an exception must not reach libvirt's dispatcher
                log.exception("handling a libvirt device event failed")

        for event in (libvirt.VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED, libvirt.VIR_DOMAIN_EVENT_ID_DEVICE_REMOVAL_FAILED):
            self._device_watches.append(await self._libvirt(
                "watch device events", self.conn.domainEventRegisterAny, None, event, removed, None))

    async def close(self) -> None:
        self._closing = True
        if self._reopening is not None:
            self._reopening.cancel()
            await asyncio.gather(self._reopening, return_exceptions=True)
        await self._close_lost()
        await self._drop()

    async def facts(self) -> NodeFacts:
        conn = self.conn
        info = await self._call(conn.getInfo)
        driver = (await self._call(conn.getType)).upper()
        version = await self._call(conn.getVersion)
        if driver == "TEST":
            return NodeFacts(vcpus=info[2], memory_mb=info[1], hypervisor_type="test",
                             hypervisor_version=version, domain_type="test")
        # KVM is not assumed: /dev/kvm can exist and still abort guests (see DESIGN.md).
        # Registration probes it and may upgrade this to "kvm".
        return NodeFacts(vcpus=info[2], memory_mb=info[1], hypervisor_type="QEMU",
                         hypervisor_version=version, domain_type="qemu")

    async def cpu_info(self) -> dict[str, Any]:
        """The host CPU (cpu_info_of): read once, at registration; the periodic inventory
        refresh, which reads facts(), does not need it."""
        return cpu_info_of(await self._call(self.conn.getCapabilities))

    async def start(self, xml: str) -> None:
        """Define the domain and boot it; a domain that cannot boot is not left defined.
        Its STARTED event is not relayed to watch(): the caller knows, and sets the state.
        When the connection ends meanwhile and another opens within RESTART_WAIT, the guest
        is looked at there: libvirtd may have booted it; if not, it is booted now."""
        conn = self.conn
        try:
            await self._define_and_boot(conn, xml)
        except errors.NovaAsyncError:
            if not await self._opened_again_after(conn):
                raise
            name = ET.fromstring(xml).findtext("name") or ""
            state = await self.guest_state(name)
            log.warning("libvirt connection was lost while a guest started; finishing on the new one",
                        uri=self.uri, domain=name, running=state is not None and state.running)
            if state is None or not state.running:
                await self._define_and_boot(self.conn, xml)

    async def _define_and_boot(self, conn: libvirt.virConnect, xml: str) -> None:
        dom = await self._libvirt("define the domain", conn.defineXML, xml)
        name = dom.name()
        if self._watch is not None:
            self._own_starts[name] = time.monotonic() + OWN_START_EVENT_WINDOW
        try:
            await self._libvirt("start the domain", dom.create)
        except BaseException:
            self._own_starts.pop(name, None)
            if conn is self._conn:   # a lost connection cannot undefine; start() looks again
                await self._quietly(dom.undefine)
            raise

    async def _boot(self, dom: libvirt.virDomain) -> None:
        """Boot the defined domain `dom` (a power-on, a reboot). As in start(): when the
        connection ends meanwhile and another opens within RESTART_WAIT, the guest is looked
        at there, and booted if it is not running."""
        conn = self.conn
        try:
            await self._libvirt("start the domain", dom.create)
        except errors.NovaAsyncError:
            if not await self._opened_again_after(conn):
                raise
            name = dom.name()
            state = await self.guest_state(name)
            log.warning("libvirt connection was lost while a guest booted; finishing on the new one",
                        uri=self.uri, domain=name, running=state is not None and state.running)
            if state is None or not state.running:
                await self._libvirt("start the domain", (await self._domain(name)).create)

    async def _opened_again_after(self, conn: libvirt.virConnect) -> bool:
        """Whether `conn` was lost and a new connection opened within RESTART_WAIT."""
        if conn is self._conn or self._closing:
            return False
        try:
            await asyncio.wait_for(self._open_again_seen.wait(), RESTART_WAIT)
        except TimeoutError:
            return False
        return self._conn is not None

    def _own_start(self, name: str) -> bool:
        """Whether a STARTED event of domain `name` is the one start() is waiting for (taken
        once). Entries whose event never came are dropped once expired."""
        now = time.monotonic()
        expected = self._own_starts.pop(name, None)
        if len(self._own_starts) > 1000:
            self._own_starts = {n: t for n, t in self._own_starts.items() if t > now}
        return expected is not None and expected > now

    async def define(self, xml: str) -> None:
        """Define (or redefine) the domain without booting it: a stopped server's guest."""
        await self._libvirt("define the domain", self.conn.defineXML, xml)

    async def xml_of(self, name: str) -> str:
        """The domain's definition as libvirt holds it (what a resize changed, say)."""
        dom = await self._domain(name)
        return await self._libvirt("read the domain's XML", dom.XMLDesc, 0)

    async def remove(self, name: str) -> bool:
        """Power off and undefine domain `name`; False when there was no such domain."""
        try:
            dom = await self._call(self.conn.lookupByName, name)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in _GONE:
                return False
            raise errors.NovaAsyncError(f"libvirt: cannot look up {name}: {exc}") from None
        try:
            await self._call(dom.destroy)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() not in _GONE + _NOT_RUNNING:
                raise errors.NovaAsyncError(f"libvirt: cannot stop {name}: {exc}") from None
        flags = libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE | libvirt.VIR_DOMAIN_UNDEFINE_SNAPSHOTS_METADATA
        try:
            await self._call(dom.undefineFlags, flags)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() not in _GONE:
                raise errors.NovaAsyncError(f"libvirt: cannot undefine {name}: {exc}") from None
        return True

    async def guest_state(self, name: str) -> GuestState | None:
        """What the domain is doing now; None when there is no domain of that name."""
        try:
            dom = await self._call(self.conn.lookupByName, name)
            state, _reason = await self._call(dom.state)
            saved = bool(await self._call(dom.hasManagedSaveImage, 0))
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in _GONE:
                return None
            raise errors.NovaAsyncError(f"libvirt: cannot read the state of {name}: {exc}") from None
        return GuestState(state, saved)

    # Power operations (power.py decides which one a request needs). Each starts from the
    # domain's actual state, so asking for a state the guest is already in does nothing.

    async def reboot(self, name: str, *, hard: bool, timeout: float) -> None:
        """Soft: ask the guest to shut down (ACPI) and boot it again once it has; a guest
        that is still up after `timeout` seconds is rebooted hard. Hard: power off (dropping
        any saved memory image) and boot afresh."""
        dom = await self._domain(name)
        if not hard and await self._call(dom.isActive):
            if await self._shut_down(dom, timeout):
                await self._boot(dom)
                return
            log.info("the guest did not shut down for a soft reboot; rebooting hard", domain=name,
                     timeout=timeout)
        if await self._call(dom.isActive):
            await self._libvirt("power off the domain", dom.destroy)
        if await self._call(dom.hasManagedSaveImage, 0):
            await self._libvirt("discard the saved memory image", dom.managedSaveRemove, 0)
        await self._boot(dom)

    async def power_off(self, name: str, *, timeout: float) -> None:
        """Ask the guest to shut down; pull the plug if it has not within `timeout` seconds."""
        dom = await self._domain(name)
        if await self._call(dom.isActive) and not await self._shut_down(dom, timeout):
            try:
                await self._call(dom.destroy)
            except libvirt.libvirtError as exc:
                if exc.get_error_code() not in _NOT_RUNNING:
                    raise errors.NovaAsyncError(f"libvirt could not power off the domain: "
                                                f"{exc.get_error_message()}") from None

    async def _shut_down(self, dom: libvirt.virDomain, timeout: float) -> bool:
        """Press the guest's ACPI power button; True once it is off, False if it still runs
        after `timeout` seconds (or refused the request)."""
        if timeout > 0:
            try:
                await self._call(dom.shutdown)
            except libvirt.libvirtError as exc:
                log.info("graceful shutdown refused", error=exc.get_error_message())
                return False
        return await self._off_within(dom, timeout)

    async def _off_within(self, dom: libvirt.virDomain, timeout: float) -> bool:
        """Whether the domain is off within `timeout` seconds. The state is polled, backing
        off: the test driver is off before the first look, a TCG guest takes a second or two."""
        loop = asyncio.get_running_loop()
        delay, deadline = 0.01, loop.time() + timeout
        while await self._call(dom.isActive):
            left = deadline - loop.time()
            if left <= 0:
                return False
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, 0.5)
        return True

    async def power_on(self, name: str, *, timeout: float) -> None:
        """Boot the domain, or restore it from its saved memory image when it has one. A
        guest still on its way down is let finish (pulled after `timeout` seconds) and then
        booted: starting it is what was asked, and it is not running."""
        dom = await self._domain(name)
        if await self._call(dom.isActive):
            if (await self._call(dom.state))[0] != libvirt.VIR_DOMAIN_SHUTDOWN:
                return
            if not await self._off_within(dom, timeout):
                await self._libvirt("power off the domain", dom.destroy)
        await self._boot(dom)

    async def pause(self, name: str) -> None:
        dom = await self._domain(name)
        if (await self._call(dom.state))[0] != libvirt.VIR_DOMAIN_PAUSED:
            await self._libvirt("pause the domain", dom.suspend)

    async def unpause(self, name: str) -> None:
        dom = await self._domain(name)
        if (await self._call(dom.state))[0] == libvirt.VIR_DOMAIN_PAUSED:
            await self._libvirt("unpause the domain", dom.resume)

    async def save(self, name: str) -> None:
        """Write the guest's memory to its managed-save image and stop it (suspend)."""
        dom = await self._domain(name)
        if await self._call(dom.isActive):
            await self._libvirt("save the domain", dom.managedSave, 0)
        elif not await self._call(dom.hasManagedSaveImage, 0):
            raise errors.Conflict(f"{name} is neither running nor saved")

    async def discard_saved(self, name: str) -> None:
        """Drop the guest's managed-save image (a suspended guest's memory), if it has one:
        it boots afresh next time (a shelved guest's disk was written without that memory)."""
        dom = await self._domain(name)
        if await self._call(dom.hasManagedSaveImage, 0):
            await self._libvirt("discard the saved memory image", dom.managedSaveRemove, 0)

    async def is_running(self, name: str) -> bool | None:
        """True/False for a defined domain, None when there is none of that name."""
        try:
            dom = await self._call(self.conn.lookupByName, name)
            return bool(await self._call(dom.isActive))
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in _GONE:
                return None
            raise errors.NovaAsyncError(f"libvirt: {exc}") from None

    async def guests(self) -> dict[str, GuestState]:
        """What every guest of ours on this host is doing, by instance uuid."""
        found = {}
        for dom in await self._libvirt("list domains", self.conn.listAllDomains):
            instance_uuid = uuid_from_domain_name(await self._call(dom.name))
            if instance_uuid is None:
                continue
            try:
                state, _reason = await self._call(dom.state)
                saved = (state == libvirt.VIR_DOMAIN_SHUTOFF
                         and bool(await self._call(dom.hasManagedSaveImage, 0)))
            except libvirt.libvirtError as exc:
                if exc.get_error_code() in _GONE:
                    continue  # undefined while we looked
                raise errors.NovaAsyncError(f"libvirt: cannot read a guest's state: {exc}") from None
            found[instance_uuid] = GuestState(state, saved)
        return found

    async def instance_uuids(self, node: str) -> set[str]:
        """The instances whose domains here compute node `node` made (our metadata says so).
        Another nova-async sharing this libvirt (a test run beside a service, say) has
        other nodes: its domains are not in the answer."""
        found = set()
        for dom in await self._libvirt("list domains", self.conn.listAllDomains):
            instance_uuid = uuid_from_domain_name(await self._call(dom.name))
            if instance_uuid is None:
                continue
            try:
                metadata = await self._call(dom.metadata, libvirt.VIR_DOMAIN_METADATA_ELEMENT, NS, 0)
            except libvirt.libvirtError:
                continue  # no metadata of ours, or undefined meanwhile: not provably ours
            if node_of(metadata) == node:
                found.add(instance_uuid)
        return found

    # Volumes (volumes.py): disks added to and taken from a defined guest, running or not.

    @property
    def simulated(self) -> bool:
        """libvirt's test driver: it has no device hotplug (libvirt 9.0 answers "not
        supported"), so its guests' disks change by redefinition (_redefine_simulated)."""
        return urllib.parse.urlsplit(self.uri).scheme.startswith("test")

    async def disk_targets(self, name: str, *, live: bool) -> dict[str, str]:
        """The guest's disks, target → serial ("" without one): as it runs now (`live`; for
        a guest that is off, its definition), or as its persistent definition has them."""
        dom = await self._domain(name)
        flags = 0 if live else libvirt.VIR_DOMAIN_XML_INACTIVE
        return disks_in(await self._libvirt("read the domain's XML", dom.XMLDesc, flags))

    async def attach_device(self, name: str, device_xml: str, *, persistent_only: bool = False) -> None:
        """Add a device to the guest's persistent definition and, when it is running (or
        paused) and not `persistent_only`, to the running guest."""
        dom = await self._domain(name)
        live = not persistent_only and bool(await self._call(dom.isActive))
        if self.simulated:
            await self._redefine_simulated(dom, live, lambda devices: devices.append(ET.fromstring(device_xml)))
            return
        flags = libvirt.VIR_DOMAIN_AFFECT_CONFIG | (libvirt.VIR_DOMAIN_AFFECT_LIVE if live else 0)
        await self._libvirt("attach the device", dom.attachDeviceFlags, device_xml, flags)

    async def detach_disk(self, name: str, device_xml: str, target: str, *,
                          attempts: int = LIVE_DETACH_ATTEMPTS, timeout: float = LIVE_DETACH_TIMEOUT) -> None:
        """Take disk `target` out of the guest: from its persistent definition first (a guest
        that reboots meanwhile does not get it back), then from the running guest, asking
        again up to `attempts` times and waiting `timeout` seconds for libvirt's
        device-removed event each time. Returns once the disk is in neither. A guest that
        keeps it gets it back in its persistent definition too (it is still attached: a
        later stop and start must not lose it), and NovaAsyncError says so."""
        dom = await self._domain(name)
        if self.simulated:
            live = bool(await self._call(dom.isActive))
            await self._redefine_simulated(dom, live, lambda devices: _drop_disk(devices, target))
            return
        persistent = target in await self.disk_targets(name, live=False)
        if persistent:
            await self._libvirt("detach the disk from the domain's definition", dom.detachDeviceFlags,
                                device_xml, libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        for attempt in range(1, attempts + 1):
            if await self._released(dom, name, target):
                return
            removed = asyncio.Event()
            self._removals.setdefault(name, set()).add(removed)  # before asking: the event may come at once
            try:
                try:
                    await self._call(dom.detachDeviceFlags, device_xml, libvirt.VIR_DOMAIN_AFFECT_LIVE)
                except libvirt.libvirtError as exc:
                    # "already in the process of unplug", or gone meanwhile: the XML says.
                    log.info("live detach request refused", domain=name, target=target, attempt=attempt,
                             error=exc.get_error_message())
                if await self._released(dom, name, target):
                    return
                try:
                    await asyncio.wait_for(removed.wait(), timeout)
                except TimeoutError:
                    log.info("the guest has not released the disk yet", domain=name, target=target,
                             attempt=attempt)
            finally:
                waiters = self._removals.get(name, set())
                waiters.discard(removed)
                if not waiters:
                    self._removals.pop(name, None)
        if await self._released(dom, name, target):
            return
        if persistent:
            await self._libvirt("give the disk back to the domain's definition", dom.attachDeviceFlags,
                                device_xml, libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        raise errors.NovaAsyncError(f"The guest did not release disk {target} after {attempts} detach requests.")

    async def _released(self, dom: libvirt.virDomain, name: str, target: str) -> bool:
        """The running guest no longer has disk `target` (or it does not run)."""
        return not await self._call(dom.isActive) or target not in await self.disk_targets(name, live=True)

    async def block_resize(self, name: str, target: str, size_bytes: int) -> None:
        """Tell the running guest that disk `target` is now `size_bytes` long (a volume grew).
        A guest that is off reads the size when it boots; the test driver has no disks."""
        dom = await self._domain(name)
        if self.simulated or not await self._call(dom.isActive):
            return
        await self._libvirt("resize the disk", dom.blockResize, target, size_bytes,
                            libvirt.VIR_DOMAIN_BLOCK_RESIZE_BYTES)

    async def _redefine_simulated(self, dom: libvirt.virDomain, live: bool,
                                  change: Callable[[ET.Element], None]) -> None:
        """A test-driver guest's disks changed the only way that driver allows: its
        definition rewritten, and a running guest (it has no state to lose) restarted so
        that it runs with it, as a real guest would after a hotplug."""
        root = ET.fromstring(await self._libvirt("read the domain's XML", dom.XMLDesc,
                                                 libvirt.VIR_DOMAIN_XML_INACTIVE))
        change(root.find("devices"))
        await self._libvirt("define the domain", self.conn.defineXML, ET.tostring(root, encoding="unicode"))
        if live:
            paused = (await self._call(dom.state))[0] == libvirt.VIR_DOMAIN_PAUSED
            await self._libvirt("power off the domain", dom.destroy)
            await self._libvirt("start the domain", dom.create)
            if paused:
                await self._libvirt("pause the domain", dom.suspend)

    async def _domain(self, name: str) -> libvirt.virDomain:
        try:
            return await self._call(self.conn.lookupByName, name)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in _GONE:
                raise GuestGone(f"The guest {name} does not exist on this host.") from None
            raise errors.NovaAsyncError(f"libvirt: cannot look up {name}: {exc}") from None

    async def _libvirt(self, doing: str, fn: Callable[..., T], *args: Any) -> T:
        try:
            return await self._call(fn, *args)
        except libvirt.libvirtError as exc:
            raise errors.NovaAsyncError(f"libvirt could not {doing}: {exc.get_error_message()}") from None

    async def _quietly(self, fn: Callable[[], Any]) -> None:
        try:
            await self._call(fn)
        except libvirt.libvirtError as exc:
            log.warning("libvirt clean-up step failed", error=str(exc))

    async def inspect(self, name: str, doing: str, read: Callable[[libvirt.virDomain], T]) -> T:
        """`read(domain)` run where blocking libvirt calls belong: several reads of one guest
        (its live XML, its statistics) in one trip. GuestGone when there is no such domain."""
        dom = await self._domain(name)
        return await self._libvirt(doing, read, dom)


def disks_in(domain_xml: str) -> dict[str, str]:
    """target → serial ("" without one) of every <disk> in a domain's XML."""
    found = {}
    for disk in ET.fromstring(domain_xml).iterfind("devices/disk"):
        target = disk.find("target")
        if target is not None and target.get("dev"):
            found[target.get("dev")] = disk.findtext("serial") or ""
    return found


def _drop_disk(devices: ET.Element, target: str) -> None:
    for disk in devices.findall("disk"):
        found = disk.find("target")
        if found is not None and found.get("dev") == target:
            devices.remove(disk)
