"""A site's hook plugin in the real process: `nova-async serve --hooks site_naming` (the
example plugin, examples/site_hooks, installed by `make test`) refuses a boot that breaks
the naming rule, and the unmodified `openstack server create` fails with the plugin's
reason; a plugin that cannot be used stops the service at start, in one line."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests.e2e.conftest import free_port, serve
from tests.e2e.driver import BIN, os_env, run, run_ok

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                       reason="python-openstackclient is installed by `make test`"),
]

SETUP = r"""
openstack flavor create --ram 256 --vcpus 1 --disk 1 h.small
openstack network create hnet
openstack subnet create --network hnet --subnet-range 10.5.0.0/24 hsub
head -c 65536 /dev/zero > disk.raw
openstack image create --file disk.raw --disk-format raw --container-format bare himg
"""
REASON = "Server name 'Bad_Name' does not follow this site's naming rule: it must match [a-z][a-z0-9-]{0,62}"


async def test_openstack_server_create_fails_with_the_plugins_reason(database, work_dir):
    async with serve(work_dir / "hooks", "--database", database, "--libvirt-uri", "test:///default",
                     "--hooks", "site_naming") as served:
        env = os_env(served)
        await run_ok("bash", "-euo", "pipefail", "-c", SETUP, env=env, cwd=work_dir, served=served, timeout=300)
        code, output = await run("openstack", "server", "create", "--flavor", "h.small", "--image", "himg",
                                 "--network", "hnet", "Bad_Name", env=env, cwd=work_dir)
        print("$ openstack server create --flavor h.small --image himg --network hnet Bad_Name")
        print(output, end="")
        print(f"(exit status {code})")
        assert code == 1, output
        # openstacksdk's words around the fault's message: "BadRequestException: 400: Client
        # Error for url: …/servers, <the reason>"
        assert "BadRequestException: 400" in output and output.rstrip().endswith(REASON), output
        await run_ok("openstack", "server", "create", "--flavor", "h.small", "--image", "himg", "--network", "hnet",
                     "--wait", "web-1", env=env, cwd=work_dir, served=served)
        names = await run_ok("openstack", "server", "list", "-f", "value", "-c", "Name", env=env, cwd=work_dir)
        assert names.split() == ["web-1"]
        assert any("hook vetoed" in line and "site_naming" in line for line in served.log), served.log[-20:]


async def test_a_plugin_that_is_not_installed_stops_the_start_in_one_line(tmp_path):
    code, output = await run(sys.executable, "-m", "nova_async", "serve", "--state-dir", str(tmp_path / "state"),
                             "--listen", f"127.0.0.1:{free_port()}", "--hooks", "site_naming,site_nmaing",
                             env={**os.environ}, timeout=120)
    assert code == 1
    assert output.splitlines() == [
        "nova-async: hook plugin 'site_nmaing': no installed package offers it (entry-point group "
        "nova_async.hooks); install it or take it out of [hooks] enabled"]
    assert not (tmp_path / "state").exists()  # nothing started, not even the database
