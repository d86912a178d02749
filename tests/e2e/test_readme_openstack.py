"""The README's `openstack` block, run with the real, unmodified OpenStack CLI."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from nova_async.compute.guest_image import build_or_reuse
from tests.e2e.conftest import serve
from tests.e2e.driver import BIN, os_env, run_ok

README = Path(__file__).resolve().parents[2] / "README.md"


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
        output = await run_ok("bash", "-euxo", "pipefail", "-c", block(name), env=os_env(served), cwd=work_dir,
                              served=served)
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
        output = await run_ok("bash", "-euxo", "pipefail", "-c", block("openstack-more"),
                              env=os_env(served, HOME=str(home)), cwd=work_dir, served=served)
        for expected in (r"\| policy +\| anti-affinity", r"\| east +\| available", r"\| instances +\| +20 \|",
                         r"\| fingerprint ", r"nova-compute +\| \S+ +\| east +\| disabled",
                         r"\| VCPU=1,MEMORY_MB=512 +\| \S+ +\| \S*VCPU=\d+/\d+"):
            assert re.search(expected, output), (expected, output)
