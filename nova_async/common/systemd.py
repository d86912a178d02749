"""systemd's service notification protocol (sd_notify), spoken directly: no libsystemd.

Under a `Type=notify` unit systemd puts a unix datagram socket in $NOTIFY_SOCKET (a path,
or a name in the abstract namespace when it starts with '@') and reads newline-separated
`KEY=value` assignments from it: READY=1 once the service works, STATUS= for
`systemctl status`, STOPPING=1 when shutdown begins, WATCHDOG=1 as a keep-alive when the
unit has WatchdogSec= (then $WATCHDOG_USEC says the limit and $WATCHDOG_PID whom it is for).

The keep-alive is sent by a task on the event loop itself, never by a thread: a loop that
hangs stops the pings, and systemd kills and restarts the service. That is the point. For
the same reason the pings stop while the service says it cannot work (its database gone for
longer than service.database_outage_limit): alive but useless is a hang to its users.

Outside systemd (no $NOTIFY_SOCKET) every call does nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, MutableMapping

import structlog

log = structlog.get_logger("systemd")

ENVIRONMENT = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


class Notifier:
    """Talks to the service manager that started this process, if any."""

    def __init__(self, address: str | None = None, watchdog_usec: int = 0) -> None:
        self.address = address
        # systemd's advice: ping at half the limit, so one late ping is not yet a kill.
        self.watchdog_interval = watchdog_usec / 2e6 if address and watchdog_usec > 0 else None
        self._sock: socket.socket | None = None

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None) -> Notifier:
        """Read (and remove) the variables systemd set for this process.

        They are removed so that no child inherits them: this process starts its private
        PostgreSQL, qemu-img, ip and QEMU, and Debian's postgres speaks sd_notify too; its
        READY=1 must not be taken for ours."""
        env = os.environ if environ is None else environ
        raw = env.get("NOTIFY_SOCKET", "")
        usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
        for name in ENVIRONMENT:
            env.pop(name, None)
        address = None
        if raw.startswith("@"):
            address = "\0" + raw[1:]
        elif raw.startswith("/"):
            address = raw
        elif raw:
            log.warning("NOTIFY_SOCKET is not a unix socket address; not notifying systemd",
                        notify_socket=raw)
        watchdog = 0
        if usec.isdigit() and (not pid or pid == str(os.getpid())):
            watchdog = int(usec)
        return cls(address, watchdog)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def notify(self, *assignments: str) -> bool:
        """Send `KEY=value` assignments in one datagram; False when it could not be sent
        (logged, never raised: the service must not fail because its supervisor is deaf)."""
        if self.address is None:
            return False
        payload = "\n".join(assignments).encode()
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                # A full receive queue must not block the event loop; the datagram is dropped.
                self._sock.setblocking(False)
            self._sock.sendto(payload, self.address)
        except OSError as exc:
            log.warning("could not notify systemd", error=exc.strerror or str(exc),
                        message=assignments[0])
            return False
        return True

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={_one_line(text)}")

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={_one_line(status)}")

    def stopping(self, status: str) -> bool:
        return self.notify("STOPPING=1", f"STATUS={_one_line(status)}")

    async def watchdog(self, withhold: Callable[[], str | None] = lambda: None) -> None:
        """Ping every half WatchdogSec until cancelled, except while `withhold()` gives a
        reason not to; returns at once without a watchdog."""
        if self.watchdog_interval is None:
            return
        log.info("feeding the systemd watchdog", interval=self.watchdog_interval)
        withheld = None
        while True:
            reason = withhold()
            if reason is None:
                if withheld is not None:
                    log.info("feeding the systemd watchdog again")
                self.notify("WATCHDOG=1")
            elif withheld is None:
                log.error("no longer feeding the systemd watchdog: systemd restarts the service "
                          "once WatchdogSec= passes", reason=reason)
            withheld = reason
            await asyncio.sleep(self.watchdog_interval)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _one_line(text: str) -> str:
    return " ".join(text.split())


# What a Service uses when nobody told it about systemd (tests, `make run`).
DISABLED = Notifier()


# The watchdog's own end-to-end test (tests/e2e/test_real_systemd.py) needs a hung event loop
# on any Linux machine. ptrace-based injection (gdb) fails on some virtual machines, and
# SIGSTOP freezes every thread, so it cannot tell a loop-fed keep-alive from a thread-fed one.
# With this variable set to a signal's name, that signal blocks the loop's own thread, as a
# hung loop would, while every other thread goes on. Nothing reads it unless it is set.
HANG_SIGNAL_ENV = "NOVA_ASYNC_TEST_HANG_SIGNAL"
HANG_SECONDS = 60


def hang_on_signal_if_asked(loop: asyncio.AbstractEventLoop) -> None:
    name = os.environ.pop(HANG_SIGNAL_ENV, "")
    if not name:
        return
    try:
        signum = signal.Signals[name if name.startswith("SIG") else f"SIG{name}"]
    except KeyError:
        log.warning("unknown signal name; no hang trigger installed", variable=HANG_SIGNAL_ENV, value=name)
        return
    loop.add_signal_handler(signum, _hang_event_loop)
    log.warning("test hang trigger installed: this signal blocks the event loop", signal=signum.name)


def _hang_event_loop() -> None:
    sys.stderr.write(f"{HANG_SIGNAL_ENV}: the event loop thread now sleeps {HANG_SECONDS} s\n")
    sys.stderr.flush()
    time.sleep(HANG_SECONDS)
