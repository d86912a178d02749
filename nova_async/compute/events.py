"""libvirt's events on the service's asyncio loop (libvirtaio).

libvirt takes one event-loop implementation per process, for good, and a connection
delivers events only if it was opened after that. So the compute role calls `enable()`
before it opens any connection: the first call registers libvirtaio on the running loop.
Should the process later run another loop (only test runners do that), connections opened
there get no events; `enable()` says so, and the role relies on its periodic
reconciliation alone.
"""

from __future__ import annotations

import asyncio

import libvirtaio


def enable() -> bool:
    """Deliver libvirt events on the running loop; False if another loop already has them."""
    loop = asyncio.get_running_loop()
    current = libvirtaio.getCurrentImpl()
    if current is None:
        libvirtaio.virEventRegisterAsyncIOImpl(loop=loop)
        return True
    return current.loop is loop
