"""What the image API's handlers are given: the pool, the image files, the URL clients reach
us at, the role's background work (import tasks) and the largest image it takes."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from nova_async.common.work import Work
from nova_async.db.pool import Pool
from nova_async.image.blobs import ImageFiles


@dataclass(frozen=True)
class ImageApi:
    pool: Pool
    files: ImageFiles
    base_url: str
    work: Work
    size_cap: int


STATE = web.AppKey("image_api", ImageApi)
