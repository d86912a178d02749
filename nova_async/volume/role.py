"""The volume role (see the package docstring)."""

from __future__ import annotations

from aiohttp import web

from nova_async.role import Deps, Role
from nova_async.volume.client import TOPIC


class VolumeRole(Role):
    name = "volume"
    topic = TOPIC

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.handlers = {}

    def http(self) -> tuple[str, web.Application] | None:
        return None
