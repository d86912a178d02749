"""What the image API's handlers are given: the pool, the image files, and the URL clients reach us at."""

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
