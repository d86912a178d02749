"""How e2e tests drive a served `nova-async` as its users do: over HTTP (`Api`: a call that
checks its status, a boot, waiting for a server's status or for a batch to settle, the
console) and with the OpenStack command line (`os_env` for the clients' environment, `run`
for a command). One copy for every test file; they each had a near-copy of their own."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from tests.e2e import warm_cli
from tests.waiting import until

BIN = Path(sys.executable).parent   # this virtualenv's commands: openstack, nova, nova-async
V = "/compute/v2.1"
MICROVERSION = {"OpenStack-API-Version": "compute 2.96"}
NOAUTH_ADMIN = {"X-Auth-Token": "admin", "X-Auth-Project-Id": "admin"}
WAIT = 300   # bound on every wait: e2e tests assert outcomes, never speed


class Api:
    """One user's HTTP view of a served process: every request carries `headers` (a token,
    or noauth's) and the newest compute microversion."""

    def __init__(self, session: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> None:
        self.session, self.url = session, url
        self.headers = {**MICROVERSION, **headers}

    @classmethod
    async def admin(cls, session: aiohttp.ClientSession, served) -> Api:
        """The admin of a served process that checks passwords (a Keystone token)."""
        return cls(session, served.url, {"X-Auth-Token": await served.token(session)})

    async def once(self, method: str, path: str, *, headers: dict | None = None, **kw) -> tuple[int, Any]:
        """(status, JSON body or None) of one request, whatever the status."""
        async with self.session.request(method, self.url + path, headers={**self.headers, **(headers or {})},
                                        **kw) as resp:
            text = await resp.text()
            self.heard(method, path, resp, text)
            return resp.status, (json.loads(text) if text and resp.content_type == "application/json" else None)

    def heard(self, method: str, path: str, resp: aiohttp.ClientResponse, text: str) -> None:
        """Sees every answer: where a test checks what holds for all of them."""

    async def call(self, method: str, path: str, status: int, **kw) -> Any:
        """The JSON body of a request that must answer `status`."""
        got, body = await self.once(method, path, **kw)
        assert got == status, f"{method} {path}: {got} {body}"
        return body

    async def boot_base(self, name: str, cidr: str) -> dict:
        """What a boot of the admin project needs, made through the API: no quota, a flavor,
        a small raw image and a network. The flavor asks for no root disk (the disk is the
        image's, and placement is asked for no DISK_GB), so many servers fit however small the
        file system the hosts report is (a tmpfs, say). Returns the server body's common part."""
        await self.call("PUT", V + "/os-quota-sets/admin", 200,
                        json={"quota_set": {"instances": -1, "cores": -1, "ram": -1}})
        flavor = (await self.call("POST", V + "/flavors", 200, json={"flavor": {
            "name": name, "ram": 64, "vcpus": 1, "disk": 0}}))["flavor"]["id"]
        image = (await self.call("POST", "/image/v2/images", 201, json={
            "name": name, "disk_format": "raw", "container_format": "bare"}))["id"]
        # Bytes, not a stream: a call that is retried sends them again.
        await self.call("PUT", f"/image/v2/images/{image}/file", 204, data=b"\0" * 65536,
                        headers={"Content-Type": "application/octet-stream"})
        net = (await self.call("POST", "/network/v2.0/networks", 201,
                               json={"network": {"name": name}}))["network"]["id"]
        await self.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
            "network_id": net, "cidr": cidr, "ip_version": 4}})
        return {"flavorRef": flavor, "imageRef": image, "networks": [{"uuid": net}]}

    async def boot(self, base: dict, name: str) -> str:
        return (await self.call("POST", V + "/servers", 202, json={"server": {**base, "name": name}}))["server"]["id"]

    async def server(self, server_id: str, *, gone_ok: bool = False) -> dict | None:
        """The server; None if it is gone and `gone_ok`, else a 404 fails."""
        got, body = await self.once("GET", f"{V}/servers/{server_id}")
        if got == 404 and gone_ok:
            return None
        assert got == 200, f"GET server {server_id}: {got} {body}"
        return body["server"]

    async def status(self, server_id: str, *wanted: str, timeout: float = WAIT) -> dict:
        """The server once its status is one of `wanted` ("GONE": deleted, returns {}). One
        in ERROR that was not wanted fails at once, with its fault."""
        def reached(server: dict | None) -> bool:
            status = server["status"] if server else "GONE"
            assert status in wanted or status != "ERROR", f"server {server_id} in ERROR: {server.get('fault')}"
            return status in wanted

        server = await until(lambda: self.server(server_id, gone_ok="GONE" in wanted), reached,
                             what=f"server {server_id} in {' or '.join(wanted)}", timeout=timeout, interval=0.2)
        return server or {}

    async def settled(self, ids: Sequence[str] | None = None, timeout: float = WAIT) -> dict[str, dict]:
        """Each server's detail (of `ids`, else every one) once none of them is in BUILD."""
        async def listed() -> dict[str, dict]:
            servers = (await self.call("GET", V + "/servers/detail", 200))["servers"]
            return {s["id"]: s for s in servers if ids is None or s["id"] in ids}

        def settled(found: dict[str, dict]) -> bool:
            return (ids is None or len(found) == len(set(ids))) and all(
                s["status"] != "BUILD" for s in found.values())

        return await until(listed, settled, what="no server in BUILD", timeout=timeout, interval=0.2)

    async def services(self) -> dict[str, str]:
        """Each compute host's state, up or down."""
        listed = (await self.call("GET", V + "/os-services?binary=nova-compute", 200))["services"]
        return {s["host"]: s["state"] for s in listed}

    async def image(self, name: str, data: bytes, disk: str, container: str, **props: str) -> str:
        """Create an image and upload `data` (streamed: the demo kernel is 60+ MiB): its id."""
        image = await self.call("POST", "/image/v2/images", 201, json={
            "name": name, "disk_format": disk, "container_format": container, **props})
        await self.call("PUT", f"/image/v2/images/{image['id']}/file", 204, data=io.BytesIO(data),
                        headers={"Content-Type": "application/octet-stream"})
        return image["id"]

    async def demo_images(self, guest) -> str:
        """The demo guest's kernel and ramdisk, and a 1 MiB root image that boots them: its id."""
        kernel = await self.image("demo-kernel", guest.kernel.read_bytes(), "aki", "aki")
        ramdisk = await self.image("demo-ramdisk", guest.initrd.read_bytes(), "ari", "ari")
        # Its only way to learn who it is: a config drive, which the image makes mandatory.
        return await self.image("demo", b"\0" * (1 << 20), "raw", "bare", kernel_id=kernel, ramdisk_id=ramdisk,
                                img_config_drive="mandatory")

    async def console(self, server_id: str, **body) -> str:
        out = await self.call("POST", f"{V}/servers/{server_id}/action", 200, json={"os-getConsoleOutput": body})
        return out["output"]

    async def console_polled(self, server_id: str) -> str:
        """The console for a wait: "" (not yet) while the compute host answers 503, its libvirt
        connection being opened again (libvirtd died and host-setup's loop is starting it
        again); any other failure fails."""
        got, body = await self.once("POST", f"{V}/servers/{server_id}/action", json={"os-getConsoleOutput": {}})
        if got == 503:
            return ""
        assert got == 200, f"console of {server_id}: {got} {body}"
        return body["output"]

    async def console_until(self, server_id: str, wanted: list[str], timeout: float = 120) -> list[str]:
        """The console's lines once every one of `wanted` is among them."""
        async def lines() -> list[str]:
            return (await self.console_polled(server_id)).splitlines()

        return await until(lines, lambda seen: all(w in seen for w in wanted),
                           what=f"{wanted} on the console", timeout=timeout, interval=0.25)


def os_env(served, *, warm: bool = True, **extra: str) -> dict[str, str]:
    """The environment the OpenStack clients read: this virtualenv's commands first on the
    PATH (behind the worker's warm `openstack` unless not `warm`: warm_cli.py), the served
    process's Keystone, its admin; no OS_CLOUD from the caller's."""
    shims = warm_cli.shim_dir() if warm else None
    path = f"{shims}:{BIN}" if shims else f"{BIN}"
    env = {**os.environ, "PATH": f"{path}:{os.environ['PATH']}", "OS_AUTH_URL": f"{served.url}/v3",
           "OS_USERNAME": "admin", "OS_PROJECT_NAME": "admin", "OS_USER_DOMAIN_NAME": "Default",
           "OS_PROJECT_DOMAIN_NAME": "Default", "OS_PASSWORD": served.password, **extra}
    env.pop("OS_CLOUD", None)
    return env


async def run(*argv: str | Path, env: dict[str, str], cwd: Path | None = None, stdin: bytes | None = None,
              timeout: float = WAIT, stderr_on_failure_only: bool = False) -> tuple[int, str]:
    """(exit code, output) of a command: stdout and stderr together, or stderr only when it
    failed (for output parsed as JSON, where a warning would get in the way). The installed
    `openstack` named by its path is the warm one when `env` has it on its PATH."""
    if Path(argv[0]) == warm_cli.REAL and (shims := warm_cli.shim_dir()) \
            and str(shims) in env.get("PATH", "").split(":"):
        argv = (shims / "openstack", *argv[1:])
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=cwd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if stderr_on_failure_only else asyncio.subprocess.STDOUT)
    out: list[bytes] = []
    err: list[bytes] = []

    async def collect(stream: asyncio.StreamReader | None, into: list[bytes]) -> None:
        while stream is not None and (chunk := await stream.read(65536)):
            into.append(chunk)

    async def finish() -> None:
        assert proc.stdin is not None
        if stdin:
            proc.stdin.write(stdin)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                await proc.stdin.drain()
        proc.stdin.close()
        await asyncio.gather(collect(proc.stdout, out), collect(proc.stderr, err))
        await proc.wait()

    try:
        await asyncio.wait_for(finish(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        # What it printed so far says where it stuck (a README block's last command, say).
        so_far = b"".join(out + err).decode(errors="replace")[-6000:]
        raise TimeoutError(f"{Path(str(argv[0])).name} did not finish in {timeout:.0f} s; "
                           f"its output so far:\n{so_far}") from None
    output = b"".join(out).decode()
    if proc.returncode and err:
        output += "\n" + b"".join(err).decode()
    return proc.returncode or 0, output


async def run_ok(*argv: str | Path, served=None, **kw) -> str:
    """The output of a command that must succeed; the served process's last log lines join
    the failure, if a served process is named."""
    code, output = await run(*argv, **kw)
    assert code == 0, output + ("\n--- server log ---\n" + "\n".join(served.log[-40:]) if served else "")
    return output


@contextlib.asynccontextmanager
async def guests_first(state_dir: Path, nice: int = -5):
    """While the body runs, the QEMU processes of guests whose files live under `state_dir`
    get the CPU before the suite's other processes (a lower nice value).

    A TCG guest is one emulating thread: on two cores shared with the suite's other workers
    (client start-ups, PostgreSQL, other services) a Debian guest that reaches SSH in 2–3
    minutes alone took over 15 in a loaded run, and a README block's wait ran out. The guest
    is what such a test is about; everything else can wait its turn."""
    marker = str(state_dir).encode()
    done: set[str] = set()   # "pid/tid" already given `nice`

    async def favour() -> None:
        # Linux keeps a nice value per thread, and a guest's emulating work runs on its vCPU
        # threads, which QEMU starts after its main thread (and which may have started before
        # this pass saw the process): every thread of the process is given `nice`.
        while True:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes()
                    if not (argv.startswith(b"/usr/bin/qemu-system") and marker in argv):
                        continue
                    for tid in os.listdir(f"/proc/{pid}/task"):
                        if f"{pid}/{tid}" not in done:
                            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
                            done.add(f"{pid}/{tid}")
                except (OSError, ValueError):
                    continue
            await asyncio.sleep(2)

    task = asyncio.create_task(favour(), name="e2e:guests-first")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
