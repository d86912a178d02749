"""Start `nova-async serve` as a real process and talk to it over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import libvirt
import pytest

PASSWORD = "e2e-secret"
V = "/compute/v2.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Served:
    url: str
    state_dir: Path
    proc: asyncio.subprocess.Process
    log: list[str]
    password: str = PASSWORD

    async def token(self, session: aiohttp.ClientSession) -> str:
        auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"name": "Default"}, "password": self.password}}},
            "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
        async with session.post(f"{self.url}/v3/auth/tokens", json=auth) as resp:
            assert resp.status == 201, await resp.text()
            return resp.headers["X-Subject-Token"]


def remove_guests_under(state_dir: Path, uri: str = "qemu:///system") -> list[str]:
    """Destroy and undefine the domains whose files live under `state_dir`: what a test's
    service left running when the test failed half-way (stopping a service keeps guests)."""
    removed = []
    try:
        conn = libvirt.open(uri)
    except libvirt.libvirtError:
        return removed
    try:
        for dom in conn.listAllDomains():
            if str(state_dir) not in dom.XMLDesc(0):
                continue
            if dom.isActive():
                dom.destroy()
            dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)
            removed.append(dom.name())
    finally:
        conn.close()
    return removed


@contextlib.asynccontextmanager
async def serve(state_dir: Path, *args: str, ready_timeout: float = 120, env: dict[str, str] | None = None):
    port = free_port()
    argv = [sys.executable, "-m", "nova_async", "serve", "--listen", f"127.0.0.1:{port}",
            "--state-dir", str(state_dir), "--admin-password", PASSWORD, *args]
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT,
                                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    log: list[str] = []
    ready = asyncio.Event()

    async def pump() -> None:
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            log.append(line)
            if "nova-async ready" in line:
                ready.set()

    pumping = asyncio.create_task(pump(), name="e2e:log-pump")
    waiting = asyncio.create_task(ready.wait(), name="e2e:ready")
    try:
        await asyncio.wait([waiting, pumping], timeout=ready_timeout, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            proc.kill()
            await proc.wait()
            pytest.fail("nova-async did not become ready:\n" + "\n".join(log[-60:]))
        yield Served(url=f"http://127.0.0.1:{port}", state_dir=state_dir, proc=proc, log=log)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        waiting.cancel()
        await pumping
        await asyncio.to_thread(remove_guests_under, state_dir.resolve())


class Caller(Protocol):
    async def call(self, method: str, path: str, status: int, **kw: Any) -> Any: ...


async def boot_base(api: Caller, name: str, cidr: str) -> dict:
    """What a boot of the admin project needs, made through the API: no quota, a flavor, a
    small raw image and a network. The flavor asks for no root disk (the disk is the image's,
    and placement is asked for no DISK_GB), so many servers fit however small the file
    system the hosts report is (a tmpfs, say). Returns the server body's common part."""
    await api.call("PUT", V + "/os-quota-sets/admin", 200,
                   json={"quota_set": {"instances": -1, "cores": -1, "ram": -1}})
    flavor = (await api.call("POST", V + "/flavors", 200, json={"flavor": {
        "name": name, "ram": 64, "vcpus": 1, "disk": 0}}))["flavor"]["id"]
    image = (await api.call("POST", "/image/v2/images", 201, json={
        "name": name, "disk_format": "raw", "container_format": "bare"}))["id"]
    await api.call("PUT", f"/image/v2/images/{image}/file", 204, data=b"\0" * 65536,
                   headers={"Content-Type": "application/octet-stream"})
    net = (await api.call("POST", "/network/v2.0/networks", 201,
                          json={"network": {"name": name}}))["network"]["id"]
    await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
        "network_id": net, "cidr": cidr, "ip_version": 4}})
    return {"flavorRef": flavor, "imageRef": image, "networks": [{"uuid": net}]}
