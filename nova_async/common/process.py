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
    return await _run(argv, None, timeout, cwd)


async def run_input(*argv: str, data: bytes, timeout: float = 60.0, cwd: Path | None = None) -> Completed:
    """`run`, with `data` on the program's stdin (an nft rule set, say)."""
    return await _run(argv, data, timeout, cwd)


async def _run(argv: tuple[str, ...], data: bytes | None, timeout: float, cwd: Path | None) -> Completed:
    stdin = asyncio.subprocess.DEVNULL if data is None else asyncio.subprocess.PIPE
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdin=stdin,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    try:
        async with asyncio.timeout(timeout):
            out, _ = await proc.communicate(data)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ProcessTimeout(f"{Path(argv[0]).name} did not finish within {timeout:.0f} s") from None
    return Completed(proc.returncode or 0, out.decode(errors="replace"))
