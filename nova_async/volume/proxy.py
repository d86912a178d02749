"""Nova's deprecated os-volumes and os-snapshots proxy, as the volume service answers it:
the same domain code as Cinder's /volumes and /snapshots, run with the caller's context, so
the proxy shows and changes exactly what Cinder's API would for that caller (a project's own
volumes, an admin's own project's in a list, as Nova asks Cinder without all_tenants).

The answer carries the fields Nova's view reads from Cinder's (ProxiedVolume,
ProxiedSnapshot), not Cinder's view itself: that view changes with Cinder's microversions,
Nova's does not. The compute API renders them (api/volume_proxy.py)."""

from __future__ import annotations

import asyncpg

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.volume import messages as m
from nova_async.volume import snapshots, views, volumes
from nova_async.volume.state import VolumeApi

# The attachments Cinder's view lists (views.volume): a volume being detached still is.
SHOWN_ATTACHMENTS = ("attached", "detaching")


async def answer(api: VolumeApi, ctx: RequestContext, msg: m.VolumeProxyRequest) -> m.VolumeProxyReply:
    if msg.kind == "volume":
        return await _volumes(api, ctx, msg)
    if msg.kind == "snapshot":
        return await _snapshots(api, ctx, msg)
    raise errors.InvalidInput(f"Unknown volume proxy request {msg.kind!r}.")


async def _volumes(api: VolumeApi, ctx: RequestContext, msg: m.VolumeProxyRequest) -> m.VolumeProxyReply:
    if msg.action == "list":
        rows = await volumes.find(api, ctx, all_projects=False, name=None, status=None, metadata=None,
                                  bootable=None)
        return m.VolumeProxyReply(volumes=await _shown(api, _newest_first(rows)))
    if msg.action == "show":
        return m.VolumeProxyReply(volumes=await _shown(api, [await volumes.get(api, ctx, msg.id)]))
    if msg.action == "create":
        return m.VolumeProxyReply(volumes=await _shown(api, [await volumes.create(api, ctx, msg.body)]))
    if msg.action == "delete":
        await volumes.delete(api, ctx, msg.id, cascade=False)
        return m.VolumeProxyReply()
    raise errors.InvalidInput(f"Unknown volume proxy request {msg.action!r}.")


async def _snapshots(api: VolumeApi, ctx: RequestContext, msg: m.VolumeProxyRequest) -> m.VolumeProxyReply:
    if msg.action == "list":
        rows = await snapshots.find(api, ctx, all_projects=False, name=None, status=None, volume_id=None,
                                    metadata=None)
        return m.VolumeProxyReply(snapshots=[_snapshot(r) for r in _newest_first(rows)])
    if msg.action == "show":
        return m.VolumeProxyReply(snapshots=[_snapshot(await snapshots.get(api, ctx, msg.id))])
    if msg.action == "create":
        return m.VolumeProxyReply(snapshots=[_snapshot(await snapshots.create(api, ctx, msg.body))])
    if msg.action == "delete":
        await snapshots.delete(api, ctx, msg.id)
        return m.VolumeProxyReply()
    raise errors.InvalidInput(f"Unknown snapshot proxy request {msg.action!r}.")


def _newest_first(rows: list[asyncpg.Record]) -> list[asyncpg.Record]:
    """Cinder's default order: created_at, then id, both descending."""
    return sorted(rows, key=lambda r: (r["created_at"], str(r["id"])), reverse=True)


async def _shown(api: VolumeApi, rows: list[asyncpg.Record]) -> list[m.ProxiedVolume]:
    attached = await volumes.attachments(api, rows)
    return [m.ProxiedVolume(
        id=str(r["id"]), status=r["status"], size=r["size"], availability_zone=r["availability_zone"],
        created_at=views.ts(r["created_at"]) or "", name=r["name"], description=r["description"],
        volume_type=r["volume_type"],
        snapshot_id=str(r["snapshot_id"]) if r["snapshot_id"] else None,
        metadata={k: str(v) for k, v in r["metadata"].items()},
        attachments=[m.ProxiedAttachment(server_id=str(a["instance_uuid"]), device=a["mountpoint"])
                     for a in attached.get(str(r["id"]), []) if a["status"] in SHOWN_ATTACHMENTS])
        for r in rows]


def _snapshot(row: asyncpg.Record) -> m.ProxiedSnapshot:
    return m.ProxiedSnapshot(id=str(row["id"]), volume_id=str(row["volume_id"]), status=row["status"],
                             size=row["size"], created_at=views.ts(row["created_at"]) or "", name=row["name"],
                             description=row["description"])
