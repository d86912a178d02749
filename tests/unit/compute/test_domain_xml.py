import uuid
import xml.etree.ElementTree as ET

import pytest

import nova_async
from nova_async.common.errors import InvalidInput
from nova_async.compute.domain_xml import (NS, Disk, DomainSpec, Interface, _disk, disk_xml, domain_name,
                                           domain_tree, domain_xml, uuid_from_domain_name)

UUID = "0f7c3c4e-8b1e-4a53-9d1a-2f6a3c1b2d4e"


def spec(**kw):
    values = dict(instance_uuid=UUID, display_name="web", memory_mb=512, vcpus=2, domain_type="qemu",
                  project_id="proj", flavor_name="m1.tiny",
                  disks=(Disk(path="/var/lib/x/disk", target="vda"),),
                  interfaces=(Interface(mac="FA:16:3E:00:00:01", tap="tap1234", bridge="br0"),))
    values.update(kw)
    return DomainSpec(**values)


def test_hostile_display_name_is_escaped_and_round_trips():
    name = 'a "quoted" <script>&amp; \'x\' ]]> name'
    xml = domain_xml(spec(display_name=name))
    assert "<script>" not in xml and '"quoted" <' not in xml
    root = ET.fromstring(xml)
    assert root.find(f"metadata/{{{NS}}}instance/{{{NS}}}name").text == name
    assert root.findtext("title") == name
    assert root.findtext("name") == f"instance-{UUID}"
    # the name did not create or alter any element
    assert [el.tag for el in root.find("devices")] == ["disk", "interface", "serial", "console", "graphics"]


def test_hostile_project_and_flavor_stay_attribute_values():
    xml = domain_xml(spec(project_id='p" evil="1', flavor_name="<f>&"))
    root = ET.fromstring(xml)
    project = root.find(f"metadata/{{{NS}}}instance/{{{NS}}}project")
    assert project.attrib == {"id": 'p" evil="1'}
    assert root.find(f"metadata/{{{NS}}}instance/{{{NS}}}flavor").get("name") == "<f>&"


def test_control_characters_cannot_break_the_document():
    xml = domain_xml(spec(display_name="bad\x00\x07name\nline"))
    root = ET.fromstring(xml)
    assert root.find(f"metadata/{{{NS}}}instance/{{{NS}}}name").text == "bad\ufffd\ufffdname\nline"
    assert "\n" not in root.findtext("title")


def test_devices_are_described():
    root = ET.fromstring(domain_xml(spec(domain_type="test")))
    assert root.get("type") == "test"
    assert root.findtext("uuid") == UUID
    assert root.find("memory").text == "512" and root.find("memory").get("unit") == "MiB"
    assert root.findtext("vcpu") == "2"
    disk = root.find("devices/disk")
    assert disk.find("source").get("file") == "/var/lib/x/disk"
    assert disk.find("target").attrib == {"dev": "vda", "bus": "virtio"}
    assert disk.find("driver").get("type") == "qcow2"
    iface = root.find("devices/interface")
    assert iface.get("type") == "bridge"
    assert iface.find("mac").get("address") == "fa:16:3e:00:00:01"
    assert iface.find("source").get("bridge") == "br0"
    assert iface.find("target").get("dev") == "tap1234"
    assert root.find("features/acpi") is not None
    assert root.find("devices/serial").get("type") == "pty"


def test_interface_without_bridge_is_ethernet():
    root = ET.fromstring(domain_xml(spec(interfaces=(Interface(mac="fa:16:3e:00:00:02", tap="tapx"),))))
    iface = root.find("devices/interface")
    assert iface.get("type") == "ethernet" and iface.find("source") is None


@pytest.mark.parametrize("kw", [
    {"memory_mb": 0}, {"memory_mb": "512"}, {"memory_mb": True}, {"vcpus": 0}, {"vcpus": 2.0},
    {"domain_type": "xen"}, {"instance_uuid": "not-a-uuid"}, {"display_name": None},
    {"disks": (Disk(path="/a", target="vda"), Disk(path="/b", target="vda"))},
])
def test_bad_domain_values_are_refused(kw):
    with pytest.raises(InvalidInput):
        spec(**kw)


@pytest.mark.parametrize("make", [
    lambda: Disk(path="relative/disk", target="vda"),
    lambda: Disk(path="/x", target="vda'/><evil"),
    lambda: Disk(path="/x", target="vda", format="vmdk"),
    lambda: Interface(mac="fa:16:3e:00:00", tap="tap1"),
    lambda: Interface(mac="fa:16:3e:00:00:01'", tap="tap1"),
    lambda: Interface(mac="fa:16:3e:00:00:01", tap="tap-name-much-too-long"),
    lambda: Interface(mac="fa:16:3e:00:00:01", tap="tap 1"),
    lambda: Interface(mac="fa:16:3e:00:00:01", tap="tap1", bridge="br/0"),
    lambda: Interface(mac="fa:16:3e:00:00:01", tap="tap1", mtu=10),
])
def test_bad_device_values_are_refused(make):
    with pytest.raises(InvalidInput):
        make()


def test_domain_names_map_back_to_instances():
    assert uuid_from_domain_name(domain_name(UUID.upper())) == UUID
    assert uuid_from_domain_name("test") is None
    assert uuid_from_domain_name("instance-00000001") is None
    assert uuid_from_domain_name(f"instance-{uuid.UUID(UUID).hex}") is None  # not our spelling


def real_guest(**kw):
    return spec(kernel="/var/lib/x/_base/kernel", initrd="/var/lib/x/_base/ramdisk",
                cmdline="root=/dev/vda console=ttyS0 quiet", console_log="/var/lib/x/console.log",
                disks=(Disk(path="/var/lib/x/disk", target="vda"),
                       Disk(path="/var/lib/x/disk.config", target="hdc", format="raw", device="cdrom")),
                **kw)


def test_real_guest_boots_its_kernel_reads_its_config_drive_and_logs_its_console():
    root = ET.fromstring(domain_xml(real_guest()))
    assert root.findtext("os/kernel") == "/var/lib/x/_base/kernel"
    assert root.findtext("os/initrd") == "/var/lib/x/_base/ramdisk"
    assert root.findtext("os/cmdline") == "root=/dev/vda console=ttyS0 quiet"
    assert root.find("os/boot") is None  # the kernel is what boots
    assert root.find("features/acpi") is not None  # a guest's poweroff ends the domain
    cdrom = root.find("devices/disk[@device='cdrom']")
    assert cdrom.find("source").get("file") == "/var/lib/x/disk.config"
    assert cdrom.find("target").attrib == {"dev": "hdc", "bus": "ide"}
    assert cdrom.find("driver").get("type") == "raw" and cdrom.find("readonly") is not None
    serial = root.find("devices/serial")
    # The console proxy connects to a socket beside the log …
    assert serial.get("type") == "unix"
    assert serial.find("source").attrib == {"mode": "bind", "path": "/var/lib/x/console.sock"}
    assert serial.find("log").attrib == {"file": "/var/lib/x/console.log", "append": "on"}  # … and it is kept
    assert root.find("devices/console/source").get("path") == "/var/lib/x/console.sock"
    # noVNC's screen listens on loopback only, on a port libvirt picks.
    graphics = root.find("devices/graphics")
    assert graphics.attrib == {"type": "vnc", "autoport": "yes", "listen": "127.0.0.1"}


def test_a_console_socket_path_too_long_for_unix_sockets_falls_back_to_a_pty():
    deep = "/var/lib/" + "d" * 100
    root = ET.fromstring(domain_xml(spec(kernel="/k", console_log=f"{deep}/console.log")))
    serial = root.find("devices/serial")
    assert serial.get("type") == "pty" and serial.find("source") is None
    assert serial.find("log").get("file") == f"{deep}/console.log"   # the log is still kept


def test_the_test_driver_domain_has_no_kernel_and_no_log():
    root = ET.fromstring(domain_xml(spec(domain_type="test")))
    assert root.find("os/kernel") is None and root.findtext("os/boot[@dev='hd']") is not None
    assert root.find("devices/serial/log") is None
    assert root.find("devices/serial").get("type") == "pty" and root.find("devices/graphics") is None
    with pytest.raises(InvalidInput):
        real_guest(domain_type="test")


@pytest.mark.parametrize("kw", [
    {"kernel": "relative/vmlinux"}, {"initrd": "/x/ramdisk"}, {"cmdline": "console=ttyS0"},
    {"kernel": "/k", "cmdline": "console=ttyS0\ninit=/bin/sh"}, {"kernel": "/k", "cmdline": "a\x00b"},
    {"kernel": "/k", "cmdline": "x" * 2048}, {"kernel": "/k", "cmdline": "ünï"},
    {"console_log": "console.log"},
])
def test_bad_boot_values_are_refused(kw):
    with pytest.raises(InvalidInput):
        spec(**kw)


@pytest.mark.parametrize("make", [
    lambda: Disk(path="/x.iso", target="hdc", format="qcow2", device="cdrom"),
    lambda: Disk(path="/x.iso", target="vdc", format="raw", device="cdrom"),
    lambda: Disk(path="/x.iso", target="hdc", format="raw", device="floppy"),
    lambda: Disk(path="/x.iso", target="vdc", format="raw", device="cdrom", bus="virtio"),
    lambda: Disk(path="/x", target="vdc", bus="scsi"),      # a SCSI disk is sdX
    lambda: Disk(path="/x", target="sdc", bus="floppy"),
])
def test_bad_cdroms_are_refused(make):
    with pytest.raises(InvalidInput):
        make()


@pytest.mark.parametrize("kw", [{}, {"kernel": "/k", "initrd": "/r", "cmdline": "root=/dev/vda"},
                                {"domain_type": "test"}])
def test_every_guest_says_it_runs_on_openstack_nova_in_its_smbios_strings(kw):
    # cloud-init's ds-identify reads these (/sys/class/dmi/id/product_name …) to pick the
    # OpenStack datasource; Nova writes the same entries.
    root = ET.fromstring(domain_xml(spec(display_name='"OpenStack Nova" <x>', **kw)))
    assert root.find("sysinfo").get("type") == "smbios"
    entries = {e.get("name"): e.text for e in root.findall("sysinfo/system/entry")}
    assert entries == {"manufacturer": "OpenStack Foundation", "product": "OpenStack Nova",
                       "version": nova_async.__version__, "serial": UUID, "uuid": UUID,
                       "family": "Virtual Machine"}
    assert root.find("os/smbios").attrib == {"mode": "sysinfo"}   # the guest sees them


def test_a_name_cannot_reach_the_smbios_strings():
    hostile = "x</entry><entry name='product'>evil</entry>"
    root = ET.fromstring(domain_xml(spec(display_name=hostile, project_id=hostile, flavor_name=hostile)))
    assert [e.get("name") for e in root.findall("sysinfo/system/entry")] == [
        "manufacturer", "product", "version", "serial", "uuid", "family"]
    assert root.findtext("sysinfo/system/entry[@name='product']") == "OpenStack Nova"


def test_a_stable_rescue_disk_on_another_bus_boots_first():
    """A stable device rescue adds its disk on the bus its image names, first in boot order
    (so no <os><boot dev>), with the virtio-scsi controller a SCSI disk needs."""
    disks = (Disk(path="/var/lib/x/disk", target="vda"),
             Disk(path="/var/lib/x/disk.rescue", target="sda", bus="scsi", boot_order=1),
             Disk(path="/var/lib/x/rescue.iso", target="sdb", format="raw", device="cdrom", bus="usb"))
    root = ET.fromstring(domain_xml(spec(disks=disks)))
    assert root.find("os/boot") is None
    assert root.find("devices/controller[@type='scsi']").get("model") == "virtio-scsi"
    targets = {d.find("target").get("dev"): (d.find("target").get("bus"), d.find("boot"))
               for d in root.findall("devices/disk")}
    assert targets["vda"] == ("virtio", None) and targets["sda"][0] == "scsi"
    assert targets["sda"][1].get("order") == "1" and targets["sdb"][0] == "usb"


HOSTILE = 'a "q" <s>&amp; \'x\' ]]>\r\n\tname\x00'


@pytest.mark.parametrize("make", [
    lambda: spec(),
    lambda: spec(domain_type="test", interfaces=(Interface(mac="fa:16:3e:00:00:02", tap="tap9"),)),
    lambda: spec(display_name=HOSTILE, project_id=HOSTILE, flavor_name=HOSTILE, node=UUID),
    lambda: real_guest(display_name=HOSTILE),
    lambda: spec(kernel="/k", console_log="/var/lib/" + "d" * 100 + "/console.log"),
    lambda: spec(disks=(Disk(path="/var/lib/x/disk", target="vda"),
                        Disk(path="/dev/mapper/v-1", target="vdb", kind="block", serial=UUID),
                        Disk(path="/var/lib/x/disk.rescue", target="sda", bus="scsi", boot_order=1))),
])
def test_the_domain_is_written_as_elementtree_writes_it(make):
    """domain_xml writes its tree itself (the standard serialiser was a build's largest cost
    of its own): character for character what ElementTree writes."""
    made = make()
    assert domain_xml(made) == ET.tostring(domain_tree(made), encoding="unicode")
    for disk in made.disks:
        assert disk_xml(disk) == ET.tostring(_disk(ET.Element("devices"), disk), encoding="unicode")
