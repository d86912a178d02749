"""Which compute hosts this process runs, and the fake machines behind simulated ones.

`simulate_hosts = N` gives hosts sim-1..sim-N. Each gets its own libvirt test-driver
connection opened on a node file of its own (`test:///<path>.xml`), so each has its own
CPUs, memory and domains: a domain started on sim-1 is invisible on sim-2, as on two real
machines. With N = 0 there is one host, connected to `libvirt_uri`.

The test driver is a library: by default each host's driver, domains included, lives in this
process. With `sim_in_libvirtd` the same node files are opened through libvirtd
(`test+unix:///<path>.xml`), which gives each connection a driver of its own: the domains
then live in the daemon, as a real host's guests do, and every call is a round trip to it.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from nova_async.common.errors import InvalidInput
from nova_async.config import Settings


@dataclass(frozen=True)
class HostSpec:
    name: str
    uri: str
    simulated: bool = False
    # Simulated hosts have no disk of their own to measure; real ones report 0 here.
    disk_gb: int = 0


def node_xml(vcpus: int, memory_mb: int) -> str:
    """A libvirt test-driver node file describing a machine with no domains."""
    for what, value in (("vcpus", vcpus), ("memory_mb", memory_mb)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInput(f"simulated host {what} must be a positive integer, got {value!r}")
    node = ET.Element("node")
    cpu = ET.SubElement(node, "cpu")
    for tag, value in (("mhz", 2000), ("model", "x86_64"), ("active", vcpus), ("nodes", 1),
                       ("sockets", 1), ("cores", vcpus), ("threads", 1)):
        ET.SubElement(cpu, tag).text = str(value)
    ET.SubElement(node, "memory").text = str(memory_mb * 1024)  # KiB
    return ET.tostring(node, encoding="unicode", xml_declaration=True)


def write_node_file(directory: Path, name: str, vcpus: int, memory_mb: int, *, in_libvirtd: bool = False) -> str:
    """Write (atomically) the node file for simulated host `name`; return its libvirt URI (one
    libvirtd opens, with `in_libvirtd`)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory.resolve() / f"{name}.xml"
    tmp = path.with_suffix(".xml.tmp")
    tmp.write_text(node_xml(vcpus, memory_mb))
    os.replace(tmp, path)
    # libvirt parses the URI: spaces and the like in the state directory must be escaped.
    return ("test+unix://" if in_libvirtd else "test://") + urllib.parse.quote(str(path))


def host_names(settings: Settings) -> list[str]:
    """The compute hosts a process with these settings serves (what host_specs names)."""
    c = settings.compute
    if c.simulate_hosts > 0:
        return [f"sim-{i}" for i in range(1, c.simulate_hosts + 1)]
    return [c.host or socket.gethostname()]


def host_specs(settings: Settings) -> list[HostSpec]:
    c = settings.compute
    if c.simulate_hosts > 0:
        sim_dir = settings.state_path / "sim"
        return [HostSpec(name=f"sim-{i}", simulated=True, disk_gb=c.sim_disk_gb,
                         uri=write_node_file(sim_dir, f"sim-{i}", c.sim_vcpus, c.sim_memory_mb,
                                             in_libvirtd=c.sim_in_libvirtd))
                for i in range(1, c.simulate_hosts + 1)]
    return [HostSpec(name=c.host or socket.gethostname(), uri=c.libvirt_uri)]
