"""The demo guest as images: a kernel (aki), a ramdisk (ari) and a machine image whose
`kernel_id` / `ramdisk_id` properties name them, which is how Nova models direct kernel boot.

The supervisor calls `register` once per database, on its first start with the demo guest
built (`make guest-image`), so a fresh install has something that boots. The images are
public and belong to no project, like images an operator uploads for everyone. Their ids
are fixed, so a start that was cut off half-way finishes the same three images instead of
making a second set (migration 0048 recognises the machine image by that id). The machine
image's own disk is 1 MiB of zeros: the guest lives in its ramdisk and only reads its config
drive, which its `img_config_drive=mandatory` property makes every server of it get.
The kernel and ramdisk were hashed when the guest was built (compute/guest_image.py): they are
adopted as the cloud image's files are (cloud.py), not uploaded and hashed again for every
fresh database (~0.3 s of CPU for the 66 MB kernel, at each e2e test's first start).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import structlog

from nova_async.common import errors
from nova_async.common.context import admin_context
from nova_async.db.pool import Pool
from nova_async.image import store
from nova_async.image.blobs import BuiltFile, ImageFiles

log = structlog.get_logger("image.demo")

NAME = "nova-async-demo"
_NAMESPACE = uuid.UUID("6f0b7c52-4a0e-4f51-9a3c-2f7d1e0c9b11")
_ROOT_DISK = b"\0" * (1 << 20)


def image_id(name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, name))


async def _bytes(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _ensure(pool: Pool, files: ImageFiles, name: str, disk_format: str,
                  data: BuiltFile | bytes, properties: dict[str, str]) -> str:
    ctx = admin_context()
    core = {"id": image_id(name), "name": name, "disk_format": disk_format,
            "container_format": "bare" if disk_format == "raw" else disk_format, "visibility": "public"}
    try:
        row = await store.create(pool, ctx, core, properties)
    except errors.Conflict:
        row = await store.get(pool, ctx, core["id"])
    if row["status"] == "queued" and isinstance(data, bytes):
        row = await store.upload(pool, ctx, core["id"], _bytes(data), files)
    elif row["status"] == "queued":
        row = await store.adopt(pool, ctx, core["id"], data.path, data.written(), files)
    return str(row["id"])


async def register(pool: Pool, files: ImageFiles, kernel: BuiltFile, initrd: BuiltFile) -> str:
    """Make the three images exist and hold their data; returns the machine image's id."""
    kernel_id = await _ensure(pool, files, f"{NAME}-kernel", "aki", kernel, {})
    ramdisk_id = await _ensure(pool, files, f"{NAME}-ramdisk", "ari", initrd, {})
    # The guest learns who it is only from its config drive: every server of it needs one.
    machine_id = await _ensure(pool, files, NAME, "raw", _ROOT_DISK,
                               {"kernel_id": kernel_id, "ramdisk_id": ramdisk_id,
                                "img_config_drive": "mandatory"})
    log.info("registered the demo guest", image=NAME, image_id=machine_id)
    return machine_id
