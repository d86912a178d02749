"""README "Live events" as a user runs it: `curl -N` on GET /compute/v2.1/events of a served
process follows a server to ACTIVE and to its delete, and a second curl with the
Last-Event-ID of an event it saw gets what came after that event, first."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import aiohttp
import pytest

from nova_async.api.event_views import parse_cursor
from tests.e2e.conftest import serve

pytestmark = pytest.mark.e2e
ADMIN = {"X-Auth-Token": "admin"}


class Curl:
    """`curl -sN` on a stream: its messages as (id, event, data), as they come."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, url: str, *headers: str) -> Curl:
        args = [a for h in ("X-Auth-Token: admin", *headers) for a in ("-H", h)]
        return cls(await asyncio.create_subprocess_exec("curl", "-sN", *args, url, stdout=asyncio.subprocess.PIPE))

    async def until(self, match) -> tuple[str, str, dict]:
        fields: dict[str, str] = {}
        async with asyncio.timeout(120):
            while True:
                line = (await self.proc.stdout.readline()).decode().rstrip("\n")
                if line.startswith(":"):
                    continue
                if line:
                    name, _, value = line.partition(": ")
                    fields[name] = value
                    continue
                if "event" in fields:
                    got = (fields["id"], fields["event"], json.loads(fields["data"]))
                    if match(*got):
                        return got
                fields = {}

    async def stop(self) -> None:
        self.proc.terminate()
        await self.proc.wait()


async def test_curl_follows_a_server_and_comes_back_with_last_event_id(work_dir: Path):
    state = work_dir / f"events-curl-{uuid.uuid4().hex[:8]}"
    async with serve(state, "--auth", "noauth", "--simulate-hosts", "1") as served, aiohttp.ClientSession() as s:
        events = f"{served.url}/compute/v2.1/events"
        watch = await Curl.start(events)

        async def post(path: str, body: dict, status: int) -> dict:
            async with s.post(served.url + path, json=body, headers=ADMIN) as r:
                assert r.status == status, await r.text()
                return await r.json()

        flavor = (await post("/compute/v2.1/flavors", {"flavor": {"name": "t", "ram": 64, "vcpus": 1, "disk": 1}},
                             200))["flavor"]["id"]
        image = (await post("/image/v2/images", {"name": "t", "disk_format": "raw", "container_format": "bare"},
                            201))["id"]
        async with s.put(f"{served.url}/image/v2/images/{image}/file", data=b"\0" * 65536,
                         headers={**ADMIN, "Content-Type": "application/octet-stream"}) as r:
            assert r.status == 204
        sid = (await post("/compute/v2.1/servers", {"server": {"name": "vm1", "imageRef": image, "flavorRef": flavor,
                                                               "networks": "none"}}, 202))["server"]["id"]
        active_id, _, active = await watch.until(
            lambda _i, kind, d: kind == "server" and d["id"] == sid and d.get("status") == "ACTIVE")
        assert active["OS-EXT-SRV-ATTR:host"]   # an admin's stream
        async with s.delete(f"{served.url}/compute/v2.1/servers/{sid}", headers=ADMIN) as r:
            assert r.status == 204
        deleted_id, _, _ = await watch.until(lambda _i, kind, d: kind == "server" and d.get("deleted"))
        await watch.stop()

        again = await Curl.start(events, f"Last-Event-ID: {active_id}")
        first_id, _, _ = await again.until(lambda *_: True)
        after, before = parse_cursor(first_id), parse_cursor(active_id)
        assert after.keys() == before.keys() and all(after[k] >= before[k] for k in after) and after != before
        assert (await again.until(lambda i, _k, _d: i == deleted_id))[2] == {
            "id": sid, "tenant_id": "admin", "deleted": True}
        await again.stop()
