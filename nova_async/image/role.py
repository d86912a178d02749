"""The image role: the Glance v2 API on /image, and image look-ups for other roles on the
bus (compute asks where an image's bits are; the API asks whether a project may boot it;
a server snapshot is made, filled from a file compute wrote, or deleted when it failed).
Its background work, the import tasks of /v2/tasks, belongs to `self.work`, which `run()`
holds open for the role's lifetime.

Several copies of the role may share one database and one image directory (several nodes):
an upload or an import records the process doing it (its incarnation, db/session_locks.py),
and recovery takes only what a dead process left, at start (this process's previous run
among them) and every DEAD_WORK_EVERY seconds in one copy (another copy killed)."""

from __future__ import annotations


import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from nova_async.common import errors, lease
from nova_async.common.context import RequestContext
from nova_async.common.work import Work
from nova_async.image import routes, store, tasks, views
from nova_async.image import messages as m
from nova_async.image.blobs import ImageFiles
from nova_async.image.client import TOPIC
from nova_async.image.state import ImageApi
from nova_async.role import Deps, Role


DEAD_WORK_EVERY = 15.0   # seconds between looks for the uploads and imports of dead processes


class ImageRole(Role):
    name = "image"
    topic = TOPIC

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        locks = deps.locks
        self.files = ImageFiles(self.settings.state_path / "images",
                                worker=locks.incarnation if locks is not None else None)
        self.work = Work("image")
        self.handlers = {
            m.GetImage: self._get_image,
            m.CreateImage: self._create_image,
            m.UploadImageFile: self._upload_file,
            m.UploadNoData: self._upload_no_data,
            m.DeleteImage: self._delete_image,
            m.ListImages: self._list_images,
            m.SetImageProperties: self._set_properties,
            m.DeleteImageAs: self._delete_image_as,
        }

    def http(self) -> tuple[str, web.Application]:
        app = routes.build_app(ImageApi(pool=self.pool, files=self.files, base_url=self.settings.base_url,
                                        work=self.work, size_cap=self.settings.image.size_cap))
        app.on_startup.append(self._recover)
        return "/image", app

    async def _recover(self, _app: web.Application) -> None:
        # Before the first request: an upload a restart interrupted can never finish, and
        # neither can the import task that was doing it.
        await self.recover_dead_work(at_start=True)

    async def recover_dead_work(self, *, at_start: bool = False) -> None:
        """The uploads and imports of dead processes end (the uploads first, so that only an
        image whose data is whole survives its task's failure); at start, those no process
        recorded too."""
        await store.reset_interrupted_uploads(self.pool, self.files, self.deps.locks, at_start=at_start)
        await tasks.fail_unfinished(self.pool, self.files, self.deps.locks, at_start=at_start)

    async def run(self) -> None:
        # Entered before the HTTP app serves (the service starts this task first); leaving
        # it lets running imports finish within the drain's deadline, and a restart fails
        # those it cut off (_recover); another copy, the periodic job, when this one is killed.
        async with self.work:
            if self.deps.locks is None:   # one process alone: its start is enough
                await super().run()
                return
            async with asyncio.TaskGroup() as tg:
                tg.create_task(lease.periodic(self.deps.locks, "image:dead-work", self.recover_dead_work,
                                              seconds=DEAD_WORK_EVERY, stopping=self.stopping, at_once=False),
                               name="image:dead-work")
                await super().run()

    async def _get_image(self, msg: m.GetImage, ctx: RequestContext) -> m.ImageInfo:
        caller = RequestContext(user_id="", project_id=msg.project_id,
                                roles=("admin",) if msg.is_admin else ())
        row = await store.get(self.pool, caller, msg.image_id)
        return views.image_info(row, store.file_path(row, self.files))

    # Server snapshots (createImage): the API makes the image, compute uploads the file it
    # wrote on this machine, and deletes the image when the snapshot fails.
    _SYSTEM = RequestContext(user_id="", project_id="", roles=("admin",))

    async def _create_image(self, msg: m.CreateImage, ctx: RequestContext) -> m.ImageInfo:
        core = {"name": msg.name, "disk_format": msg.disk_format, "container_format": msg.container_format,
                "visibility": msg.visibility, "min_disk": msg.min_disk, "min_ram": msg.min_ram,
                "owner": msg.project_id}
        row = await store.create(self.pool, self._SYSTEM, core, dict(msg.properties))
        return views.image_info(row, "")

    async def _upload_file(self, msg: m.UploadImageFile, ctx: RequestContext) -> m.ImageInfo:
        row = await store.upload(self.pool, self._SYSTEM, msg.image_id, _read_file(msg.path), self.files)
        return views.image_info(row, store.file_path(row, self.files))

    async def _upload_no_data(self, msg: m.UploadNoData, ctx: RequestContext) -> m.ImageInfo:
        row = await store.upload(self.pool, self._SYSTEM, msg.image_id, _nothing(), self.files)
        return views.image_info(row, store.file_path(row, self.files))

    async def _delete_image(self, msg: m.DeleteImage, ctx: RequestContext) -> None:
        try:
            await store.delete(self.pool, self._SYSTEM, msg.image_id, self.files)
        except errors.NotFound:
            pass


    # The compute API's image proxy (microversions before 2.36), as the caller it names.

    async def _list_images(self, msg: m.ListImages, ctx: RequestContext) -> m.ImageList:
        rows = await store.list_for_compute(self.pool, _caller(msg), msg)
        return m.ImageList(images=[views.image_info(r, "") for r in rows])

    async def _set_properties(self, msg: m.SetImageProperties, ctx: RequestContext) -> m.ImageInfo:
        row = await store.set_properties(self.pool, _caller(msg), msg.image_id, msg.set, msg.remove, msg.replace)
        return views.image_info(row, "")

    async def _delete_image_as(self, msg: m.DeleteImageAs, ctx: RequestContext) -> None:
        await store.delete(self.pool, _caller(msg), msg.image_id, self.files)


def _caller(msg: m.ListImages | m.SetImageProperties | m.DeleteImageAs) -> RequestContext:
    return RequestContext(user_id="", project_id=msg.project_id, roles=("admin",) if msg.is_admin else ())


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""   # an async generator that yields nothing


async def _read_file(path: str, chunk: int = 4 * 1024 * 1024) -> AsyncIterator[bytes]:
    with open(path, "rb") as fh:
        while data := await asyncio.to_thread(fh.read, chunk):
            yield data
