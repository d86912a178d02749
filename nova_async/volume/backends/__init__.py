"""Where volume bits live. `open_backend(settings)` gives the configured one."""

from __future__ import annotations

from nova_async.config import Settings
from nova_async.volume.backends.base import Backend, BackendError, Connection


def open_backend(settings: Settings) -> Backend:
    kind = settings.volume.backend
    if kind == "file":
        from nova_async.volume.backends.files import FileBackend
        root = settings.volume.dir or str(settings.state_path / "volumes")
        return FileBackend(root)
    if kind == "lvm-thin":
        from nova_async.volume.backends.lvm_thin import LvmThinBackend
        return LvmThinBackend(settings.volume.volume_group, settings.volume.thin_pool,
                              settings.volume.thin_pool_size)
    raise BackendError(f"[volume] backend {kind!r} is not one of file, lvm-thin")


__all__ = ["Backend", "BackendError", "Connection", "open_backend"]
