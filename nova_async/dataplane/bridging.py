"""A network's bridge on this host, as the data plane's parts share it.

Compute makes `brq<net[:11]>` for its guests (compute/plumbing.py: a plain Linux bridge,
kept as it is when it exists); routers and the external network need the same bridge, so
this makes it the same way. A bridge made here is recorded in Made (kind `l3-bridge`, detail
`{"network_id"}`) before it is made; one that existed before (compute's, or anyone's) is not
recorded, so it is never ours to delete. Whatever part sees a recorded bridge's network gone
from the database deletes it — unless something not ours is still plugged into it.

Links are read from sysfs: it costs no process, and a part looks at many links per pass."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import structlog

from nova_async.dataplane import linux
from nova_async.dataplane.desired import Network
from nova_async.dataplane.made import Made

log = structlog.get_logger("dataplane.bridging")

SYS_NET = Path("/sys/class/net")
BRIDGE = "l3-bridge"   # Made kind, shared by the router and external-network parts
_IFF_UP = 0x1


def exists(name: str) -> bool:
    return (SYS_NET / name).exists()


def is_bridge(name: str) -> bool:
    return (SYS_NET / name / "bridge").is_dir()


def is_up(name: str) -> bool:
    try:
        return bool(int((SYS_NET / name / "flags").read_text(), 16) & _IFF_UP)
    except (OSError, ValueError):
        return False


def master(name: str) -> str | None:
    """The bridge (or bond) `name` is plugged into, if any."""
    link = SYS_NET / name / "master"
    return link.resolve().name if link.exists() else None


def members(bridge: str) -> list[str]:
    try:
        return sorted(p.name for p in (SYS_NET / bridge / "brif").iterdir())
    except OSError:
        return []


async def ensure_bridge(made: Made, network: Network) -> None:
    """The network's bridge exists and is up (recorded as ours only when made here)."""
    name = linux.check_name(network.bridge)
    if not is_bridge(name):
        if exists(name):
            raise linux.HostNetworkError(f"{name} exists and is not a bridge; network {network.id} "
                                         "cannot have its bridge")
        await made.record(BRIDGE, name, {"network_id": network.id})
        added = await linux.ip("link", "add", "name", name, "type", "bridge", check=False)
        # Compute (or another part) may have made it meanwhile: fine, it is the same bridge.
        if added.returncode != 0 and not is_bridge(name):
            raise linux.HostNetworkError(f"cannot create bridge {name}: {added.output.strip()[-300:]}")
        log.info("bridge created", bridge=name, network_id=network.id)
    if not is_up(name):
        await linux.ip("link", "set", "dev", name, "up")


async def remove_bridge(made: Made, name: str, ours: Collection[str] = ()) -> bool:
    """Delete recorded bridge `name`, whose network is gone. Ports of the network (`tap…`)
    and the links in `ours` may still be plugged in (deleting the bridge unplugs them);
    anything else plugged in (a NIC someone else put there) keeps the bridge. True when
    the bridge is gone and forgotten."""
    linux.check_name(name)
    if is_bridge(name):
        foreign = [m for m in members(name) if not m.startswith("tap") and m not in ours]
        if foreign:
            log.warning("bridge of a deleted network kept: links not ours are plugged in",
                        bridge=name, links=foreign)
            return False
        gone = await linux.ip("link", "del", "dev", name, check=False)
        if gone.returncode != 0 and exists(name):
            raise linux.HostNetworkError(f"cannot delete bridge {name}: {gone.output.strip()[-300:]}")
        log.info("bridge removed: its network is gone", bridge=name)
    await made.forget(BRIDGE, name)
    return True
