"""The data plane of a real `nova-async serve` killed with SIGKILL, then started again: the
dnsmasq it left running (no longer anyone's child but init's) is found through the record,
checked, replaced by a child of the new process, and DHCP goes on; deleting the network
then leaves nothing of ours on the host. Needs root, dnsmasq and `ip`."""

from __future__ import annotations

import os
import shutil
import signal
import uuid
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.conftest import remove_dataplane_under, serve
from tests.e2e.driver import NOAUTH_ADMIN, Api
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("dnsmasq"),
                                                  reason="the data plane needs root and dnsmasq")]


def dnsmasq_of(state_dir: Path, network_id: str) -> int | None:
    """The pid of the dnsmasq serving the network from this state dir, if one runs."""
    pid_file = state_dir / "dataplane" / "dhcp" / network_id / "pid"
    try:
        pid = int(pid_file.read_text().strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, ValueError):
        return None
    return pid if f"--pid-file={pid_file}".encode() in argv and state != "Z" else None


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


async def test_a_killed_service_restarted_takes_its_dhcp_back(database, work_dir):
    state_dir = work_dir / f"dataplane-{uuid.uuid4().hex[:8]}"
    state_dir.mkdir(mode=0o755)
    config = state_dir / "nova-async.toml"
    config.write_text(f'[network]\ndataplane = "on"\ndataplane_table = "t{uuid.uuid4().hex[:10]}"\n'
                      f'[compute]\nhost = "dp-{uuid.uuid4().hex[:10]}"\n')
    args = ("--database", database, "--auth", "noauth", "--simulate-hosts", "1", "--config", str(config))
    try:
        async with aiohttp.ClientSession() as session:
            async with serve(state_dir, *args, keep_host_state=True) as served:
                api = Api(session, served.url, NOAUTH_ADMIN)
                net = (await api.call("POST", "/network/v2.0/networks", 201,
                                      json={"network": {"name": "dp"}}))["network"]["id"]
                await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
                    "network_id": net, "cidr": "10.62.0.0/24", "ip_version": 4}})
                first = await until(lambda: dnsmasq_of(state_dir, net), what="dnsmasq serving the network")
                served.proc.send_signal(signal.SIGKILL)
                await served.proc.wait()
            assert dnsmasq_of(state_dir, net) == first   # outlived the service that started it

            async with serve(state_dir, *args) as served:
                # Ready means the pass at start is over: the old dnsmasq stopped, a new one
                # spawned. Its pid file is its own to write, a moment later.
                await until(lambda: dnsmasq_of(state_dir, net), lambda pid: pid not in (None, first),
                            what="a new dnsmasq serving the network", timeout=30)
                assert not running(first)
                api = Api(session, served.url, NOAUTH_ADMIN)
                await api.call("DELETE", f"/network/v2.0/networks/{net}", 204)
                await until(lambda: (dnsmasq_of(state_dir, net), Path("/var/run/netns", f"qdhcp-{net}").exists(),
                                     Path("/sys/class/net", f"brq{net[:11]}").exists()),
                            lambda left: left == (None, False, False), what="nothing of the network left")
    finally:
        remove_dataplane_under(state_dir)   # when it failed between the two runs
        shutil.rmtree(state_dir, ignore_errors=True)
