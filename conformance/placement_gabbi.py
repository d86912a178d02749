"""Upstream Placement's own API tests (openstack-placement 16.0.0's gabbi files) against
nova-async's placement, over HTTP, as `make conformance` runs them.

Each gabbi file expects a database of its own: every file gets a fresh `nova-async serve`
(placement alone, noauth: Placement's test token "admin" is an admin here too, any other
name a plain member) on a fresh state directory, and the environment Placement's APIFixture
sets (the uuids and names a file refers to as $ENVIRON[...]). Files whose fixtures write
rows straight into upstream's own database, or configure its policy engine or CORS, cannot
be run over HTTP; they are listed with the fixture that stops them, not counted.

    .venv/bin/python conformance/placement_gabbi.py [--only FILE ...] [--keep]

The last line is `passed/failed/skipped: P/F/S`."""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

VERSION = "16.0.0"
VENV = Path("/var/cache/nova-async/conformance/placement-venv")
CHECKOUT = Path(__file__).resolve().parents[1]
SERVE = CHECKOUT / ".venv" / "bin" / "nova-async"
# The one fixture a file may ask for to run here: an empty placement behind noauth.
RUNNABLE = {"APIFixture"}
PARALLEL = 2


def ensure_suite() -> Path:
    """Upstream Placement and gabbi in their own virtualenv (installed once); the gabbits."""
    marker = VENV / f".openstack-placement-{VERSION}"
    if not marker.exists():
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", f"openstack-placement=={VERSION}", "gabbi"],
                       check=True)
        marker.touch()
    [gabbits] = VENV.glob("lib/python3*/site-packages/placement/tests/functional/gabbits")
    return gabbits


def fixtures_of(path: Path) -> list[str]:
    """The fixture names a gabbi file's top-level `fixtures:` list holds."""
    names, inside = [], False
    for line in path.read_text().splitlines():
        if re.match(r"^fixtures:\s*$", line):
            inside = True
        elif inside and (m := re.match(r"^\s+-\s*(\w+)", line)):
            names.append(m.group(1))
        elif inside and line and not line.startswith((" ", "#")):
            break
    return names


def api_fixture_environment() -> dict[str, str]:
    """What Placement's APIFixture puts in the environment for the files to refer to."""
    env = {name: str(uuid.uuid4()) for name in (
        "RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2", "PROJECT_ID", "ADMIN_PROJECT_ID",
        "SERVICE_PROJECT_ID", "USER_ID", "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
        "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID")}
    env.update(CUSTOM_RES_CLASS="CUSTOM_IRON_NFV", CUSTOM_RES_CLASS1="CUSTOM_IRON_NFV1",
               CUSTOM_RES_CLASS2="CUSTOM_IRON_NFV2")
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nova-async exited ({proc.returncode}) before it was ready")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("nova-async was not ready in time")


COUNT = re.compile(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)")


def run_file(path: Path, work: Path) -> tuple[str, int, int, int, str]:
    """(file, passed, failed, skipped, output) of one gabbi file on a service of its own."""
    state = work / path.stem
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(work / f"{path.stem}.serve.log", "w")
    proc = subprocess.Popen([str(SERVE), "serve", "--state-dir", str(state), "--listen", f"127.0.0.1:{port}",
                             "--auth", "noauth", "--roles", "placement"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(url, proc)
        env = {**os.environ, **api_fixture_environment()}
        with path.open() as tests:
            done = subprocess.run([str(VENV / "bin" / "gabbi-run"), f"{url}/placement"], stdin=tests, env=env,
                                  capture_output=True, text=True, timeout=600)
        out = done.stdout + done.stderr
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(state, ignore_errors=True)
    (work / f"{path.stem}.out").write_text(out)
    ran = re.search(r"^Ran (\d+) tests?", out, re.M)
    if ran is None:
        return path.name, 0, 1, 0, out
    counts = {k: int(v) for k, v in COUNT.findall(out.rsplit("\n\n", 1)[-1])}
    failed = counts.get("failures", 0) + counts.get("errors", 0) + counts.get("unexpected successes", 0)
    skipped = counts.get("skipped", 0) + counts.get("expected failures", 0)
    return path.name, int(ran.group(1)) - failed - skipped, failed, skipped, out


def failing_tests(out: str) -> list[str]:
    return re.findall(r"^(?:FAIL|ERROR): (\S+)", out, re.M)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="gabbi file names (without .yaml) to run")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, outputs)")
    args = parser.parse_args()
    if not SERVE.exists():
        raise SystemExit(f"{SERVE} is missing: run `make venv` first")
    gabbits = ensure_suite()
    files = sorted(gabbits.glob("*.yaml"))
    if args.only:
        files = [f for f in files if f.stem in args.only]
    runnable, not_here = [], []
    for f in files:
        extra = [n for n in fixtures_of(f) if n not in RUNNABLE]
        (not_here if extra else runnable).append((f, extra))
    work = Path(tempfile.mkdtemp(prefix="nova-async-gabbi-"))
    work.chmod(0o755)   # the private PostgreSQL clusters inside run as the postgres user
    results = []
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        for name, passed, failed, skipped, out in pool.map(lambda fx: run_file(fx[0], work), runnable):
            results.append((name, passed, failed, skipped))
            flag = "" if not failed else "   " + " ".join(failing_tests(out)[:6]) + (" …" if failed > 6 else "")
            print(f"{name:55} {passed:4} passed {failed:4} failed {skipped:3} skipped{flag}", flush=True)
    print(f"\nnot run over HTTP ({len(not_here)} files): their fixtures write upstream's database directly "
          "or set up its policy engine or CORS:")
    for f, extra in not_here:
        print(f"  {f.name}: {', '.join(extra)}")
    print(f"\noutputs: {work}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    totals = [sum(r[i] for r in results) for i in (1, 2, 3)]
    print(f"passed/failed/skipped: {totals[0]}/{totals[1]}/{totals[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
