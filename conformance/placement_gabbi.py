"""Upstream Placement's own gabbi files, run over HTTP against nova-async's placement.

openstack-placement ships its functional API tests as gabbi YAML files
(placement/tests/functional/gabbits/). Each file names fixtures that prepare the service
in-process before its requests. Only the files whose sole fixture is `APIFixture` (a fresh
empty database, a few environment variables and noauth2) can be replayed over HTTP against
another implementation: every other fixture writes rows straight into upstream's database
through its object layer (AllocationFixture, SharedStorageFixture, NUMA*/Granular* trees…)
or swaps the in-process policy or middleware (the *RBACPolicyFixture, OpenPolicyFixture,
CORSFixture), which has no HTTP equivalent. Those files are listed, not run.

Each runnable file gets a nova-async of its own (fresh state dir, own PostgreSQL, free
loopback port), as APIFixture gives each file a fresh database: files reuse names such as
CUSTOM_IRON_NFV and would otherwise see each other's data. Two files run at a time.

    .venv/bin/python conformance/placement_gabbi.py [--only FILE ...] [--verbose]

The last line printed is `passed/failed/skipped`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

VENV = Path("/var/cache/nova-async/conformance/placement-venv")
PINS = ["openstack-placement==16.0.0", "gabbi"]
CONCURRENCY = 2
READY_TIMEOUT_S = 180
# APIFixture sets these for every file; the files refer to them as $ENVIRON['…'].
UUID_VARS = ("RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2", "PROJECT_ID",
             "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID", "PROJECT_ID_ALT", "USER_ID_ALT",
             "INSTANCE_UUID", "MIGRATION_UUID", "CONSUMER_UUID", "PARENT_PROVIDER_UUID",
             "ALT_PARENT_PROVIDER_UUID")
# gabbi-run prints one line per test: "... ✓ name", "... ✗ name" (failed), "... E name" (the
# test itself raised, e.g. the HTTP client refused to send it), "... - name" (skipped).
RESULT_LINE = re.compile(r"^\.\.\. (?P<mark>[✓✗E\-]) (?P<name>.+)$")


def ensure_venv() -> Path:
    """The suite's own virtualenv, created and filled once."""
    python = VENV / "bin" / "python"
    if not (VENV / "bin" / "gabbi-run").exists():
        VENV.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        with (VENV.parent / "placement-install.log").open("w") as log:
            subprocess.run([str(python), "-m", "pip", "install", *PINS], check=True, stdout=log,
                           stderr=subprocess.STDOUT)
    return VENV


def gabbits_dir(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages/placement/tests/functional/gabbits"))
    if not found:
        sys.exit(f"no gabbits directory under {venv}")
    return found[0]


def fixtures_of(path: Path) -> list[str]:
    """The names under a gabbi file's top-level `fixtures:` key (read as text: a few files
    use YAML anchors and upstream-only tags that a plain loader need not understand)."""
    names: list[str] = []
    inside = False
    for line in path.read_text().splitlines():
        if line.startswith("fixtures:"):
            inside = True
        elif inside and line.lstrip().startswith("- "):
            names.append(line.split("-", 1)[1].strip().split()[0])
        elif inside and line and not line[0].isspace() and not line.startswith("#"):
            break
    return names


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class FileResult:
    name: str
    passed: int = 0
    failed: list[str] = field(default_factory=list)
    skipped: int = 0
    error: str = ""


async def wait_ready(url: str, proc: asyncio.subprocess.Process, log: Path) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(READY_TIMEOUT_S * 4):
            if proc.returncode is not None:
                raise RuntimeError(f"nova-async exited {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                async with session.get(url) as resp:
                    if resp.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.25)
    raise RuntimeError(f"nova-async not ready after {READY_TIMEOUT_S}s")


async def run_file(path: Path, venv: Path, verbose: bool) -> FileResult:
    result = FileResult(path.name)
    with tempfile.TemporaryDirectory(prefix="placement-gabbi-") as tmp:
        state = Path(tmp)
        state.chmod(0o755)  # its PostgreSQL cluster runs as the postgres user
        port = free_port()
        log = state / "nova-async.log"
        with log.open("wb") as out:
            # noauth: placement's gabbits send `x-auth-token: admin` (an admin under noauth2)
            # or `user`/`service`-like tokens, exactly what our noauth mode understands.
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "nova_async", "serve", "--roles", "placement,identity",
                "--auth", "noauth", "--state-dir", str(state), "--listen", f"127.0.0.1:{port}",
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            url = f"http://127.0.0.1:{port}/placement"
            await wait_ready(url + "/", proc, log)
            env = {**os.environ, **{k: str(uuid.uuid4()) for k in UUID_VARS},
                   "CUSTOM_RES_CLASS": "CUSTOM_IRON_NFV", "CUSTOM_RES_CLASS1": "CUSTOM_IRON_NFV1",
                   "CUSTOM_RES_CLASS2": "CUSTOM_IRON_NFV2"}
            gabbi = await asyncio.create_subprocess_exec(
                str(venv / "bin" / "gabbi-run"), url, "--", str(path), env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
            output, _ = await gabbi.communicate()
        except RuntimeError as e:
            result.error = str(e)
            return result
        finally:
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()
    text = output.decode(errors="replace")
    for line in text.splitlines():
        m = RESULT_LINE.match(line)
        if not m:
            continue
        if m["mark"] == "✓":
            result.passed += 1
        elif m["mark"] in "✗E":
            result.failed.append(m["name"] + (" (error in the test client)" if m["mark"] == "E" else ""))
        else:
            result.skipped += 1
    if verbose or (not result.passed and not result.failed):
        result.error = text[-4000:] if not (result.passed or result.failed) else ""
        if verbose:
            print(text)
    return result


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="gabbi file names to run (default: every runnable one)")
    parser.add_argument("--verbose", action="store_true", help="print gabbi's output for each file")
    args = parser.parse_args()
    venv = ensure_venv()
    files = sorted(gabbits_dir(venv).glob("*.yaml"))
    runnable = [f for f in files if fixtures_of(f) == ["APIFixture"]]
    print(f"{len(files)} gabbi files; {len(runnable)} need only an empty database (APIFixture).")
    print("not runnable over HTTP (fixtures write upstream's database or swap its policy/middleware):")
    for f in files:
        if f not in runnable:
            print(f"  {f.name}: {', '.join(fixtures_of(f))}")
    if args.only:
        runnable = [f for f in runnable if f.name in args.only]

    limit = asyncio.Semaphore(CONCURRENCY)

    async def one(path: Path) -> FileResult:
        async with limit:
            return await run_file(path, venv, args.verbose)

    results = await asyncio.gather(*(one(f) for f in runnable))
    for r in results:
        print(f"{r.name:45} passed {r.passed:3} failed {len(r.failed):3} skipped {r.skipped:3}")
        for name in r.failed:
            print(f"    FAIL {name}")
        if r.error:
            print(f"    ERROR {r.error}")
    passed = sum(r.passed for r in results)
    failed = sum(len(r.failed) for r in results)
    skipped = sum(r.skipped for r in results)
    print(f"{passed}/{failed}/{skipped}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
