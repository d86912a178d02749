"""The libvirt domain XML for one instance, built from checked values.

Everything a user chose (the server's name, its project) reaches the hypervisor only as
element text or attribute values that ElementTree escapes; nothing is pasted into a string.
Values that end up in device definitions (MACs, tap names, paths) are validated here, so a
bad value fails the build with a clear message instead of a libvirt parse error — or worse,
a definition that means something else.

The same XML serves libvirt's test driver and QEMU/KVM. A real guest (qemu/kvm) adds what
the test driver has no use for: direct kernel boot (Nova's kernel_id / ramdisk_id images),
its config drive as a read-only CD-ROM, a serial console that is also written to a log
file (what `os-getConsoleOutput` reads back) and listens on a unix socket (what the serial
console proxy connects to), and a VNC screen on loopback for noVNC.

Every guest carries Nova's SMBIOS system strings (manufacturer `OpenStack Foundation`,
product `OpenStack Nova`, serial and UUID the instance's): cloud-init's ds-identify reads
the product from /sys/class/dmi/id to decide that it runs on OpenStack, and a stock cloud
image that finds neither that nor a config drive looks no further for its datasource.
"""

from __future__ import annotations

import re
import uuid as uuidlib
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from nova_async import __version__
from nova_async.common.errors import InvalidInput

NAME_PREFIX = "instance-"
# Our own metadata namespace: marks domains as ours and carries what an operator wants to see.
NS = "urn:nova-async:instance:1.0"
ET.register_namespace("nova-async", NS)

DOMAIN_TYPES = ("test", "qemu", "kvm")
DISK_FORMATS = ("raw", "qcow2")
DISK_DEVICES = ("disk", "cdrom")
# A disk's bus and the device-name prefix libvirt gives it (a stable device rescue's disk may
# be on any of them, as its image's hw_rescue_bus says).
DISK_BUSES = {"virtio": "vd", "scsi": "sd", "usb": "sd", "sata": "sd", "ide": "hd"}
DISK_KINDS = ("file", "block")   # a file on the host, or a block device (/dev/...)

_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
# Linux interface names: at most 15 bytes, no slash, no whitespace; we allow a safe subset.
_IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
_TARGET = re.compile(r"^(vd|sd|hd)[a-z]{1,2}$")
_SERIAL = re.compile(r"^[0-9a-f-]{1,36}$")
# Characters XML 1.0 cannot carry at all, even escaped.
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MAX_TEXT = 255
# The kernel command line: printable text on one line; x86 Linux takes at most 2048 bytes.
_CMDLINE = re.compile(r"^[\x20-\x7e]{0,2047}$")
# The serial console's socket, in the instance directory; sun_path holds 108 bytes with NUL.
CONSOLE_SOCKET = "console.sock"
_MAX_SOCKET_PATH = 107
VNC_LISTEN = "127.0.0.1"
# What Nova's libvirt driver writes into <sysinfo type='smbios'><system> (nova.version's
# vendor and product strings; "Virtual Machine" is its family).
SMBIOS_MANUFACTURER = "OpenStack Foundation"
SMBIOS_PRODUCT = "OpenStack Nova"
SMBIOS_FAMILY = "Virtual Machine"


def domain_name(instance_uuid: str) -> str:
    return NAME_PREFIX + canonical_uuid(instance_uuid)


def node_of(metadata: str) -> str | None:
    """The compute node named in our metadata element (as libvirt returns it), if any."""
    try:
        return ET.fromstring(metadata).get("node")
    except ET.ParseError:
        return None


def uuid_from_domain_name(name: str) -> str | None:
    """The instance UUID of one of our domains, or None for a domain that is not ours."""
    if not name.startswith(NAME_PREFIX):
        return None
    rest = name[len(NAME_PREFIX):]
    try:
        canonical = str(uuidlib.UUID(rest))
    except ValueError:
        return None
    return canonical if canonical == rest else None


def canonical_uuid(value: str) -> str:
    if isinstance(value, str) and _CANONICAL_UUID.fullmatch(value):   # as the database gives it: no parse
        return value
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError:
        raise InvalidInput(f"{value!r} is not a UUID") from None


def xml_text(value: str, what: str) -> str:
    """User text made safe to carry in XML: unrepresentable characters replaced, length capped."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string")
    return _NOT_XML.sub("\ufffd", value)[:_MAX_TEXT]


def _positive_int(value: object, what: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInput(f"{what} must be an integer from 1 to {maximum}, got {value!r}")
    return value


def _path(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.startswith("/") or _NOT_XML.search(value) or "\n" in value:
        raise InvalidInput(f"{what} must be an absolute path, got {value!r}")
    return value


@dataclass(frozen=True)
class Disk:
    path: str
    target: str
    format: str = "qcow2"
    # "cdrom": a read-only raw image on the IDE bus (the config drive), which every x86
    # guest kernel can read without virtio drivers; "disk": a virtio block device.
    device: str = "disk"
    # A volume: its bits may be a block device, and its serial is the volume id, so that
    # the guest sees /dev/disk/by-id/virtio-<first 20 characters of the id>.
    kind: str = "file"
    serial: str = ""
    # "" : as its device says (virtio for a disk, ide for a CD-ROM); else one of DISK_BUSES.
    bus: str = ""
    # 1: the disk the firmware boots first (a stable device rescue's rescue disk); 0: none given.
    boot_order: int = 0

    @property
    def bus_name(self) -> str:
        return self.bus or ("ide" if self.device == "cdrom" else "virtio")

    def __post_init__(self) -> None:
        _path(self.path, "disk path")
        if self.kind not in DISK_KINDS:
            raise InvalidInput(f"disk kind {self.kind!r} is not one of {', '.join(DISK_KINDS)}")
        if self.serial and not _SERIAL.match(self.serial):
            raise InvalidInput(f"disk serial {self.serial!r} is not a volume id")
        if not _TARGET.match(self.target):
            raise InvalidInput(f"disk target {self.target!r} is not a device name like vda")
        if self.format not in DISK_FORMATS:
            raise InvalidInput(f"disk format {self.format!r} is not one of {', '.join(DISK_FORMATS)}")
        if self.device not in DISK_DEVICES:
            raise InvalidInput(f"disk device {self.device!r} is not one of {', '.join(DISK_DEVICES)}")
        if self.bus and self.bus not in DISK_BUSES:
            raise InvalidInput(f"disk bus {self.bus!r} is not one of {', '.join(DISK_BUSES)}")
        if not self.target.startswith(DISK_BUSES[self.bus_name]):
            raise InvalidInput(f"a disk on the {self.bus_name} bus is named {DISK_BUSES[self.bus_name]}X, "
                               f"not {self.target}")
        if self.device == "cdrom" and (self.format != "raw" or self.bus_name == "virtio"):
            raise InvalidInput(f"a CD-ROM must be a raw image on a bus other than virtio, got "
                               f"{self.format} on {self.bus_name}")


@dataclass(frozen=True)
class Interface:
    mac: str
    tap: str
    bridge: str = ""
    mtu: int = 1500

    def __post_init__(self) -> None:
        if not isinstance(self.mac, str) or not _MAC.match(self.mac.lower()):
            raise InvalidInput(f"MAC address {self.mac!r} is not of the form aa:bb:cc:dd:ee:ff")
        object.__setattr__(self, "mac", self.mac.lower())
        if not _IFNAME.match(self.tap or ""):
            raise InvalidInput(f"tap device name {self.tap!r} is not a valid interface name")
        if self.bridge and not _IFNAME.match(self.bridge):
            raise InvalidInput(f"bridge name {self.bridge!r} is not a valid interface name")
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or not 68 <= self.mtu <= 65535:
            raise InvalidInput(f"MTU {self.mtu!r} is out of range 68..65535")


@dataclass(frozen=True)
class DomainSpec:
    instance_uuid: str
    display_name: str
    memory_mb: int
    vcpus: int
    domain_type: str
    project_id: str = ""
    flavor_name: str = ""
    disks: tuple[Disk, ...] = ()
    interfaces: tuple[Interface, ...] = ()
    # Direct kernel boot: all empty boots from the first disk.
    kernel: str = ""
    initrd: str = ""
    cmdline: str = ""
    # Where the serial console is also written (empty: an interactive console only).
    console_log: str = ""
    # The compute node (per database) that made the domain: start-up only ever removes
    # orphans it made itself, never those of another nova-async sharing this libvirt.
    node: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "instance_uuid", canonical_uuid(self.instance_uuid))
        for attr in ("kernel", "initrd", "console_log"):
            if getattr(self, attr):
                _path(getattr(self, attr), attr)
        if (self.initrd or self.cmdline) and not self.kernel:
            raise InvalidInput("a ramdisk or kernel command line needs a kernel to boot")
        if not isinstance(self.cmdline, str) or not _CMDLINE.fullmatch(self.cmdline):
            raise InvalidInput("the kernel command line must be printable ASCII on one line, "
                               "at most 2047 characters")
        if self.domain_type == "test" and (self.kernel or self.console_log):
            raise InvalidInput("libvirt's test driver boots no kernel and has no console log")
        for attr in ("display_name", "project_id", "flavor_name"):
            object.__setattr__(self, attr, xml_text(getattr(self, attr), attr))
        if self.node:
            object.__setattr__(self, "node", canonical_uuid(self.node))
        _positive_int(self.memory_mb, "memory_mb", 16 * 1024 * 1024)
        _positive_int(self.vcpus, "vcpus", 1024)
        if self.domain_type not in DOMAIN_TYPES:
            raise InvalidInput(f"domain type {self.domain_type!r} is not one of {', '.join(DOMAIN_TYPES)}")
        targets = [d.target for d in self.disks]
        if len(set(targets)) != len(targets):
            raise InvalidInput(f"two disks share a target device: {targets}")
        taps = [i.tap for i in self.interfaces]
        if len(set(taps)) != len(taps):
            raise InvalidInput(f"two interfaces share a tap device: {taps}")

    @property
    def name(self) -> str:
        return NAME_PREFIX + self.instance_uuid


# What ElementTree escapes in text and in attribute values ("&" first, so that no entity is
# escaped twice).
_TEXT_MARKS = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))
_ATTR_MARKS = (*_TEXT_MARKS, ('"', "&quot;"), ("\r", "&#13;"), ("\n", "&#10;"), ("\t", "&#09;"))
_TEXT_MARKED = re.compile("[&<>]").search
_ATTR_MARKED = re.compile('[&<>"\r\n\t]').search


def _escaped(text: str, marks: tuple[tuple[str, str], ...]) -> str:
    for mark, entity in marks:
        text = text.replace(mark, entity)
    return text


def _to_string(root: ET.Element) -> str:
    """`ET.tostring(root, encoding="unicode")`, for the trees made here (a tag, attributes,
    text and children; no tails, no comments; names in no namespace or ours): the same
    characters, escaped the same way, in a fraction of the time. Serialising its domain
    cost a build more than anything else of its own (tests/unit/compute/test_domain_xml.py
    compares the two on every kind of domain)."""
    ours = f"{{{NS}}}"
    out: list[str] = []
    add = out.append

    def write(el: ET.Element) -> None:
        tag = el.tag.replace(ours, "nova-async:")
        add("<" + tag)
        for key, value in el.attrib.items():
            add(f' {key}="{_escaped(value, _ATTR_MARKS) if _ATTR_MARKED(value) else value}"')
        text = el.text
        if text is None and not len(el):
            add(" />")
            return
        add(">")
        if text:
            add(_escaped(text, _TEXT_MARKS) if _TEXT_MARKED(text) else text)
        for child in el:
            write(child)
        add(f"</{tag}>")

    write(root)
    if any(el.tag.startswith(ours) for el in root.iter()):   # declared on the root, as ElementTree does
        out.insert(1, f' xmlns:nova-async="{NS}"')
    return "".join(out)


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, attrs)
    if text is not None:
        el.text = text
    return el


def _metadata(parent: ET.Element, spec: DomainSpec) -> None:
    meta = _sub(parent, "metadata")
    inst = _sub(meta, f"{{{NS}}}instance", uuid=spec.instance_uuid, **({"node": spec.node} if spec.node else {}))
    _sub(inst, f"{{{NS}}}name", spec.display_name)
    _sub(inst, f"{{{NS}}}project", id=spec.project_id)
    _sub(inst, f"{{{NS}}}flavor", name=spec.flavor_name, vcpus=str(spec.vcpus), memory_mb=str(spec.memory_mb))


def _sysinfo(parent: ET.Element, spec: DomainSpec) -> None:
    # Nova's serial is the instance UUID too (its [libvirt] sysinfo_serial default, "unique").
    system = _sub(_sub(parent, "sysinfo", type="smbios"), "system")
    for name, value in (("manufacturer", SMBIOS_MANUFACTURER), ("product", SMBIOS_PRODUCT),
                        ("version", __version__), ("serial", spec.instance_uuid),
                        ("uuid", spec.instance_uuid), ("family", SMBIOS_FAMILY)):
        _sub(system, "entry", value, name=name)


def _disk(devices: ET.Element, disk: Disk) -> ET.Element:
    el = _sub(devices, "disk", type=disk.kind, device=disk.device)
    _sub(el, "driver", name="qemu", type=disk.format)
    if disk.kind == "block":
        _sub(el, "source", dev=disk.path)
    else:
        _sub(el, "source", file=disk.path)
    _sub(el, "target", dev=disk.target, bus=disk.bus_name)
    if disk.boot_order:
        _sub(el, "boot", order=str(disk.boot_order))
    if disk.serial:
        _sub(el, "serial", disk.serial)
    if disk.device == "cdrom":
        _sub(el, "readonly")
    return el


def disk_xml(disk: Disk) -> str:
    """One <disk> element alone, as attachDeviceFlags and detachDeviceFlags take it."""
    holder = ET.Element("devices")
    return _to_string(_disk(holder, disk))


def _interface(devices: ET.Element, vif: Interface) -> None:
    # A bridge the network service made: plug the tap into it. Without one, libvirt just
    # creates the tap (type 'ethernet') and the network service wires it up.
    el = _sub(devices, "interface", type="bridge" if vif.bridge else "ethernet")
    _sub(el, "mac", address=vif.mac)
    if vif.bridge:
        _sub(el, "source", bridge=vif.bridge)
    _sub(el, "target", dev=vif.tap)
    _sub(el, "model", type="virtio")
    _sub(el, "mtu", size=str(vif.mtu))


def console_socket(spec: DomainSpec) -> str:
    """Where a real guest's serial console listens for the console proxy: a unix socket
    beside its console log. "" when there is no log (the test driver) or when the path is
    too long for a socket address: the guest then keeps a pty, and only the log."""
    if not spec.console_log:
        return ""
    path = spec.console_log.rpartition("/")[0] + "/" + CONSOLE_SOCKET
    return path if len(path.encode()) <= _MAX_SOCKET_PATH else ""


def _consoles(devices: ET.Element, spec: DomainSpec) -> None:
    socket = console_socket(spec)
    # A listening socket (libvirt makes it and hands it to QEMU): the console proxy connects
    # to it, one client at a time, and the guest never waits for one. Either way virtlogd
    # copies everything the guest prints into the log file, appending across stop/start.
    # On the host, `socat - UNIX-CONNECT:<instance dir>/console.sock` attaches to it.
    serial = _sub(devices, "serial", type="unix" if socket else "pty")
    if socket:
        _sub(serial, "source", mode="bind", path=socket)
    if spec.console_log:
        _sub(serial, "log", file=spec.console_log, append="on")
    _sub(serial, "target", port="0")
    console = _sub(devices, "console", type="unix" if socket else "pty")
    if socket:
        _sub(console, "source", mode="bind", path=socket)
    _sub(console, "target", type="serial", port="0")
    if spec.domain_type != "test":
        # The guest's screen for noVNC, on loopback only: the proxy is the way in. libvirt
        # picks a free port at every start (the live XML names it).
        graphics = _sub(devices, "graphics", type="vnc", autoport="yes", listen=VNC_LISTEN)
        _sub(graphics, "listen", type="address", address=VNC_LISTEN)


def domain_xml(spec: DomainSpec) -> str:
    return _to_string(domain_tree(spec))


def domain_tree(spec: DomainSpec) -> ET.Element:
    dom = ET.Element("domain", type=spec.domain_type)
    _sub(dom, "name", spec.name)
    _sub(dom, "uuid", spec.instance_uuid)
    # libvirt refuses a title with line breaks; the metadata keeps the name exactly.
    _sub(dom, "title", " ".join(spec.display_name.splitlines()))
    _metadata(dom, spec)
    _sub(dom, "memory", str(spec.memory_mb), unit="MiB")
    _sub(dom, "currentMemory", str(spec.memory_mb), unit="MiB")
    _sub(dom, "vcpu", str(spec.vcpus))
    _sysinfo(dom, spec)
    os_el = _sub(dom, "os")
    _sub(os_el, "type", "hvm")
    if spec.kernel:
        _sub(os_el, "kernel", spec.kernel)
        if spec.initrd:
            _sub(os_el, "initrd", spec.initrd)
        if spec.cmdline:
            _sub(os_el, "cmdline", spec.cmdline)
    elif not any(d.boot_order for d in spec.disks):   # libvirt takes one way of saying it, not both
        _sub(os_el, "boot", dev="hd")
    _sub(os_el, "smbios", mode="sysinfo")
    features = _sub(dom, "features")
    _sub(features, "acpi")  # lets a guest's poweroff end the domain
    _sub(features, "apic")
    _sub(dom, "clock", offset="utc")
    _sub(dom, "on_poweroff", "destroy")
    _sub(dom, "on_reboot", "restart")
    _sub(dom, "on_crash", "destroy")
    devices = _sub(dom, "devices")
    if any(d.bus_name == "scsi" for d in spec.disks):
        _sub(devices, "controller", type="scsi", index="0", model="virtio-scsi")
    for disk in spec.disks:
        _disk(devices, disk)
    for vif in spec.interfaces:
        _interface(devices, vif)
    _consoles(devices, spec)
    return dom
