"""Things built once and cached on disk (the demo guest, the Debian cloud image): reused
while their recipe matches, built when missing or stale, one builder at a time."""

from __future__ import annotations

import asyncio
import fcntl
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


async def build_once(out: Path, load: Callable[[Path], T | None], build: Callable[[Path], Awaitable[T]],
                     leftovers: str) -> T:
    """What `load(out)` finds, else `build(out)`'s result. Two builders (a CI run and a
    developer, say) would download twice and swap files under each other: the second waits
    for the first, then finds its result. `leftovers`: the glob of a killed build's work
    directories, removed before building again."""
    cached = load(out)
    if cached:
        return cached
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        cached = load(out)
        if cached:
            return cached
        for leftover in out.glob(leftovers):
            shutil.rmtree(leftover, ignore_errors=True)
        return await build(out)


def recorded_facts(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per file of a built thing, the size and hashes (md5, sha512: what Glance reports) its
    manifest recorded; a KeyError when the manifest predates them."""
    return {n: {"size": manifest["sizes"][n], "md5": manifest["md5"][n], "sha512": manifest["sha512"][n]}
            for n in manifest["sizes"]}
