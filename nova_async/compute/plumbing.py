"""Host-side network plumbing for real guests: one Linux bridge per network.

The network service names a port's bridge (`brq` + the network id, as Neutron's linuxbridge
agent does) and its tap (`tap` + the port id). The compute host makes sure the bridge
exists and is up before the guest starts; libvirt then creates the tap, plugs it into the
bridge, and removes it again when the domain stops, so taps need no clean-up here.

When the last instance on this host that uses a bridge goes, the bridge goes too. Which
instances use it is read from the database (a build records its ports before it asks for
the bridge), under the same per-bridge lock `ensure` takes: a build racing a removal
either keeps the bridge alive or makes it again. libvirt's test driver has no host
network, so simulated hosts never come here.

`ip` is run with an argv list (never a shell) and a time bound; the names it gets were
validated as interface names first, so a port or network id can never become an option
or a second command.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

from nova_async.common import errors, process

log = structlog.get_logger("compute.plumbing")

SYS_NET = Path("/sys/class/net")
IP_TIMEOUT = 10.0
# Interface names: at most 15 bytes; the letters Linux and libvirt accept without quoting.
_IFNAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")


class BridgeError(errors.NovaAsyncError):
    """The bridge a port needs could not be made; the guest would have no network."""

    code = "bridge_failed"


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _IFNAME.fullmatch(name) or name.startswith("-"):
        raise errors.InvalidInput(f"{name!r} is not a usable bridge name")
    return name


class Bridges:
    """Bridges of one host. A lock per bridge: two builds on one network add it once."""

    def __init__(self, sys_net: Path = SYS_NET) -> None:
        self._sys_net = sys_net
        self._locks: dict[str, asyncio.Lock] = {}

    def exists(self, name: str) -> bool:
        return (self._sys_net / name / "bridge").is_dir()

    async def ensure(self, name: str) -> None:
        """Make bridge `name` exist and be up (idempotent: an existing bridge is kept as is)."""
        _check_name(name)
        async with self._locks.setdefault(name, asyncio.Lock()):
            if not self.exists(name):
                if (self._sys_net / name).exists():
                    raise BridgeError(f"Cannot use {name} as the network's bridge: "
                                      "an interface of that name exists and is not a bridge.")
                added = await _ip("link", "add", "name", name, "type", "bridge")
                # Someone outside this process may have added it meanwhile; that is fine.
                if added.returncode != 0 and not self.exists(name):
                    raise BridgeError(f"Cannot create bridge {name}: {added.output.strip()[-300:]}")
                log.info("bridge created", bridge=name)
            up = await _ip("link", "set", "dev", name, "up")
            if up.returncode != 0:
                raise BridgeError(f"Cannot bring bridge {name} up: {up.output.strip()[-300:]}")


    async def remove_unused(self, name: str, in_use: Callable[[], Awaitable[bool]]) -> bool:
        """Delete bridge `name` unless an interface is still plugged into it or `in_use()`
        says an instance on this host needs it; True when it was deleted."""
        _check_name(name)
        async with self._locks.setdefault(name, asyncio.Lock()):
            if not self.exists(name) or any((self._sys_net / name / "brif").iterdir()):
                return False
            if await in_use():
                return False
            deleted = await _ip("link", "del", "dev", name)
            if deleted.returncode != 0 and self.exists(name):
                raise BridgeError(f"Cannot delete bridge {name}: {deleted.output.strip()[-300:]}")
            log.info("bridge removed: no instance on this host uses it", bridge=name)
            return True


async def _ip(*args: str) -> process.Completed:
    try:
        return await process.run("ip", *args, timeout=IP_TIMEOUT)
    except FileNotFoundError:
        raise BridgeError("Cannot create bridges: the `ip` command (iproute2) is not "
                          "installed on this compute host.") from None
