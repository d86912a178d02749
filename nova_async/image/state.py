"""The Glance v2 HTTP API: one handler module per resource, sharing the state below."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from nova_async.db.pool import Pool
from nova_async.image.blobs import ImageFiles


@dataclass(frozen=True)
class ImageApi:
    pool: Pool
    files: ImageFiles
    base_url: str


STATE = web.AppKey("image_api", ImageApi)
