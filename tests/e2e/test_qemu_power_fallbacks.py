"""On real QEMU (qemu:///system): a guest that ignores its ACPI power button still reboots
(soft falls back to hard once `timeout` has passed) and still stops (powered off hard).
The guest has no disk and no kernel: it sits in its firmware, which has no ACPI handler."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import libvirt
import pytest

from nova_async.compute.domain_xml import DomainSpec, domain_name, domain_xml
from nova_async.compute.hypervisor import Hypervisor

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path("/usr/bin/qemu-system-x86_64").exists(),
                       reason="QEMU is not installed (make test installs it)"),
]


async def test_a_guest_deaf_to_acpi_is_rebooted_and_stopped_hard():
    with ThreadPoolExecutor(2) as executor:
        hv = Hypervisor("qemu:///system", executor)
        await hv.open()
        name = domain_name(str(uuid.uuid4()))
        try:
            await hv.start(domain_xml(DomainSpec(instance_uuid=name.removeprefix("instance-"),
                                                 display_name="deaf", memory_mb=32, vcpus=1,
                                                 domain_type="qemu")))
            dom = hv.conn.lookupByName(name)
            first_id = dom.ID()  # each start of a domain gets a new id

            started = time.monotonic()
            await hv.reboot(name, hard=False, timeout=1.0)
            waited = time.monotonic() - started
            assert waited >= 1.0                       # the guest got its chance first
            assert dom.state()[0] == libvirt.VIR_DOMAIN_RUNNING
            assert hv.conn.lookupByName(name).ID() != first_id   # powered off, started again

            await hv.power_off(name, timeout=1.0)
            assert dom.state()[0] == libvirt.VIR_DOMAIN_SHUTOFF
        finally:
            await hv.remove(name)
            await hv.close()
