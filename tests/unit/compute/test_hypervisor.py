import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from nova_async.common.errors import NovaAsyncError
from nova_async.compute.domain_xml import DomainSpec, domain_name, domain_xml
from nova_async.compute.hypervisor import Hypervisor, runs_in_process
from nova_async.compute.simhosts import write_node_file


def test_only_the_in_process_test_driver_is_called_inline():
    assert runs_in_process("test:///default")
    assert runs_in_process("test:///var/lib/x/sim-1.xml")
    assert not runs_in_process("test+unix:///default")
    assert not runs_in_process("qemu:///system")


@pytest.mark.parametrize("threaded", [False, True], ids=["inline", "thread-pool"])
async def test_domain_lifecycle(tmp_path, threaded):
    executor = ThreadPoolExecutor(2) if threaded else None
    hv = Hypervisor(write_node_file(tmp_path, "sim-x", 4, 4096), executor)
    await hv.open()
    try:
        facts = await hv.facts()
        assert (facts.vcpus, facts.memory_mb, facts.hypervisor_type, facts.domain_type) == (
            4, 4096, "test", "test")
        instance = str(uuid.uuid4())
        name = domain_name(instance)
        node, other = str(uuid.uuid4()), str(uuid.uuid4())
        await hv.start(domain_xml(DomainSpec(instance_uuid=instance, display_name="a", memory_mb=64, vcpus=1,
                                             domain_type=facts.domain_type, node=node)))
        hv.conn.defineXML("<domain type='test'><name>someone-else</name><memory>1024</memory>"
                          "<os><type>hvm</type></os></domain>")
        assert await hv.is_running(name) is True
        assert await hv.instance_uuids(node) == {instance}
        assert await hv.instance_uuids(other) == set()
        assert await hv.remove(name) is True
        assert await hv.is_running(name) is None
        assert await hv.remove(name) is False  # already gone is fine
        # defined but never started: still removable
        hv.conn.defineXML(domain_xml(DomainSpec(instance_uuid=instance, display_name="a", memory_mb=64,
                                                vcpus=1, domain_type="test")))
        assert await hv.is_running(name) is False
        assert await hv.remove(name) is True
    finally:
        await hv.close()
        if executor:
            executor.shutdown()


async def test_a_failing_start_says_which_step_failed(tmp_path):
    hv = Hypervisor(write_node_file(tmp_path, "sim-y", 1, 1024), None)
    await hv.open()
    try:
        instance = str(uuid.uuid4())
        spec = DomainSpec(instance_uuid=instance, display_name="a", memory_mb=64, vcpus=1, domain_type="test")
        await hv.start(domain_xml(spec))
        # same domain again: already running, so create() fails and the error names the step
        with pytest.raises(NovaAsyncError, match="start the domain"):
            await hv.start(domain_xml(spec))
    finally:
        await hv.close()
