import xml.etree.ElementTree as ET

import libvirt
import pytest

from nova_async.common.errors import InvalidInput
from nova_async.compute.simhosts import host_specs, node_xml, write_node_file
from tests.harness import settings_for


def test_node_xml_describes_the_machine():
    root = ET.fromstring(node_xml(12, 4096))
    assert root.tag == "node"
    assert root.findtext("cpu/active") == "12"
    assert root.findtext("memory") == str(4096 * 1024)  # KiB
    assert root.find("domain") is None


@pytest.mark.parametrize("vcpus,memory", [(0, 1024), (4, 0), ("4", 1024), (True, 1024)])
def test_node_xml_refuses_bad_capacities(vcpus, memory):
    with pytest.raises(InvalidInput):
        node_xml(vcpus, memory)


def test_each_node_file_is_its_own_machine(tmp_path):
    state = tmp_path / "state dir & more"  # the URI must survive awkward paths
    a = libvirt.open(write_node_file(state, "sim-1", 6, 2048))
    b = libvirt.open(write_node_file(state, "sim-2", 6, 2048))
    try:
        info = a.getInfo()
        assert (info[1], info[2]) == (2048, 6)
        a.defineXML("<domain type='test'><name>only-on-a</name><memory>1024</memory>"
                    "<os><type>hvm</type></os></domain>")
        assert [d.name() for d in b.listAllDomains()] == []
    finally:
        a.close()
        b.close()


def test_host_specs(tmp_path):
    sims = host_specs(settings_for(tmp_path, compute={"simulate_hosts": 3, "sim_disk_gb": 40}))
    assert [s.name for s in sims] == ["sim-1", "sim-2", "sim-3"]
    assert all(s.uri.startswith("test:///") and s.disk_gb == 40 and s.simulated for s in sims)
    assert (tmp_path / "sim" / "sim-2.xml").exists()
    daemon = host_specs(settings_for(tmp_path, compute={"simulate_hosts": 2, "sim_in_libvirtd": True}))
    assert [s.uri for s in daemon] == [s.uri.replace("test://", "test+unix://", 1) for s in sims[:2]]
    (real,) = host_specs(settings_for(tmp_path, compute={"host": "cn1", "libvirt_uri": "qemu:///system"}))
    assert (real.name, real.uri, real.simulated) == ("cn1", "qemu:///system", False)
