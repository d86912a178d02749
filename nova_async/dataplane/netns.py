"""Listening sockets inside a network namespace, made by this process without a helper.

A socket belongs to the namespace it was created in, for its whole life, whichever thread
later uses it. So a thread enters the namespace (setns(2); Python 3.11 has no os.setns, so
through libc), creates and binds the socket, and goes back to the process's namespace; the
event loop then serves the socket like any other.

That thread is a fresh one, started for this and ended right after: a thread in the wrong
namespace would resolve names, connect and bind there, so none is ever reused. Should even
the way back fail, the thread ends without running anything else."""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import threading
from pathlib import Path

NETNS_DIR = Path("/run/netns")       # where `ip netns add` mounts a namespace by name
CLONE_NEWNET = 0x40000000
IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)   # <linux/in.h>; Python names it from 3.12

Identity = tuple[int, int]           # (st_dev, st_ino) of a namespace: which one it is


class NamespaceMissing(FileNotFoundError):
    """No namespace of that name (yet)."""


def identity(name: str) -> Identity | None:
    """Which namespace `name` is now (None: there is none); a namespace deleted and made
    again under the same name is another one."""
    try:
        st = os.stat(NETNS_DIR / name)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def _bind_in(name: str, address: str, port: int, backlog: int) -> tuple[socket.socket, Identity]:
    """On a thread of its own: a TCP socket listening on address:port in namespace `name`."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        try:
            target = os.open(NETNS_DIR / name, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise NamespaceMissing(f"there is no network namespace {name}") from None
        try:
            st = os.fstat(target)
            _setns(target)
            sock = None
            try:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                # Bound whether or not the address is on a device yet: the listener then does
                # not depend on when the namespace's owner adds it (nor on it being re-added).
                sock.setsockopt(socket.IPPROTO_IP, IP_FREEBIND, 1)
                sock.bind((address, port))
                sock.listen(backlog)
                sock.setblocking(False)
            except BaseException:
                if sock is not None:
                    sock.close()
                raise
            finally:
                _setns(own)   # raising here ends this thread all the same (module docstring)
        finally:
            os.close(target)
    finally:
        os.close(own)
    return sock, (st.st_dev, st.st_ino)


async def listening_socket(name: str, address: str, port: int, *,
                           backlog: int = 128) -> tuple[socket.socket, Identity]:
    """A non-blocking socket listening on address:port inside namespace `name`, and which
    namespace that was. NamespaceMissing when there is none; OSError when it cannot be made."""
    loop = asyncio.get_running_loop()
    made: asyncio.Future[tuple[socket.socket, Identity]] = loop.create_future()

    def deliver(result: tuple[socket.socket, Identity] | None, exc: BaseException | None) -> None:
        if made.cancelled():   # nobody waits for it any more
            if result is not None:
                result[0].close()
        elif exc is not None:
            made.set_exception(exc)
        else:
            made.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            result = _bind_in(name, address, port, backlog)
        except BaseException as exc:  # handed to the awaiting task, which raises it
            loop.call_soon_threadsafe(deliver, None, exc)
        else:
            try:
                loop.call_soon_threadsafe(deliver, result, None)
            except RuntimeError:   # the loop is closed: nobody will ever serve it
                result[0].close()

    threading.Thread(target=work, name=f"netns:{name}"[:40], daemon=True).start()
    return await made
