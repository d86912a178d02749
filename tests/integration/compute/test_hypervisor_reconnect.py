"""A compute host's connection to libvirtd that ends (libvirtd restarted, as a package upgrade
does) is opened again on its own, its event watches with it. The daemon is the real
libvirtd, reached through a unix-socket relay the test cuts and restores: the daemon the
rest of the suite shares is never restarted."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import libvirt
import pytest

from nova_async.common import errors
from nova_async.compute import events, registration
from nova_async.compute.hypervisor import Hypervisor
from tests.harness import running
from tests.waiting import until

LIBVIRTD = Path("/run/libvirt/libvirt-sock")
pytestmark = pytest.mark.skipif(not LIBVIRTD.exists(), reason="libvirtd is not running (make test's host-setup starts it)")


class Relay:
    """A unix socket that passes bytes to and from libvirtd's; cut() ends every connection
    through it and stops listening, as a daemon that went away; stall() holds libvirtd's
    answers back until then, so that a call is in flight when it goes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server: asyncio.Server | None = None
        self.links: set[asyncio.Task] = set()
        self.answering = asyncio.Event()
        self.answering.set()

    def stall(self) -> None:
        self.answering.clear()

    async def listen(self) -> None:
        self.server = await asyncio.start_unix_server(self._accepted, path=str(self.path))

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.links.add(asyncio.current_task())
        up_reader, up_writer = await asyncio.open_unix_connection(str(LIBVIRTD))

        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, answers: bool) -> None:
            try:
                while data := await source.read(65536):
                    if answers:
                        await self.answering.wait()
                    sink.write(data)
                    await sink.drain()
            finally:
                sink.close()

        try:
            await asyncio.gather(copy(reader, up_writer, False), copy(up_reader, writer, True))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, up_writer):
                w.close()

    async def cut(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
            self.server = None
        for link in self.links:
            link.cancel()
        await asyncio.gather(*self.links, return_exceptions=True)
        self.links.clear()
        self.path.unlink(missing_ok=True)
        self.answering.set()


def guest_xml(instance_uuid: str) -> str:
    # With its uuid, as every domain the compute host defines: defining it again (a start
    # finished on the next connection) then updates it instead of clashing with the first.
    return (f"<domain type='test'><name>instance-{instance_uuid}</name><uuid>{instance_uuid}</uuid>"
            "<memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type>hvm</type></os></domain>")


@contextlib.asynccontextmanager
async def through_relay(tmp_path: Path) -> AsyncIterator[tuple[Relay, Hypervisor]]:
    """A daemon connection's Hypervisor (on threads, events on) reaching libvirtd through a
    relay, both undone at the end."""
    assert events.enable(), "libvirt's events belong to this test session's loop"
    relay = Relay(tmp_path / "libvirt-sock")
    await relay.listen()
    executor = ThreadPoolExecutor(2, thread_name_prefix="test-libvirt")
    hypervisor = Hypervisor(f"test+unix:///default?socket={relay.path}", executor)
    try:
        yield relay, hypervisor
    finally:
        await hypervisor.close()
        with contextlib.suppress(Exception):
            await relay.cut()
        executor.shutdown(wait=True)


async def running_after_a_cut(relay: Relay, hypervisor: Hypervisor, name: str, starting: Coroutine) -> None:
    """`starting` (a start of guest `name`) sent, the connection cut before its answer came, and
    opened again: it waits for the new connection rather than fail, and the guest runs."""
    relay.stall()
    task = asyncio.create_task(starting)
    await asyncio.sleep(0.5)   # the request reached libvirtd; its answer is held
    await relay.cut()
    await until(lambda: not hypervisor.connected, what="the loss noticed", timeout=30)
    assert not task.done()   # waiting for the next connection, not failed
    await relay.listen()
    await asyncio.wait_for(task, 90)
    state = await hypervisor.guest_state(name)
    assert state is not None and state.running, state


async def test_a_lost_libvirtd_connection_is_opened_again_with_its_event_watches(tmp_path):
    changed: list[str] = []
    told: list[tuple[bool, str]] = []

    async def on_connection(connected: bool, reason: str) -> None:
        told.append((connected, reason))

    async with through_relay(tmp_path) as (relay, hypervisor):
        hypervisor.on_connection = on_connection
        await hypervisor.open()
        await hypervisor.watch(changed.append)
        assert hypervisor.connected

        # libvirtd goes away: the connection is seen gone, and a call says so (503, not 500).
        await relay.cut()
        await until(lambda: not hypervisor.connected, what="the lost connection noticed", timeout=30)
        with pytest.raises(errors.Unavailable):
            await hypervisor.guests()

        # It comes back: the connection is opened again, without anyone asking.
        await asyncio.sleep(1.0)   # a few attempts fail meanwhile
        await relay.listen()
        await until(lambda: hypervisor.connected, what="the connection opened again", timeout=60)
        assert await hypervisor.guests() is not None
        await until(lambda: len(told) == 2, what="both changes told", timeout=10)
        assert [connected for connected, _ in told] == [False, True] and told[0][1], told

        # And it is watched again: a guest stopping on the new connection is reported.
        guest = str(uuid.uuid4())
        await hypervisor.start(guest_xml(guest))
        await hypervisor.power_off(f"instance-{guest}", timeout=5)
        await until(lambda: guest in changed, what="the stop reported through the new connection", timeout=30)
        await hypervisor.remove(f"instance-{guest}")

        # Lost again, and back again: each loss is one more round.
        await relay.cut()
        await until(lambda: not hypervisor.connected, what="the second loss noticed", timeout=30)
        await relay.listen()
        await until(lambda: hypervisor.connected, what="the connection opened a second time", timeout=60)
        await until(lambda: len(told) == 4, what="all four changes told", timeout=10)
        assert [connected for connected, _ in told] == [False, True, False, True], told


async def test_a_first_connection_waits_for_a_libvirtd_being_started_again(tmp_path):
    # The compute role's start while libvirtd is down for a moment (being started again):
    # asked again until it answers, within the wait; with none left, refused at once.
    async with through_relay(tmp_path) as (relay, hypervisor):
        await relay.cut()   # nobody listens at the socket
        with pytest.raises(errors.Unavailable, match="cannot connect to libvirt"):
            await hypervisor.open()
        opening = asyncio.create_task(hypervisor.open(wait=30))
        await asyncio.sleep(1.0)   # a few attempts fail meanwhile
        assert not opening.done()
        await relay.listen()
        await asyncio.wait_for(opening, 30)
        assert hypervisor.connected and await hypervisor.guests() is not None


async def test_a_call_in_flight_when_libvirtd_goes_and_a_start_finished_on_the_next_connection(tmp_path):
    # A call waiting for its answer reads the end itself, on its executor thread: libvirt calls
    # the close callback there, off the loop. A start() caught so is finished on the new one.
    name = f"instance-{uuid.uuid4()}"
    async with through_relay(tmp_path) as (relay, hypervisor):
        try:
            await hypervisor.open()
            relay.stall()
            in_flight = asyncio.create_task(hypervisor.guests())
            await asyncio.sleep(0.5)
            await relay.cut()
            with pytest.raises(errors.NovaAsyncError):
                await in_flight
            await until(lambda: not hypervisor.connected, what="the loss noticed off the loop", timeout=30)
            await relay.listen()
            await until(lambda: hypervisor.connected, what="the connection opened again", timeout=60)

            await running_after_a_cut(relay, hypervisor, name, hypervisor.start(guest_xml(name.removeprefix("instance-"))))
        finally:
            with contextlib.suppress(Exception):
                await hypervisor.remove(name)


async def test_a_boot_in_flight_when_libvirtd_goes_is_finished_on_the_next_connection(tmp_path):
    # The boot of a power-on or a reboot (_boot: its define and shutdown come before it) whose
    # answer the end of the connection took: looked at on the next one and booted there.
    # libvirtd's test:///default lives while a connection to it does, so one stays open
    # around the cut (with QEMU, a defined guest outlives every connection).
    name = f"instance-{uuid.uuid4()}"
    keeper = await asyncio.to_thread(libvirt.open, "test+unix:///default")
    async with through_relay(tmp_path) as (relay, hypervisor):
        try:
            await hypervisor.open()
            await hypervisor.start(guest_xml(name.removeprefix("instance-")))
            await hypervisor.power_off(name, timeout=0)
            await running_after_a_cut(relay, hypervisor, name, hypervisor._boot(await hypervisor._domain(name)))
        finally:
            with contextlib.suppress(Exception):
                await hypervisor.remove(name)
            await asyncio.to_thread(keeper.close)


async def test_a_host_is_disabled_while_its_libvirt_connection_is_down_unless_an_admin_did(pool, tmp_path):
    # As Nova: "AUTO: Connection to libvirt lost: ..." while it is down, so the scheduler sends
    # nothing there; enabled again when it is back. An admin's disable is the admin's.
    async with running(pool, ["placement", "compute"], tmp_path, compute={"simulate_hosts": 2, "report_interval": 1}) as h:
        one, two = (h.roles["compute"].hosts[name] for name in ("sim-1", "sim-2"))

        async def service(host) -> tuple[bool, str | None]:
            row = await pool.fetchrow("SELECT disabled, disabled_reason FROM services WHERE id = $1", host.service_id)
            return row["disabled"], row["disabled_reason"]

        await pool.execute("UPDATE services SET disabled = true, disabled_reason = 'maintenance' WHERE id = $1",
                           two.service_id)
        for host in (one, two):
            await registration.libvirt_connection(host, False, "the daemon closed it")
        assert await service(one) == (True, "AUTO: Connection to libvirt lost: the daemon closed it")
        assert await service(two) == (True, "maintenance")
        for host in (one, two):
            await registration.libvirt_connection(host, True, "")
        assert await service(one) == (False, None)
        assert await service(two) == (True, "maintenance")

        # A change the database missed (it was down then): the heartbeat says it again.
        await pool.execute("UPDATE services SET disabled = true, disabled_reason = $2 WHERE id = $1",
                           one.service_id, "AUTO: Connection to libvirt lost: the daemon closed it")
        await until(lambda: service(one), lambda state: state == (False, None),
                    what="the heartbeat's catch-up", timeout=30)
        assert await service(two) == (True, "maintenance")
