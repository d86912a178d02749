"""The volume role (see the package docstring): the Cinder v3 subset on /volume, and the
volume messages other roles send on the bus (service.py wires the bus handlers below).

At start, before the API serves (aiohttp's on_startup, which runs before the port is
opened), the backend is opened and set up and every change a stop interrupted is finished
or undone (lifecycle.recover): those of this process's previous run, and of any other that
died; while it runs, one copy of the role (when several share the database) looks every
DEAD_WORK_EVERY seconds for the changes of a copy that died. Background work (the backend's
half of a create, delete, extend or snapshot) runs in `work`, which the role drains when it
stops."""

from __future__ import annotations

import asyncio

import structlog
from aiohttp import web

from nova_async.common import errors, lease
from nova_async.common.context import RequestContext
from nova_async.db.queries import queries
from nova_async.role import Deps, Role
from nova_async.volume import attachments, backends, lifecycle, proxy, routes, snapshots, volumes
from nova_async.volume import messages as m
from nova_async.volume.client import TOPIC
from nova_async.volume.state import VolumeApi
from nova_async.common.work import Work

Q = queries("volume")
log = structlog.get_logger("volume")


DEAD_WORK_EVERY = 15.0   # seconds between looks for the changes of dead processes


class VolumeRole(Role):
    name = "volume"
    topic = TOPIC

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.work = Work("volume")
        self.api = VolumeApi(pool=self.pool, settings=self.settings, bus=self.bus, work=self.work,
                             worker=deps.locks.incarnation if deps.locks is not None else None)
        # run() and the app's on_startup both start the role (whichever comes first; the
        # service schedules run() before it sets up HTTP): the lock makes that happen once.
        self._starting = asyncio.Lock()
        self._started = False
        self.handlers = {
            m.GetVolume: self._get_volume,
            m.CreateVolume: self._create_volume,
            m.DeleteVolume: self._delete_volume,
            m.SnapshotVolume: self._snapshot_volume,
            m.VolumeProxyRequest: self._proxy_request,
        }
        self.handlers.update(attachments.bus_handlers(self))

    def http(self) -> tuple[str, web.Application]:
        app = routes.build_app(self.api)
        app.on_startup.append(self._start)
        return "/volume", app

    async def _start(self, _app: web.Application | None = None) -> None:
        async with self._starting:
            if self._started:
                return
            backend = backends.open_backend(self.settings)
            await backend.setup()
            self.api.backend = backend
            await lifecycle.recover(self.api, self.deps.locks, at_start=True)
            self._started = True

    async def run(self) -> None:
        # The work's group is open before the HTTP app can serve: the service starts this
        # task before it sets up HTTP, whose start-up (`_start`) waits on the database.
        async with self.work:
            await self._start()  # when no HTTP app was built (a process without the API port)
            async with asyncio.TaskGroup() as tg:
                tg.create_task(attachments.keep_reserved_clean(self), name="volume:reserved-attachments")
                if self.deps.locks is not None:   # else one process alone: its start is enough
                    tg.create_task(lease.periodic(self.deps.locks, "volume:dead-work", self.recover_dead_work,
                                                  seconds=DEAD_WORK_EVERY, stopping=self.stopping, at_once=False),
                                   name="volume:dead-work")
                await super().run()

    async def recover_dead_work(self) -> None:
        """The volume and snapshot changes of copies that died end (lifecycle.recover)."""
        await lifecycle.recover(self.api, self.deps.locks, at_start=False)

    # --- the bus ----------------------------------------------------------------------

    async def _get_volume(self, msg: m.GetVolume, ctx: RequestContext) -> m.VolumeInfo:
        caller = RequestContext(user_id="", project_id=msg.project_id, roles=("admin",) if msg.is_admin else ())
        return info(await volumes.get(self.api, caller, msg.volume_id))

    async def _create_volume(self, msg: m.CreateVolume, ctx: RequestContext) -> m.VolumeInfo:
        """A volume for a server being built, answered once it is available; one that fails
        is deleted again and its error raised."""
        caller = RequestContext(user_id=msg.user_id, project_id=msg.project_id, roles=("member",),
                                request_id=ctx.request_id)
        req = {"size": msg.size or None, "name": msg.name or None, "availability_zone": msg.availability_zone}
        if msg.source_type == "image":
            req["imageRef"] = msg.source_id
        elif msg.source_type == "snapshot":
            req["snapshot_id"] = msg.source_id
        try:
            row = await volumes.create(self.api, caller, req, background=False)
        except errors.OverQuota as exc:
            raise errors.Conflict(exc.message, code="over_quota") from None
        return info(row)

    async def _snapshot_volume(self, msg: m.SnapshotVolume, ctx: RequestContext) -> m.SnapshotInfo:
        caller = RequestContext(user_id=msg.user_id, project_id=msg.project_id, roles=("member",),
                                request_id=ctx.request_id)
        try:
            row = await snapshots.create(self.api, caller, {"volume_id": msg.volume_id, "name": msg.name or None,
                                                            "description": msg.description or None, "force": True})
        except errors.OverQuota as exc:
            raise errors.Conflict(exc.message, code="over_quota") from None
        return m.SnapshotInfo(id=str(row["id"]), volume_id=str(row["volume_id"]), status=row["status"],
                              size=row["size"])

    async def _delete_volume(self, msg: m.DeleteVolume, ctx: RequestContext) -> None:
        row = await self.pool.fetchrow(Q.get_volume, volumes._uuid(msg.volume_id)) if volumes._uuid(
            msg.volume_id) else None
        if row is None or row["status"] == "deleting":
            return
        await volumes.delete(self.api, RequestContext(user_id="", project_id="", roles=("admin",)),
                             msg.volume_id, cascade=False, background=False)

    async def _proxy_request(self, msg: m.VolumeProxyRequest, ctx: RequestContext) -> m.VolumeProxyReply:
        return await proxy.answer(self.api, ctx, msg)


def info(row) -> m.VolumeInfo:
    return m.VolumeInfo(id=str(row["id"]), project_id=row["project_id"], name=row["name"] or "", size=row["size"],
                        status=row["status"], bootable=row["bootable"], multiattach=row["multiattach"],
                        availability_zone=row["availability_zone"],
                        image_id=str(row["image_id"]) if row["image_id"] else "",
                        image_metadata={k: str(v) for k, v in row["image_metadata"].items()})
