"""The README's curl walkthrough, run verbatim against a real `nova-async serve` on its
defaults: one compute host on qemu:///system booting the demo guest it registered itself."""

from __future__ import annotations

import os
import re
from pathlib import Path

import aiohttp
import pytest

from nova_async.compute.guest_image import build_or_reuse
from tests.e2e.conftest import serve
from tests.e2e.driver import Api, run_ok

pytestmark = pytest.mark.skipif(not Path("/usr/bin/qemu-system-x86_64").exists(),
                                reason="QEMU is not installed (make test installs it)")

README = Path(__file__).resolve().parents[2] / "README.md"


def walkthrough() -> str:
    text = README.read_text()
    block = re.search(r"<!-- walkthrough:start -->\s*```sh\n(.*?)```\s*<!-- walkthrough:end -->", text, re.S)
    assert block, "README.md lost its walkthrough block"
    return block.group(1)


async def test_readme_curl_walkthrough_leaves_nothing_behind(database, work_dir):
    await build_or_reuse()  # `make run` builds it before the first start
    async with serve(work_dir / "walkthrough", "--database", database) as served:
        output = await run_ok("bash", "-euo", "pipefail", "-c", walkthrough(),
                              env={**os.environ, "NOVA": served.url, "OS_PASSWORD": served.password}, served=served)
        assert re.search(r"vm1 is ACTIVE\n(nova-async-guest: .*\n)+vm1 is SHUTOFF\nvm1 is ACTIVE\n", output), output
        assert "nova-async-guest: user_data=hello from curl\nnova-async-guest: ready\n" in output, output
        assert re.search(r"vm1 ACTIVE \{\"net1\":\[\{\"version\":4,\"addr\":\"10\.0\.0\.\d+\"", output), output
        assert "delete: 204" in output and "after delete: 404" in output, output
        # The volume was attached to the running guest, outlived it and was deleted.
        assert re.search(r'"device":"/dev/vd[b-z]"', output) and '"volumeId":"' in output, output
        assert "data1 is in-use\n" in output and "data1 is available again\n" in output, output
        assert "volume delete: 202" in output, output

        async with aiohttp.ClientSession() as s:
            api = await Api.admin(s, served)
            # Nothing left behind: no allocation, no port, no disk.
            providers = (await api.call("GET", "/placement/resource_providers", 200))["resource_providers"]
            assert len(providers) == 1
            for rp in providers:
                usages = (await api.call("GET", f"/placement/resource_providers/{rp['uuid']}/usages", 200))["usages"]
                assert all(v == 0 for v in usages.values())
            # (the network's DHCP port stays while the network does, as in Neutron)
            ports = (await api.call("GET", "/network/v2.0/ports", 200))["ports"]
            assert [p for p in ports if p["device_owner"] != "network:dhcp"] == []
            instances = served.state_dir / "instances"
            leftovers = [p.name for p in instances.iterdir() if p.name != "_base"] if instances.exists() else []
            assert leftovers == []
    assert served.proc.returncode == 0, "\n".join(served.log[-30:])
