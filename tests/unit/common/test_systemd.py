"""The sd_notify protocol against a real unix datagram socket, the way systemd listens."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid

from nova_async.common.systemd import Notifier


@contextlib.contextmanager
def listener(path: str | None = None):
    """A datagram socket like systemd's; yields (socket, the NOTIFY_SOCKET value)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"@nova-async-test-{uuid.uuid4()}"
    sock.bind(path if path else "\0" + name[1:])
    sock.setblocking(False)
    try:
        yield sock, path or name
    finally:
        sock.close()


async def receive(sock: socket.socket) -> str:
    async with asyncio.timeout(10):
        return (await asyncio.get_running_loop().sock_recv(sock, 4096)).decode()


def pending(sock: socket.socket) -> list[str]:
    found = []
    while True:
        try:
            found.append(sock.recv(4096).decode())
        except BlockingIOError:
            return found


def test_environment_is_read_and_removed_so_children_do_not_notify():
    env = {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "30000000",
           "WATCHDOG_PID": str(os.getpid()), "PATH": "/usr/bin"}
    notifier = Notifier.from_environ(env)
    assert notifier.address == "/run/systemd/notify"
    assert notifier.watchdog_interval == 15.0
    assert env == {"PATH": "/usr/bin"}


def test_abstract_socket_names_and_foreign_watchdogs():
    notifier = Notifier.from_environ({"NOTIFY_SOCKET": "@sd-notify", "WATCHDOG_USEC": "2000000",
                                      "WATCHDOG_PID": str(os.getppid())})
    assert notifier.address == "\0sd-notify"
    assert notifier.watchdog_interval is None  # the watchdog is another process's


def test_outside_systemd_nothing_is_sent():
    notifier = Notifier.from_environ({})
    assert not notifier.enabled and notifier.watchdog_interval is None
    assert notifier.ready("ready") is False
    assert Notifier.from_environ({"NOTIFY_SOCKET": "relative/path"}).enabled is False


async def test_ready_status_and_stopping_arrive_as_systemd_reads_them(tmp_path):
    for path in (None, str(tmp_path / "notify")):
        with listener(path) as (sock, address):
            notifier = Notifier.from_environ({"NOTIFY_SOCKET": address})
            try:
                assert notifier.status("waiting for role\ncompute")
                assert await receive(sock) == "STATUS=waiting for role compute"
                notifier.ready("ready at http://127.0.0.1:8774")
                assert await receive(sock) == "READY=1\nSTATUS=ready at http://127.0.0.1:8774"
                notifier.stopping("draining")
                assert await receive(sock) == "STOPPING=1\nSTATUS=draining"
            finally:
                notifier.close()


def test_a_listener_that_went_away_is_not_an_error(tmp_path):
    notifier = Notifier.from_environ({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    try:
        assert notifier.ready("ready") is False
    finally:
        notifier.close()


async def test_watchdog_is_fed_by_the_event_loop_so_a_blocked_loop_stops_it():
    with listener() as (sock, address):
        notifier = Notifier.from_environ({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "20000"})
        assert notifier.watchdog_interval == 0.01
        feeding = asyncio.create_task(notifier.watchdog(), name="test:watchdog")
        try:
            assert await receive(sock) == "WATCHDOG=1"
            pending(sock)
            time.sleep(0.2)  # the loop is stuck for twenty intervals: no ping may leave
            assert pending(sock) == []
            assert await receive(sock) == "WATCHDOG=1"  # and once it runs again, they resume
        finally:
            feeding.cancel()
            await asyncio.gather(feeding, return_exceptions=True)
            notifier.close()


async def test_without_a_watchdog_the_task_ends_at_once():
    with listener() as (_, address):
        notifier = Notifier.from_environ({"NOTIFY_SOCKET": address})
        async with asyncio.timeout(5):
            await notifier.watchdog()


async def test_the_watchdog_is_not_fed_while_the_service_says_why_not():
    reason: list[str | None] = ["the database has been unreachable for 61 s"]
    with listener() as (sock, address):
        notifier = Notifier.from_environ({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "20000"})
        feeding = asyncio.create_task(notifier.watchdog(lambda: reason[0]), name="test:watchdog")
        try:
            await asyncio.sleep(0.2)  # twenty intervals: no ping may leave
            assert pending(sock) == []
            reason[0] = None  # the database is back
            assert await receive(sock) == "WATCHDOG=1"
        finally:
            feeding.cancel()
            await asyncio.gather(feeding, return_exceptions=True)
            notifier.close()
