"""The image role: the Glance v2 API on /image, and image look-ups for other roles on the
bus (compute asks where an image's bits are; the API asks whether a project may boot it)."""

from __future__ import annotations


from aiohttp import web

from nova_async.common.context import RequestContext
from nova_async.image import http, store, views
from nova_async.image import messages as m
from nova_async.image.api import ImageApi
from nova_async.image.blobs import ImageFiles
from nova_async.image.client import TOPIC
from nova_async.role import Deps, Role


class ImageRole(Role):
    name = "image"
    topic = TOPIC

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.files = ImageFiles(self.settings.state_path / "images")
        self.handlers = {
            m.GetImage: self._get_image,
        }

    def http(self) -> tuple[str, web.Application]:
        app = http.build_app(ImageApi(pool=self.pool, files=self.files, base_url=self.settings.base_url))
        app.on_startup.append(self._recover)
        return "/image", app

    async def _recover(self, _app: web.Application) -> None:
        # Before the first request: an upload a restart interrupted can never finish.
        await store.reset_interrupted_uploads(self.pool, self.files)



    async def _get_image(self, msg: m.GetImage, ctx: RequestContext) -> m.ImageInfo:
        caller = RequestContext(user_id="", project_id=msg.project_id,
                                roles=("admin",) if msg.is_admin else ())
        row = await store.get(self.pool, caller, msg.image_id)
        return views.image_info(row, store.file_path(row, self.files))
