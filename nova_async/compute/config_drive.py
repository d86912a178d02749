"""The config drive: an ISO 9660 volume labelled `config-2` that tells a guest who it is.

Guests learn their identity, network and user data from this drive (or from the metadata
service, dataplane/metadata.py), laid out the way Nova's `ConfigDriveBuilder` lays it out so
cloud-init and our demo guest's init read it unchanged:

    openstack/latest/meta_data.json      uuid, name, hostname, project, keys, AZ
    openstack/latest/network_data.json   links (NICs by MAC), networks (static IPs), services
    openstack/latest/user_data           the user's data, raw bytes (the API's base64 decoded)

The tree is built by a pure function (`drive_tree`) from the documents that
common/instance_metadata.py builds for the metadata service too, so what the guest will see
is testable without genisoimage. `write_iso` then writes the files into a private temporary
directory and runs genisoimage with an argv list: the server's name and user data are file
contents, never command-line text, and no shell is involved at any point.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from nova_async.common import errors, process
# What the drive says is built in common/instance_metadata.py, which the metadata service
# shares; the names stay importable from here.
from nova_async.common.instance_metadata import InstanceFacts, Nic, hostname_for, meta_data, network_data

__all__ = ["DriveContent", "InstanceFacts", "Nic", "build_config_drive", "drive_tree", "hostname_for",
           "meta_data", "network_data", "write_iso"]

DriveContent = InstanceFacts

LABEL = "config-2"
LATEST = "openstack/latest"
MAX_USER_DATA = 65535      # Nova's limit on decoded user data


def drive_tree(c: DriveContent) -> dict[str, bytes]:
    """Relative path → file content, exactly what the ISO will hold."""
    if c.user_data is not None and len(c.user_data) > MAX_USER_DATA:
        raise errors.InvalidInput(f"user data is {len(c.user_data)} bytes; at most {MAX_USER_DATA} fit")
    # ensure_ascii keeps the files 7-bit clean; the guest's sed parser then never meets
    # multi-byte sequences, and any quote in a name arrives escaped as \".
    tree = {f"{LATEST}/meta_data.json": json.dumps(meta_data(c)).encode(),
            f"{LATEST}/network_data.json": json.dumps(network_data(c.nics)).encode()}
    if c.user_data is not None:
        tree[f"{LATEST}/user_data"] = bytes(c.user_data)
    return tree


def _genisoimage_argv(source: Path, iso: Path) -> list[str]:
    # Nova's own flags: -r (Rock Ridge with sane owners and modes), -J (Joliet), relaxed
    # ISO 9660 names so "meta_data.json" survives for readers without Rock Ridge.
    return ["genisoimage", "-o", str(iso), "-ldots", "-allow-lowercase", "-allow-multidot", "-l",
            "-publisher", "nova-async", "-quiet", "-J", "-r", "-V", LABEL, str(source)]


async def write_iso(tree: dict[str, bytes], iso: Path, timeout: float = 60) -> Path:
    """Write the tree as a config-2 ISO at `iso` (atomically: a reader never sees half of it)."""
    iso.parent.mkdir(parents=True, exist_ok=True)
    part = iso.with_name(f".{iso.name}.part")
    with tempfile.TemporaryDirectory(prefix="config-drive-") as tmp:
        root = Path(tmp)
        for rel, content in tree.items():
            path = (root / rel).resolve()
            if not path.is_relative_to(root.resolve()):
                raise errors.InvalidInput(f"config drive path {rel!r} leaves the drive")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        done = await process.run(*_genisoimage_argv(root, part), timeout=timeout)
    if done.returncode != 0:
        part.unlink(missing_ok=True)
        raise errors.NovaAsyncError(f"genisoimage failed ({done.returncode}): {done.output.strip()[-400:]}")
    os.replace(part, iso)
    return iso


async def build_config_drive(content: DriveContent, iso: Path) -> Path:
    return await write_iso(drive_tree(content), iso)
