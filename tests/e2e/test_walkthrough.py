"""The README's curl walkthrough, run verbatim against a real `nova-async serve`."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import aiohttp

from tests.e2e.conftest import serve

README = Path(__file__).resolve().parents[2] / "README.md"


def walkthrough() -> str:
    text = README.read_text()
    block = re.search(r"<!-- walkthrough:start -->\s*```sh\n(.*?)```\s*<!-- walkthrough:end -->", text, re.S)
    assert block, "README.md lost its walkthrough block"
    return block.group(1)


async def test_readme_curl_walkthrough_leaves_nothing_behind(database, work_dir):
    async with serve(work_dir / "walkthrough", "--database", database, "--simulate-hosts", "2") as served:
        proc = await asyncio.create_subprocess_exec(
            "bash", "-euo", "pipefail", "-c", walkthrough(),
            env={**os.environ, "NOVA": served.url, "OS_PASSWORD": served.password},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 180)
        output = out.decode()
        assert proc.returncode == 0, output + "\n--- server log ---\n" + "\n".join(served.log[-40:])
        assert "vm1 is ACTIVE\nvm1 is SHUTOFF\nvm1 is ACTIVE" in output, output
        assert re.search(r"vm1 ACTIVE \{\"net1\":\[\{\"version\":4,\"addr\":\"10\.0\.0\.\d+\"", output), output
        assert "delete: 204" in output and "after delete: 404" in output, output

        async with aiohttp.ClientSession() as s:
            headers = {"X-Auth-Token": await served.token(s)}
            # Nothing left behind: no allocation, no port, no disk.
            async with s.get(f"{served.url}/placement/resource_providers", headers=headers) as r:
                providers = (await r.json())["resource_providers"]
            assert len(providers) == 2
            for rp in providers:
                async with s.get(f"{served.url}/placement/resource_providers/{rp['uuid']}/usages",
                                 headers=headers) as r:
                    assert all(v == 0 for v in (await r.json())["usages"].values())
            async with s.get(f"{served.url}/network/v2.0/ports", headers=headers) as r:
                assert (await r.json())["ports"] == []
            instances = served.state_dir / "instances"
            leftovers = [p.name for p in instances.iterdir() if p.name != "_base"] if instances.exists() else []
            assert leftovers == []
    assert served.proc.returncode == 0, "\n".join(served.log[-30:])
