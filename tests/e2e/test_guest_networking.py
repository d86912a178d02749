"""Guests one can reach, as the README's `guests` block promises, on a real TCG guest booted
once from the stock Debian cloud image: keypair, network, subnet, router with the external
gateway, a security group rule for port 22, a server, a floating IP, and SSH into it — the
block run as written with the real `openstack` CLI and the real `ssh`.

Nothing leaves this machine. The service's external network `public` is on TEST-NET-3
(203.0.113.0/24) with no host address and no NAT of the host's (`external_host_gateway =
false`); its gateway 203.0.113.1 is a namespace this test makes and plugs into that
network's bridge: "the outside". The README's `ssh` runs from there (a two-line `ssh` on the
block's PATH that runs the real one inside the namespace), and the outside is what the guest
reaches through the router. The guest has no config drive: cloud-init finds the OpenStack
datasource by the server's SMBIOS strings and reads DHCP and the metadata service.

Then, as a user would check it: the guest's connection to the outside arrives from its
floating IP (the router's NAT); the rule for 22 deleted, SSH no longer connects; the floating
IP listed, removed from the server and kept; everything deleted, nothing of ours is left on
the host — no qdhcp-/qrouter- namespace, no dnsmasq of
this service, no nftables table of this service.

Between the two, the README's `volumes` block on the same guests (volumes_block): data
written to a volume in one server is read in another, and a server booted from a volume
leaves it behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from nova_async import config
from nova_async.compute import cloud_image
from nova_async.compute.host_setup import setup_host
from tests.e2e.conftest import remove_guests_under, serve
from tests.e2e.driver import BIN, guests_first, os_env, run, run_ok
from tests.e2e.test_readme_openstack import block
from tests.waiting import until

QEMU = Path("/usr/bin/qemu-system-x86_64")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.long,
    pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the data plane makes namespaces, bridges and nftables (root)"),
    pytest.mark.skipif(not (BIN / "openstack").exists() and not shutil.which("openstack"),
                       reason="python-openstackclient is installed by `make test`"),
    pytest.mark.skipif(not shutil.which("mmdebstrap"), reason="mmdebstrap is installed by `make test`"),
]

OUTSIDE_IP = "203.0.113.1"      # the external subnet's gateway: the test's "outside"
# The block's ssh loop gives up after ten minutes (60 tries of up to 10 s); the guest needs two
# to three alone under TCG, and is favoured over the suite's other processes (guests_first).
# The rest of the block is a dozen client calls.
BLOCK_TIMEOUT = 1200


async def sh(*argv: str, check: bool = True) -> str:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {out.decode(errors='replace')}")
    return out.decode(errors="replace")


async def make_outside(ns: str, veth: str, bridge: str) -> None:
    """A namespace holding the external gateway address, on the external network's bridge."""
    await sh("ip", "netns", "add", ns)
    await sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
    await sh("ip", "link", "set", veth, "master", bridge)
    await sh("ip", "link", "set", veth, "up")
    await sh("ip", "-n", ns, "addr", "add", f"{OUTSIDE_IP}/24", "dev", "eth0")
    await sh("ip", "-n", ns, "link", "set", "eth0", "up")
    await sh("ip", "-n", ns, "link", "set", "lo", "up")


def ssh_from(ns: str, home: Path) -> None:
    """`ssh` for the README block: the real one, run inside the outside namespace, keeping the
    hosts it learns in the test's home (ssh reads the user's home from the password database,
    not $HOME: without this, root's own known_hosts would get the guests' keys)."""
    shim_dir = home / "bin"
    shim_dir.mkdir(parents=True)
    shim = shim_dir / "ssh"
    shim.write_text(f'#!/bin/sh\nexec ip netns exec {ns} {shutil.which("ssh")} '
                    f'-o UserKnownHostsFile={home}/.ssh/known_hosts "$@"\n')
    shim.chmod(0o755)


LISTENER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 9000)); s.listen(); s.settimeout(120)
conn, peer = s.accept(); print(peer[0], conn.recv(100).decode().strip(), flush=True)
"""


async def ours_on_host(table: str, state_dir: Path, names: list[str]) -> list[str]:
    """What of this service is still on the host: its namespaces, dnsmasq processes and
    nftables tables."""
    left = [ns for ns in (await sh("ip", "netns", "list")).split() if any(n in ns for n in names)]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmdline.startswith("dnsmasq") and str(state_dir) in cmdline:
            left.append(f"dnsmasq {pid}")
    ruleset = await sh("nft", "list", "tables")
    left += [line for line in ruleset.splitlines() if line.split()[-1:] == [table]]
    return left


async def consoles(env: dict[str, str], *servers: str) -> str:
    """The last lines each guest printed, for a failure's message: whether it booted, got
    its address and keys, or where it stopped."""
    shown = ""
    for server in servers:
        _, console = await run(f"{BIN}/openstack", "console", "log", "show", "--lines", "80", server, env=env)
        shown += f"\n--- {server}'s console ---\n{console}"
    return shown


async def volumes_block(osc, env: dict[str, str], served, work_dir: Path, fip: str) -> None:
    """The README's `volumes` block, continuing the `guests` one (vm1 runs at `fip`): a
    volume attached to vm1 and written there, detached, attached to vm2 (booted from a new
    volume) and read back; vm2 is deleted and its root volume stays, and vm3 booted from it
    reads what vm2 wrote there. Then everything the block made is deleted again."""
    try:
        output = await run_ok("bash", "-euxo", "pipefail", "-c", f"ip={fip}\n" + block("volumes"), env=env,
                              cwd=work_dir, served=served, timeout=BLOCK_TIMEOUT)
    except (AssertionError, TimeoutError) as exc:
        raise AssertionError(f"{exc}{await consoles(env, 'vm2', 'vm3')}") from None
    # vm2 read what vm1 wrote to data1 (`head` prints it alone on its line); vm3, booted from
    # vm2's root volume, found the file vm2 wrote on it (after `tee` echoed it once).
    assert re.search(r"^written-in-vm1$", output, re.M), output[-4000:]
    marker = output.rindex("cat /var/tmp/marker")
    assert re.search(r"^written-on-vm2$", output[marker:], re.M), output[-4000:]
    volumes = {v["Name"]: v for v in json.loads(await osc("volume", "list", "--long", "-f", "json"))}
    assert volumes["data1"]["Status"] == "available" and volumes["data1"]["Size"] == 2, volumes
    assert "data2" not in volumes, volumes
    [root] = [v for n, v in volumes.items() if n not in ("data1",)]
    assert root["Status"] == "available" and str(root["Bootable"]).lower() == "true", volumes
    ips = [line.split()[-1] for line in output.splitlines()
           if line.startswith("+ openstack server add floating ip vm")]
    assert len(ips) == 2, output[-4000:]   # vm2's and vm3's; vm1's is the guests block's
    for ip in ips:
        await osc("floating", "ip", "delete", ip)
    await osc("volume", "snapshot", "delete", "snap1")
    await until(lambda: osc("volume", "snapshot", "list", "-f", "value"), lambda out: not out.strip(),
                what="the snapshot deleted")
    await osc("volume", "delete", "data1", root["ID"])


async def test_readme_guests_block_ssh_into_a_stock_cloud_image(database, work_dir):
    await setup_host(Path(config.default_state_dir()))
    await cloud_image.build_or_reuse()   # `make test` built it; the service registers the cache
    tag = uuid.uuid4().hex[:8]
    state_dir, home, outside = work_dir / f"guests-{tag}", work_dir / f"home-{tag}", f"t-out-{tag}"
    table = f"t_{tag}"
    settings = work_dir / f"guests-{tag}.toml"
    settings.write_text(f'[network]\ndataplane_table = "{table}"\nexternal_cidr = "203.0.113.0/24"\n'
                        "external_host_gateway = false\n")
    (home / ".ssh").mkdir(parents=True)
    ssh_from(outside, home)
    bridges: list[str] = []   # the external network's, which the service keeps when it stops
    try:
        async with serve(state_dir, "--database", database, "--libvirt-uri", "qemu:///system",
                         "--config", str(settings)) as served, guests_first(state_dir):
            env = os_env(served, HOME=str(home))
            env["PATH"] = f"{home / 'bin'}:{env['PATH']}"

            async def osc(*args: str) -> str:
                return await run_ok(f"{BIN}/openstack", *args, env=env, served=served)

            public = json.loads(await osc("network", "show", "public", "-f", "json"))["id"]
            bridge = f"brq{public[:11]}"
            bridges.append(bridge)
            await until(lambda: Path("/sys/class/net", bridge).exists(), what=f"the external bridge {bridge}")
            await make_outside(outside, f"to{tag}", bridge)

            try:
                output = await run_ok("bash", "-euxo", "pipefail", "-c", block("guests"), env=env, cwd=work_dir,
                                      served=served, timeout=BLOCK_TIMEOUT)
            except (AssertionError, TimeoutError) as exc:
                raise AssertionError(f"{exc}{await consoles(env, 'vm1')}") from None
            fip = re.search(r"\+ openstack server add floating ip vm1 (\S+)", output).group(1)
            # hostname, then the guest's address on net1 and its default route via the router
            assert re.search(r"^vm1$", output, re.M), output[-3000:]
            assert re.search(r"inet 10\.10\.0\.\d+/24", output), output[-3000:]
            assert "default via 10.10.0.1" in output, output[-3000:]
            ssh = [f"{home}/bin/ssh", "-o", "ConnectTimeout=5", "-o", "BatchMode=yes",
                   "-i", f"{home}/.ssh/id_ed25519", f"debian@{fip}"]

            # From inside the guest, beyond the host: the outside sees its floating IP.
            listener = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", outside, "python3", "-c", LISTENER, stdout=asyncio.subprocess.PIPE)
            try:
                await until(lambda: sh("ip", "netns", "exec", outside, "ss", "-ltn", check=False),
                            lambda out: ":9000" in out, what="the outside's listener")
                await run_ok(*ssh, f"echo from-guest > /dev/tcp/{OUTSIDE_IP}/9000", env=env)
                heard, _ = await asyncio.wait_for(listener.communicate(), 60)
            finally:
                if listener.returncode is None:
                    listener.kill()
                    await listener.wait()
            assert heard.decode().split() == [fip, "from-guest"]

            # The metadata service told it who it is (its name and key came from there).
            meta = await run_ok(*ssh, "curl -s http://169.254.169.254/openstack/latest/meta_data.json || "
                                      "python3 -c \"import urllib.request as u; print(u.urlopen("
                                      "'http://169.254.169.254/openstack/latest/meta_data.json').read().decode())\"",
                                env=env)
            assert '"name": "vm1"' in meta and '"mykey"' in meta, meta

            await volumes_block(osc, env, served, work_dir, fip)

            # The rule for 22 gone: SSH no longer connects, once the data plane's pass that the
            # delete started has run (the API answers before, as Neutron's does).
            rules = json.loads(await osc("security", "group", "rule", "list", "default", "--protocol", "tcp",
                                         "-f", "json"))
            [rule] = [r["ID"] for r in rules if r["Port Range"] == "22:22"]
            await osc("security", "group", "rule", "delete", rule)
            _, refused = await until(lambda: run(*ssh, "true", env=env), lambda got: got[0] != 0,
                                     what="SSH refused without the rule for 22", timeout=60)
            assert "timed out" in refused, refused

            # The floating IP listed with the guest's address, then taken off it and kept; then
            # everything deleted: nothing of ours on the host.
            net1 = json.loads(await osc("network", "show", "net1", "-f", "json"))["id"]
            router = json.loads(await osc("router", "show", "r1", "-f", "json"))["id"]
            [associated] = json.loads(await osc("floating", "ip", "list", "-f", "json"))
            assert associated["Floating IP Address"] == fip and associated["Fixed IP Address"].startswith("10.10.0.")
            await osc("server", "remove", "floating", "ip", "vm1", fip)
            [kept] = json.loads(await osc("floating", "ip", "list", "-f", "json"))
            assert kept["Floating IP Address"] == fip and kept["Port"] is None and kept["Fixed IP Address"] is None
            await osc("server", "delete", "--wait", "vm1")
            await osc("floating", "ip", "delete", fip)
            await osc("router", "remove", "subnet", "r1", "sub1")
            await osc("router", "unset", "--external-gateway", "r1")
            await osc("router", "delete", "r1")
            await osc("network", "delete", "net1")
            await until(lambda: ours_on_host(table, state_dir, [net1, router]), lambda left: not left,
                        what="nothing of ours left on the host", timeout=120)
    finally:
        await sh("ip", "netns", "del", outside, check=False)
        for name in bridges:
            await sh("ip", "link", "del", name, check=False)
        remove_guests_under(state_dir)
        shutil.rmtree(state_dir, ignore_errors=True)
