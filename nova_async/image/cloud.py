"""The Debian cloud image as images: `debian-cloud` (qcow2) with its kernel (aki) and ramdisk
(ari), the AMI-style triple Nova boots by direct kernel boot (compute/cloud_image.py says why).

Registered like the demo guest (demo.py): once per database, public, under fixed ids so an
interrupted start finishes the same images. Its files were built and hashed on this
machine, so they are adopted rather than uploaded: hard-linked into the image store when it
shares the file system with the build cache (else copied), with the size and hashes the
build recorded. Every fresh database (each e2e test's service is one) then costs no copy of
a 140 MiB disk and no hashing of it.

Its properties say what a user needs to log in and the scheduler to place it: Glance's
`os_distro` / `os_version`, the login user cloud-init makes (`os_admin_user`, and
`default_user` for those who look for that name), and `min_disk` / `min_ram`.
"""

from __future__ import annotations

import structlog

from nova_async.common import errors
from nova_async.common.context import admin_context
from nova_async.db.pool import Pool
from nova_async.image import store
from nova_async.image.blobs import BuiltFile, ImageFiles
from nova_async.image.demo import image_id

log = structlog.get_logger("image.cloud")

NAME = "debian-cloud"


async def _ensure(pool: Pool, files: ImageFiles, name: str, disk_format: str, data: BuiltFile,
                  properties: dict[str, str], min_disk: int = 0, min_ram: int = 0) -> str:
    ctx = admin_context()
    core = {"id": image_id(name), "name": name, "disk_format": disk_format,
            "container_format": "bare" if disk_format == "qcow2" else disk_format, "visibility": "public",
            "min_disk": min_disk, "min_ram": min_ram}
    try:
        row = await store.create(pool, ctx, core, properties)
    except errors.Conflict:
        row = await store.get(pool, ctx, core["id"])
    if row["status"] == "queued":
        row = await store.adopt(pool, ctx, core["id"], data.path, data.written(), files)
    return str(row["id"])


async def register(pool: Pool, files: ImageFiles, kernel: BuiltFile, ramdisk: BuiltFile, disk: BuiltFile,
                   properties: dict[str, str], min_disk: int, min_ram: int) -> str:
    """Make the three images exist and hold their data; returns the machine image's id."""
    kernel_id = await _ensure(pool, files, f"{NAME}-kernel", "aki", kernel, {})
    ramdisk_id = await _ensure(pool, files, f"{NAME}-ramdisk", "ari", ramdisk, {})
    machine_id = await _ensure(pool, files, NAME, "qcow2", disk,
                               {**properties, "kernel_id": kernel_id, "ramdisk_id": ramdisk_id},
                               min_disk=min_disk, min_ram=min_ram)
    log.info("registered the Debian cloud image", image=NAME, image_id=machine_id)
    return machine_id
