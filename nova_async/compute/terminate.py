"""Taking an instance off this host: the guest, its disks, its ports and its allocations;
and, once the guest is gone, its volumes (volumes.release: detached, or deleted when they
were to go with it).

`teardown` is the one clean-up both paths use: a failed build (which then leaves the
instance in ERROR) and a terminate (which then marks the row deleted). Every step
tolerates "already gone", so it can run again after a crash, after a half-finished build,
or twice in a row. A real guest's bridges go last, once no other instance here needs them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog

from nova_async.common import errors
from nova_async.compute.disks import remove_instance_dir
from nova_async.compute.domain_xml import domain_name
from nova_async.compute.host import Host, describe
from nova_async.compute.volumes import release
from nova_async.db import instances
from nova_async.db.instances import Q as IQ
from nova_async.db.queries import queries

log = structlog.get_logger("compute.terminate")
Q = queries("compute")


async def teardown(host: Host, instance_uuid: str, *, keep_allocations: bool = False) -> list[str]:
    """Remove everything this host holds for the instance; returns what could not be removed.
    A reschedule keeps the allocations: the conductor moves them to the next host."""
    steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("guest", lambda: host.hypervisor.remove(domain_name(instance_uuid))),
        ("disks", lambda: remove_instance_dir(host.instances_root, instance_uuid)),
        ("ports", lambda: host.network.deallocate(instance_uuid)),
    ]
    if not keep_allocations:
        steps.append(("allocations", lambda: host.placement.delete_allocations(instance_uuid)))
        steps.append(("allocations", lambda: _delete_migration_allocations(host, instance_uuid)))
    if host.real_guests:
        steps.append(("bridges", lambda: _remove_unused_bridges(host, instance_uuid)))
    problems = []
    for what, step in steps:
        try:
            await step()
        except Exception as exc:
            log.warning("clean-up step failed", step=what, error=describe(exc))
            problems.append(f"{what}: {describe(exc)}")
    return problems


async def _delete_migration_allocations(host: Host, instance_uuid: str) -> None:
    """A resize not yet confirmed holds the old flavor under its migration's uuid (resize.py)."""
    for row in await host.pool.fetch(queries("migrations").migration_consumers, instance_uuid):
        await host.placement.delete_allocations(str(row["uuid"]))


async def _remove_unused_bridges(host: Host, instance_uuid: str) -> None:
    row = await host.pool.fetchrow(IQ.get_any, instance_uuid)
    bridges = {vif.get("bridge") for vif in (row["network_info"] if row else [])} - {None, ""}
    for bridge in sorted(bridges):
        await host.bridges.remove_unused(bridge, lambda b=bridge: host.pool.fetchval(
            Q.bridge_in_use, host.name, instance_uuid, b))


async def terminate(host: Host, instance_uuid: str, request_id: str) -> None:
    row = await host.pool.fetchrow(IQ.get_any, instance_uuid)
    live = row is not None and row["deleted_at"] is None
    if live and row["host"] not in (None, host.name):
        log.warning("terminate ignored: the instance lives on another host", instance_host=row["host"])
        return
    await host.notify("instance.delete.start", instance_uuid, request_id=request_id)
    try:
        async with instances.event(host.pool, instance_uuid, request_id, "compute_terminate_instance",
                                   host.name):
            # Nova's instance.shutdown.* are the guest and what it used on the host going.
            await host.notify("instance.shutdown.start", instance_uuid, request_id=request_id)
            problems = await teardown(host, instance_uuid)
            if problems:
                raise errors.NovaAsyncError("could not remove " + "; ".join(problems))
            await host.notify("instance.shutdown.end", instance_uuid, request_id=request_id)
            # Only now: a volume is not let go while a guest could still write to it.
            await release(host, instance_uuid)
            await instances.mark_deleted(host.pool, host.api_pool, instance_uuid)
    except Exception as exc:
        log.error("terminate failed", error=describe(exc))
        # As in Nova: ERROR with the reason; deleting again retries every step.
        if live:
            await instances.set_error(host.pool, instance_uuid,
                                      f"Failed to terminate instance: {describe(exc)}", host=host.name)
        await host.notify("instance.delete.error", instance_uuid, reason=describe(exc))
    else:
        log.info("instance terminated")
        await host.notify("instance.delete.end", instance_uuid, request_id=request_id)
        await host.hooks.post("post_delete", row)
    await instances.finish_action(host.pool, instance_uuid, request_id)
