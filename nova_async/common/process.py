"""Running the helper programs nova-async relies on (pg_ctl, qemu-img, genisoimage,
apt-get …): always an argv list, never a shell, always bounded in time — a program still
running at the bound is killed, so no caller can hang on one."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from nova_async.common import errors


class ProcessTimeout(errors.Unavailable):
    code = "process_timeout"


@dataclass(frozen=True)
class Completed:
    returncode: int
    output: str  # stdout and stderr together, decoded leniently


async def run(*argv: str, timeout: float = 60.0, cwd: Path | None = None) -> Completed:
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    try:
        async with asyncio.timeout(timeout):
            out, _ = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ProcessTimeout(f"{Path(argv[0]).name} did not finish within {timeout:.0f} s") from None
    return Completed(proc.returncode or 0, out.decode(errors="replace"))
