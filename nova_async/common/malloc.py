"""The C allocator's arenas, kept few.

glibc gives threads that allocate at the same moment arenas of their own, up to eight per
CPU, and an arena keeps the pages its freed blocks leave behind. This process is one event
loop plus small thread pools (libvirt's calls against a daemon, file copies): their
allocations are brief, but each thread that ever held an arena keeps its own heap growing
in fragments. With two arenas, bench/footprint.py's service held ~5 MiB less at 10,000
servers on 1,000 simulated hosts; the event loop, where the work is, never waits for one.
Same effect as the environment's MALLOC_ARENA_MAX=2, which a user's setting still overrides."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_ARENA_MAX = -8   # mallopt's parameter number (glibc's malloc.h)
ARENAS = 2


def few_arenas() -> None:
    """Ask glibc for at most ARENAS arenas: before the thread pools start. Elsewhere (another C
    library), or when MALLOC_ARENA_MAX is set, nothing changes."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):
        return
    if mallopt is not None:
        mallopt(M_ARENA_MAX, ARENAS)
