"""A host's CPU, from libvirt's capabilities XML, in the shape Nova reports as cpu_info."""

from nova_async.compute.hypervisor import cpu_info_of

CAPABILITIES = """<capabilities><host><cpu>
  <arch>x86_64</arch><model>Broadwell-noTSX</model><vendor>Intel</vendor>
  <topology sockets='1' dies='1' cores='2' threads='2'/>
  <feature name='vme'/><feature name='ss'/>
</cpu><topology><cells num='1'><cell id='0'/></cells></topology></host></capabilities>"""


def test_a_real_hosts_cpu():
    assert cpu_info_of(CAPABILITIES) == {
        "arch": "x86_64", "model": "Broadwell-noTSX", "vendor": "Intel",
        "topology": {"cells": 1, "sockets": 1, "cores": 2, "threads": 2}, "features": ["ss", "vme"]}


def test_no_cpu_described():
    assert cpu_info_of("<capabilities><host/></capabilities>") == {}
