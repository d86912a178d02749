"""The README's `openstack` block, run with the real, unmodified OpenStack CLI."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from nova_async.compute.guest_image import build_or_reuse
from tests.e2e.conftest import serve

README = Path(__file__).resolve().parents[2] / "README.md"
BIN = Path(sys.executable).parent


def block(name: str) -> str:
    found = re.search(rf"<!-- {name}:start -->\s*```sh\n(.*?)```\s*<!-- {name}:end -->", README.read_text(), re.S)
    assert found, f"README.md lost its {name} block"
    return found.group(1)


EXPECTED = [
    r"\| nova-async-demo +\| active",
    r"\| vm3 +\| ACTIVE +\| net2=10\.1\.0\.\d+ +\| nova-async-demo +\| m1\.mini",
    r"nova-async-guest: user_data=echo hello from user_data\nnova-async-guest: ready",
]


@pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                    reason="python-openstackclient is installed by `make test`")
@pytest.mark.skipif(not shutil.which("qemu-system-x86_64"), reason="QEMU is installed by `make test`")
async def test_readme_openstack_commands_work(database, work_dir):
    await build_or_reuse()  # `make run` builds the demo guest before the first start
    name = "openstack"
    async with serve(work_dir / "osc", "--database", database) as served:
        env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "OS_AUTH_URL": f"{served.url}/v3",
               "OS_USERNAME": "admin", "OS_PROJECT_NAME": "admin", "OS_USER_DOMAIN_NAME": "Default",
               "OS_PROJECT_DOMAIN_NAME": "Default", "OS_PASSWORD": served.password}
        env.pop("OS_CLOUD", None)
        proc = await asyncio.create_subprocess_exec(
            "bash", "-euxo", "pipefail", "-c", block(name), env=env, cwd=work_dir,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 300)
        output = out.decode()
        assert proc.returncode == 0, output + "\n--- server log ---\n" + "\n".join(served.log[-40:])
        for expected in EXPECTED:
            assert re.search(expected, output), output


@pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                    reason="python-openstackclient is installed by `make test`")
async def test_readme_more_openstack_commands_work(database, work_dir):
    """The README's second block: groups, aggregates, zones, quotas, key pairs, services
    (no guest is booted, so libvirt's test driver serves)."""
    home = work_dir / "home"
    (home / ".ssh").mkdir(parents=True)
    from nova_async.api.keypair_store import generate
    (home / ".ssh" / "id_ed25519.pub").write_text(generate()[0] + "\n")
    async with serve(work_dir / "osc-more", "--database", database, "--libvirt-uri", "test:///default") as served:
        env = {**os.environ, "HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}",
               "OS_AUTH_URL": f"{served.url}/v3", "OS_USERNAME": "admin", "OS_PROJECT_NAME": "admin",
               "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default",
               "OS_PASSWORD": served.password}
        env.pop("OS_CLOUD", None)
        proc = await asyncio.create_subprocess_exec(
            "bash", "-euxo", "pipefail", "-c", block("openstack-more"), env=env, cwd=work_dir,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 300)
        output = out.decode()
        assert proc.returncode == 0, output + "\n--- server log ---\n" + "\n".join(served.log[-40:])
        for expected in (r"\| policy +\| anti-affinity", r"\| east +\| available", r"\| instances +\| +20 \|",
                         r"\| fingerprint ", r"nova-compute \| \S+ +\| east +\| disabled",
                         r"\| VCPU=1,MEMORY_MB=512 +\| \S+ +\| \S*VCPU=\d+/\d+"):
            assert re.search(expected, output), (expected, output)
