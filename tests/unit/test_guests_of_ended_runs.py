"""The suite's own clean-up of guests an ended run left behind (tests/conftest.py), on
libvirt's test driver: only a domain whose files are all in test scratch directories that are
gone is removed."""

from __future__ import annotations

import libvirt

from tests.conftest import SCRATCH_PREFIX, remove_guests_of_ended_runs


def domain(conn: libvirt.virConnect, name: str, *files: str) -> None:
    disks = "".join(f"<disk type='file' device='disk'><source file='{f}'/><target dev='vd{chr(97 + i)}'/></disk>"
                    for i, f in enumerate(files))
    conn.defineXML(f"<domain type='test'><name>{name}</name><memory>65536</memory><os><type>hvm</type></os>"
                   f"<devices>{disks}</devices></domain>")


def test_only_guests_of_gone_scratch_directories_are_removed(tmp_path):
    live = tmp_path / f"{SCRATCH_PREFIX}live"
    live.mkdir()
    gone = tmp_path / f"{SCRATCH_PREFIX}gone"
    conn = libvirt.open("test:///default")   # kept open: the driver's state lives while one is
    try:
        domain(conn, "left-behind", f"{gone}/guests/instances/a/disk", f"{gone}/guests/instances/a/disk.config")
        domain(conn, "running-now", f"{live}/guests/instances/b/disk")
        domain(conn, "a-users", "/var/lib/libvirt/images/c.qcow2")
        domain(conn, "straddling", f"{gone}/x/disk", f"{live}/y/disk")
        assert remove_guests_of_ended_runs("test:///default") == ["left-behind"]
        names = {d.name() for d in conn.listAllDomains()}
        assert {"running-now", "a-users", "straddling"} <= names and "left-behind" not in names
    finally:
        for name in ("running-now", "a-users", "straddling"):
            conn.lookupByName(name).undefine()
        conn.close()
