"""On real QEMU (qemu:///system): a volume's disk attached to a running guest appears in QEMU
(its block layer has the file) and in the domain's live and persistent definitions, serial =
the volume id; grown, the guest's disk grows with it; detached, it leaves all three. The guest is the demo kernel and initramfs: a
virtio disk's hot-unplug needs a guest kernel that answers the ACPI eject request, which is
what Hypervisor.detach_disk waits for (libvirt's device-removed event). A guest that never
answers (no kernel at all) keeps the disk, live and in its persistent definition."""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import libvirt
import libvirt_qemu
import pytest

from nova_async.common import errors
from nova_async.compute import events
from nova_async.compute.domain_xml import Disk, DomainSpec, disk_xml, domain_name, domain_xml
from nova_async.compute.guest_image import default_cache_dir, load_cached
from nova_async.compute.hypervisor import Hypervisor

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path("/usr/bin/qemu-system-x86_64").exists(),
                       reason="QEMU is not installed (make test installs it)"),
]


def qemu_block_files(dom: libvirt.virDomain) -> set[str]:
    """The files QEMU's block layer has open for the guest, as its monitor says."""
    reply = json.loads(libvirt_qemu.qemuMonitorCommand(dom, '{"execute": "query-block"}', 0))
    return {b["inserted"]["file"] for b in reply["return"] if "inserted" in b}


async def test_a_volume_is_hot_plugged_into_a_running_guest_and_out_again():
    image = load_cached(default_cache_dir())
    if image is None:
        pytest.skip("the demo guest is not built (make guest-image)")
    # QEMU runs as its own user: the volume lives where that user can reach it.
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="volume-hotplug-") as tmp, \
            ThreadPoolExecutor(2) as executor:
        os.chmod(tmp, 0o755)
        volume_id = str(uuid.uuid4())
        path = Path(tmp, volume_id)
        with open(path, "wb") as f:
            f.truncate(64 * 1024 * 1024)
        events.enable()
        hv = Hypervisor("qemu:///system", executor)
        await hv.open()
        await hv.watch(lambda _uuid: None)
        name = domain_name(str(uuid.uuid4()))
        try:
            await hv.start(domain_xml(DomainSpec(
                instance_uuid=name.removeprefix("instance-"), display_name="hotplug", memory_mb=128, vcpus=1,
                domain_type="qemu", kernel=str(image.kernel), initrd=str(image.initrd), cmdline=image.cmdline)))
            dom = hv.conn.lookupByName(name)
            disk = Disk(path=str(path), target="vdb", format="raw", serial=volume_id)

            await hv.attach_device(name, disk_xml(disk))
            assert str(path) in qemu_block_files(dom)
            assert (await hv.disk_targets(name, live=True)).get("vdb") == volume_id
            assert (await hv.disk_targets(name, live=False)).get("vdb") == volume_id

            # the volume grew (its service extended the file): the running guest is told
            os.truncate(path, 96 * 1024 * 1024)
            await hv.block_resize(name, "vdb", 96 * 1024 * 1024)
            assert dom.blockInfo("vdb")[0] == 96 * 1024 * 1024

            # The guest may still be booting and miss the first eject request (its ACPI
            # hotplug driver is not up yet): detach_disk asks again, as Nova does.
            await hv.detach_disk(name, disk_xml(disk), "vdb")
            assert "vdb" not in await hv.disk_targets(name, live=True)
            assert "vdb" not in await hv.disk_targets(name, live=False)
            assert str(path) not in qemu_block_files(dom)
            assert dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
        finally:
            await hv.remove(name)
            await hv.close()


async def test_a_guest_that_keeps_the_disk_keeps_it_in_its_definition_too():
    # No kernel: the guest sits in its firmware, which answers no ACPI eject request.
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="volume-hotplug-") as tmp, \
            ThreadPoolExecutor(2) as executor:
        os.chmod(tmp, 0o755)
        volume_id = str(uuid.uuid4())
        path = Path(tmp, volume_id)
        with open(path, "wb") as f:
            f.truncate(16 * 1024 * 1024)
        hv = Hypervisor("qemu:///system", executor)
        await hv.open()
        name = domain_name(str(uuid.uuid4()))
        try:
            await hv.start(domain_xml(DomainSpec(instance_uuid=name.removeprefix("instance-"), display_name="deaf",
                                                 memory_mb=32, vcpus=1, domain_type="qemu")))
            disk = Disk(path=str(path), target="vdb", format="raw", serial=volume_id)
            await hv.attach_device(name, disk_xml(disk))
            with pytest.raises(errors.NovaAsyncError, match="did not release disk vdb"):
                await hv.detach_disk(name, disk_xml(disk), "vdb", attempts=2, timeout=0.5)
            assert (await hv.disk_targets(name, live=True)).get("vdb") == volume_id
            assert (await hv.disk_targets(name, live=False)).get("vdb") == volume_id
            assert str(path) in qemu_block_files(hv.conn.lookupByName(name))
        finally:
            await hv.remove(name)
            await hv.close()
