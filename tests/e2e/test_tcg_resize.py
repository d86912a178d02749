"""A real TCG guest resized through the API and confirmed, then snapshotted while it runs,
and the snapshot booted; then shelved (off its host) and unshelved from its shelved image,
and rescued and unrescued: the demo guest of a fresh `nova-async serve --libvirt-uri
qemu:///system` (registered as the public image nova-async-demo with its kernel and
ramdisk), no images uploaded by the test.

The guest's memory is read from the running domain (what QEMU was started with), and the
guest must boot to its "ready" line again after the resize, from the snapshot, after the
unshelve, from the rescue disk and after the unrescue."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import aiohttp
import libvirt
import pytest

from nova_async import config
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.guest_image import build_or_reuse
from nova_async.compute.host_setup import setup_host
from tests.e2e.conftest import serve
from tests.e2e.driver import V, Api, guests_first
from tests.e2e.test_tcg_guest_via_api import QEMU, URI, _remove_leftovers
from tests.waiting import until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not QEMU.exists(), reason="QEMU is not installed (make test installs it)"),
]

READY = "nova-async-guest: ready"


async def _memory_kib(server_id: str) -> tuple[int, int]:
    """(memory, vCPUs) of the running domain, as libvirt reports them from QEMU."""
    def read() -> tuple[int, int]:
        conn = libvirt.open(URI)
        try:
            dom = conn.lookupByName(domain_name(server_id))
            state, max_mem, _mem, vcpus, _cpu = dom.info()
            assert state == libvirt.VIR_DOMAIN_RUNNING
            return max_mem, vcpus
        finally:
            conn.close()
    return await asyncio.to_thread(read)


async def test_tcg_guest_resize_confirm_and_snapshot(database, work_dir):
    await setup_host(Path(config.default_state_dir()))
    await build_or_reuse()
    state_dir = work_dir / "tcg-resize"
    server_ids: list[str] = []
    bridges: list[str] = []
    try:
        # Six boots one after another, each a deadline: its guests go before the suite's other
        # processes, as the cloud image's do (a loaded run once kept the rescue guest silent
        # for two minutes).
        async with serve(state_dir, "--database", database, "--libvirt-uri", URI) as served, \
                guests_first(state_dir), aiohttp.ClientSession() as session:
            api = await Api.admin(session, served)
            [demo] = (await api.call("GET", "/image/v2/images?name=nova-async-demo", 200))["images"]
            small, big = [(await api.call("POST", V + "/flavors", 200, json={"flavor": {
                "name": name, "ram": ram, "vcpus": vcpus, "disk": 1}}))["flavor"]["id"]
                for name, ram, vcpus in (("tcg.small", 256, 1), ("tcg.big", 384, 2))]
            net = (await api.call("POST", "/network/v2.0/networks", 201,
                                  json={"network": {"name": "resizenet"}}))["network"]["id"]
            bridges.append("brq" + net[:11])
            await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
                "network_id": net, "cidr": "10.251.9.0/24", "ip_version": 4}})

            created = await api.call("POST", V + "/servers", 202, json={"server": {
                "name": "grows", "imageRef": demo["id"], "flavorRef": small, "networks": [{"uuid": net}]}})
            server_id = created["server"]["id"]
            server_ids.append(server_id)
            await api.status(server_id, "ACTIVE")
            await api.console_until(server_id, [READY])
            assert await _memory_kib(server_id) == (256 * 1024, 1)

            await api.call("POST", f"{V}/servers/{server_id}/action", 202, json={"resize": {"flavorRef": big}})
            server = await api.status(server_id, "VERIFY_RESIZE", timeout=180)
            assert server["flavor"]["original_name"] == "tcg.big"
            assert await _memory_kib(server_id) == (384 * 1024, 2)
            await until(lambda: api.console_polled(server_id), lambda out: out.count(READY) >= 2,
                        what="the guest booted again, with the new flavor", timeout=240, interval=0.25)
            await api.call("POST", f"{V}/servers/{server_id}/action", 204, json={"confirmResize": None})
            await api.status(server_id, "ACTIVE")
            instance_dir = served.state_dir / "instances" / server_id
            assert not (instance_dir / "resize-orig").exists()

            # A snapshot of the running guest (paused while its disk is copied) boots.
            snap = await api.call("POST", f"{V}/servers/{server_id}/action", 202,
                                  json={"createImage": {"name": "grown-snap"}})
            image = await until(lambda: api.call("GET", f"/image/v2/images/{snap['image_id']}", 200),
                                lambda shown: shown["status"] == "active", what="the snapshot active",
                                timeout=120, interval=0.25)
            assert (image["kernel_id"], image["ramdisk_id"]) == (demo["kernel_id"], demo["ramdisk_id"])
            # As in Nova, the image is active a moment before the server's task is cleared.
            server = await until(lambda: api.server(server_id), lambda shown: shown["OS-EXT-STS:task_state"] is None,
                                 what="the snapshot task finished")
            assert server["status"] == "ACTIVE"
            again = await api.call("POST", V + "/servers", 202, json={"server": {
                "name": "from-snap", "imageRef": snap["image_id"], "flavorRef": small,
                "networks": [{"uuid": net}]}})
            server_ids.append(again["server"]["id"])
            await api.status(again["server"]["id"], "ACTIVE")
            await api.console_until(again["server"]["id"], [READY])

            # Shelved: powered off, its disk written into "<name>-shelved", off the host; the
            # unshelve boots that image on a host the scheduler claims again.
            await api.call("POST", f"{V}/servers/{server_id}/action", 202, json={"shelve": None})
            await api.status(server_id, "SHELVED_OFFLOADED", timeout=180)
            assert not instance_dir.exists()
            [shelved] = (await api.call("GET", "/image/v2/images?name=grows-shelved", 200))["images"]
            await api.call("POST", f"{V}/servers/{server_id}/action", 202, json={"unshelve": None})
            await api.status(server_id, "ACTIVE", timeout=180)
            await api.console_until(server_id, [READY])
            await until(lambda: api.once("GET", f"/image/v2/images/{shelved['id']}"), lambda got: got[0] == 404,
                        what="the shelved image deleted")

            # Rescued: booted from the demo image's rescue disk, then its own guest again.
            rescued = await api.call("POST", f"{V}/servers/{server_id}/action", 200, json={"rescue": None})
            assert rescued["adminPass"]
            await api.status(server_id, "RESCUE", timeout=180)
            await until(lambda: api.console_polled(server_id), lambda out: out.count(READY) >= 2,
                        what="the rescue guest booted", timeout=240, interval=0.25)
            await api.call("POST", f"{V}/servers/{server_id}/action", 202, json={"unrescue": None})
            await api.status(server_id, "ACTIVE", timeout=180)
            await until(lambda: api.console_polled(server_id), lambda out: out.count(READY) >= 3,
                        what="its own guest booted again", timeout=240, interval=0.25)

            for sid in server_ids:
                await api.call("DELETE", f"{V}/servers/{sid}", 204)
            for sid in server_ids:
                await api.status(sid, "GONE")
            assert not instance_dir.exists()
    finally:
        await _remove_leftovers(server_ids, bridges)
        shutil.rmtree(state_dir, ignore_errors=True)
