"""Accepting a boot request, in the order create() reads: parse the body, resolve the
flavor, image, networks, key, hints and volumes it names, reserve the existing volumes it
boots from or attaches (boot_volumes.py), then under the project's quota lock decide how many
instances fit and write them with their block device mappings (cell database) and their
mappings (API database), and cast to the conductor. Nothing is written unless everything
checks out, and what a failed write may leave behind is taken out (`write_rows` says how,
and what backs it up; the volumes' reservations are given back); the 202 goes back before
any scheduling."""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg
import msgspec

from nova_async.api import boot_volumes, flavor_store, quotas, schemas
# the domain halves of os-keypairs and os-server-groups (their HTTP is in handlers/)
from nova_async.api import keypair_store as keypairs
from nova_async.api import server_group_store as server_groups
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.cells import Cell
from nova_async.db.lines import Batch, Sending
from nova_async.db.queries import queries
from nova_async.hooks import runner as hooks
from nova_async.image.messages import ImageInfo
from nova_async.network.messages import RequestedNetwork
from nova_async.scheduler.messages import Flavor, RequestSpec

GiB = 1024**3
NO_NETWORK = RequestedNetwork(network_id="none")  # the network service's "no NIC at all"
Q = queries("servers")
CQ = queries("cells")
IQ = queries("instances")
BQ = queries("block_devices")


@dataclass(frozen=True)
class Accepted:
    uuids: list[str]
    reservation_id: str
    admin_pass: str


async def create(state: ApiState, ctx: RequestContext, body: dict[str, Any], version) -> Accepted:
    """Accept a boot request: 202 material once its instances are written, mapped and cast."""
    request = parse(body, version)
    found = await resolve(state, ctx, request)
    await state.hooks.pre("pre_create", lambda: planned(request, found, ctx))
    cell = state.cells.default  # where new instances are written; the conductor moves them if need be
    # Existing volumes are reserved for the instance before it is written (there is only one
    # instance then: check_volumes refuses more), and given back if it never is.
    preset = str(uuid.uuid4()) if any(d.source_type == "volume" for d in request.block_devices) else None
    reserved = await boot_volumes.reserve(state.volumes, ctx, request.block_devices, preset) if preset else {}
    try:
        uuids = await reserve_and_write(state, ctx, request, found, cell, preset, reserved)
    except BaseException:
        await boot_volumes.release(state.volumes, ctx, reserved)
        raise
    await state.conductor.schedule_and_build(uuids, ctx, cell.uuid)
    await state.hooks.post("post_create", lambda: cell.pool.fetch(IQ.get_many, uuids))
    return Accepted(uuids=uuids, reservation_id=request.reservation_id, admin_pass=request.admin_pass)


def planned(request: BootRequest, found: Resolved, ctx: RequestContext) -> Any:
    """What pre_create hooks are given: the request as the instance row it would become
    (no uuid yet: how many instances fit is decided under the quota lock, after them)."""
    return hooks.planned(uuid=None, display_name=request.name, project_id=ctx.project_id, user_id=ctx.user_id,
                         vm_state="building", task_state="scheduling", metadata=request.metadata,
                         flavor=msgspec.to_builtins(found.flavor), image_ref=found.spec.image_id,
                         key_name=request.key_name, availability_zone=request.availability_zone,
                         reservation_id=request.reservation_id, description=request.description,
                         access_ip_v4=request.access_ip_v4, access_ip_v6=request.access_ip_v6,
                         config_drive=request.config_drive, tags=request.tags, hostname=_hostname(request.name))


# -- 1. parse: what the body asks for, checked on its own (the JSON schema ran before)

@dataclass(frozen=True)
class BootRequest:
    name: str
    min_count: int
    max_count: int
    user_data: str | None
    image_ref: str
    flavor_ref: str
    networks: list[RequestedNetwork]
    key_name: str | None
    availability_zone: str | None
    metadata: dict[str, str]
    config_drive: str               # "True" or "", as Nova keeps it
    access_ip_v4: str | None
    access_ip_v6: str | None
    auto_disk_config: bool          # OS-DCF:diskConfig AUTO
    tags: list[str]
    description: str | None
    admin_pass: str
    hints: dict[str, Any]           # os:scheduler_hints
    security_groups: list[str]      # names or ids, as the body gives them
    reservation_id: str             # names the request's instances together
    block_devices: list[boot_volumes.BlockDevice]   # block_device_mapping_v2 as given
    # imageRef beside a root volume made from something else (a blank, a snapshot, a volume):
    # as in Nova, the server boots from the volume and the image only describes it.
    described_by: str = ""

    @property
    def volume_backed(self) -> bool:
        return boot_volumes.root_volume(self.block_devices) is not None


def parse(body: dict[str, Any], version) -> BootRequest:
    server = body["server"]
    min_count = _count(server.get("min_count", 1), "min_count")
    max_count = _count(server.get("max_count", min_count), "max_count")
    if min_count > max_count:
        raise errors.InvalidInput(f"min_count ({min_count}) must be <= max_count ({max_count}).")
    if max_count > 1000:
        raise errors.InvalidInput("max_count may be at most 1000.")
    user_data = _user_data(server)
    block_devices = boot_volumes.parse(server, version)
    image_ref = _image_ref(server, block_devices)
    root = boot_volumes.root_volume(block_devices)
    described_by = (server.get("imageRef") or "") if root is not None and root.source_type != "image" else ""
    networks = _requested_networks(server, version)
    return BootRequest(
        name=server["name"], min_count=min_count, max_count=max_count, user_data=user_data,
        image_ref=image_ref, flavor_ref=str(server["flavorRef"]), networks=networks,
        key_name=server.get("key_name"), availability_zone=server.get("availability_zone"),
        metadata=server.get("metadata", {}),
        config_drive="True" if str(server.get("config_drive")).lower() in schemas.TRUE_SPELLINGS else "",
        access_ip_v4=server.get("accessIPv4"), access_ip_v6=server.get("accessIPv6"),
        auto_disk_config=server.get("OS-DCF:diskConfig") == "AUTO",
        tags=list(dict.fromkeys(server.get("tags", []))) if version >= (2, 52) else [],
        description=server.get("description") if version >= (2, 19) else None,
        admin_pass=server.get("adminPass") or secrets.token_urlsafe(9),
        hints=body.get("os:scheduler_hints") or body.get("OS-SCH-HNT:scheduler_hints") or {},
        reservation_id=f"r-{secrets.token_hex(4)}", described_by=described_by,
        security_groups=list(dict.fromkeys(g["name"] for g in server.get("security_groups") or []))
        or ["default"], block_devices=block_devices)


def _count(value: Any, name: str) -> int:
    number = int(value)
    if number < 1:
        raise errors.InvalidInput(f"{name} must be at least 1.")
    return number


def _image_ref(server: dict[str, Any], devices: list[boot_volumes.BlockDevice]) -> str:
    """The image the instance runs from its host's disk; "" for a volume-backed server (its
    image, if any, is copied into its root volume: Nova keeps no image_ref for it)."""
    ref = server.get("imageRef") or ""
    root = boot_volumes.root_volume(devices)
    if root is not None:
        # An image volume made from another image than imageRef: two things to boot from. A
        # blank, snapshot or existing root volume with an imageRef boots from the volume
        # (BootRequest.described_by), as Nova does.
        if ref and root.source_type == "image" and parse_uuid(ref.rsplit("/", 1)[-1]) != root.uuid:
            raise errors.InvalidInput(boot_volumes.BOOT_SEQUENCE)
        return ""
    image = boot_volumes.boot_image(devices)
    if image is not None:
        if ref and parse_uuid(ref.rsplit("/", 1)[-1]) != image.uuid:
            raise errors.InvalidInput("imageRef and the boot block device mapping name different images.")
        ref = ref or image.uuid or ""
    if not ref:
        raise errors.InvalidInput("Missing imageRef attribute")
    return ref


def _requested_networks(server: dict[str, Any], version) -> list[RequestedNetwork]:
    networks = server.get("networks")
    if networks is None and version >= (2, 37):
        raise errors.InvalidInput("Invalid input: 'networks' is a required property from microversion 2.37.")
    if networks in (None, "auto"):
        return []
    if networks == "none":
        return [NO_NETWORK]
    requested = []
    for net in networks:
        if not net.get("uuid") and not net.get("port"):
            raise errors.InvalidInput("Each network needs a 'uuid' or a 'port'.")
        requested.append(RequestedNetwork(network_id=net.get("uuid"), port_id=net.get("port"),
                                          fixed_ip=net.get("fixed_ip")))
    return requested


def _user_data(server: dict[str, Any]) -> str | None:
    data = server.get("user_data")
    if data is None:
        return None
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise errors.InvalidInput("Invalid input for field/attribute user_data: it is not valid base64.") from None
    return data


# -- 2. resolve: the flavor, image, networks, key and hints the request names, looked up

@dataclass(frozen=True)
class Resolved:
    flavor: Flavor
    image: ImageInfo | None         # None: volume-backed
    key_data: str | None
    spec: RequestSpec               # without its server group: joined under the quota lock


async def resolve(state: ApiState, ctx: RequestContext, request: BootRequest) -> Resolved:
    """Everything the request names, looked up and checked; InvalidInput for what is not there
    or does not fit. Nothing is written."""
    # The flavor, the image and the networks are looked up at once (three services, three
    # round trips that do not wait for each other); what is wrong is told in that order.
    # (The security groups are resolved to ids now, as Nova does, and go in the request spec.)
    flavor_row, image, networks, groups, volumes = await asyncio.gather(
        _flavor(state, ctx, request.flavor_ref), _image_of(state, ctx, request),
        _check_networks(state, ctx, request.networks), _security_groups(state, ctx, request),
        boot_volumes.check_volumes(state.volumes, ctx, request.block_devices, request.max_count),
        return_exceptions=True)
    for outcome in (flavor_row, image):
        if isinstance(outcome, BaseException):
            raise outcome
    if request.volume_backed:
        if image is not None and not request.described_by:
            _check_volume_image(image, boot_volumes.root_volume(request.block_devices))
    else:
        check_image(image, flavor_row)
    for outcome in (networks, groups, volumes):
        if isinstance(outcome, BaseException):
            raise outcome

    key_data = await keypairs.key_for_boot(state.pool, ctx.user_id, request.key_name)
    zone = request.availability_zone
    if zone is not None and not await state.pool.fetchval(Q.zone_exists, zone):
        raise errors.InvalidInput(f"The requested availability zone {zone!r} is not available.")
    placement_hints = await _host_hints(state, ctx, request.hints)

    flavor = Flavor.of_flavor(flavor_row)
    spec = RequestSpec(project_id=ctx.project_id, user_id=ctx.user_id, flavor_id=flavor.id, vcpus=flavor.vcpus,
                       memory_mb=flavor.memory_mb, root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb,
                       swap_mb=flavor.swap, image_id="" if request.volume_backed else image.id, availability_zone=zone,
                       extra_specs=flavor.extra_specs,
                       image_properties=dict(image.properties) if image is not None else {},
                       scheduler_hints=placement_hints, security_groups=groups, is_bfv=request.volume_backed)
    return Resolved(flavor=flavor, image=image, key_data=key_data, spec=spec)


# -- 3. under the project's quota lock: how many fit, the server group, the rows

async def reserve_and_write(state: ApiState, ctx: RequestContext, request: BootRequest, found: Resolved,
                            cell: Cell, preset: str | None = None,
                            reserved: dict[int, Any] | None = None) -> list[str]:
    """Decide how many instances fit (down to min_count), join their server group and write
    them, all under the project's counting lock; their uuids. With nothing limited there is
    nothing to count, and no lock to wait for. `preset`: the one instance's uuid, already
    named by the attachments `reserved` on its volumes. Plain boots (no volumes, no server
    group) of one user that arrive together are decided and written together (_write_boots)."""
    if preset is None and not reserved and not request.block_devices and "group" not in request.hints:
        line = ("boot-writes", ctx.project_id, ctx.user_id, cell.uuid)
        return await state.pool.lines.submit(line, functools.partial(_boot_writes, state, cell),
                                             _Boot(ctx, request, found))
    each = _each(found.flavor)
    uuids: list[str] = []
    try:
        async with state.pool.acquire() as conn, conn.transaction():
            limit, counted = await quotas.lock_for_boot(conn, state.settings.quota, ctx.project_id, each)
            used = await quotas.usage(state.cells, ctx.project_id) if counted else quotas.total()
            quotas.check_metadata(limit, request.metadata)
            count = quotas.how_many_fit(limit, used, each, request.min_count, request.max_count)
            uuids = [preset] if preset else [str(uuid.uuid4()) for _ in range(count)]
            spec = found.spec
            group = await server_groups.join(conn, ctx, request.hints, uuids, limit)
            if group is not None:
                _check_policy_clash(group.policy, spec.scheduler_hints)
                spec = msgspec.structs.replace(spec, group=group)
            rows = InstanceRows.of(request, found, ctx, uuids, spec, counted, reserved or {})
            await write_rows(state, conn, cell, [rows], limit, quotas.plus(quotas.total(), each, count))
    except errors.DatabaseUnavailable:
        # Whether the rows, or even the commit, made it is unknown: the rows no mapping names
        # are taken out once the database is back (they are no server the user was promised).
        if uuids:
            state.cells.forget_later(cell, uuids)
        raise
    return uuids


def _each(flavor: Flavor) -> dict[str, int]:
    """What one instance of the flavor adds to its project's usage."""
    return {"instances": 1, "cores": flavor.vcpus, "ram": flavor.memory_mb}


@dataclass(frozen=True)
class _Boot:
    """A boot request waiting to be written with others (reserve_and_write)."""
    ctx: RequestContext
    request: BootRequest
    found: Resolved


def _boot_writes(state: ApiState, cell: Cell) -> Sending:
    return Sending(send=functools.partial(_write_boots, state, cell), name="boot-writes")


async def _write_boots(state: ApiState, cell: Cell, batch: Batch) -> None:
    """reserve_and_write for boots of one user (no volumes, no server group) that arrived
    together: one quota lock and one transaction for all, one statement writing their rows.
    Each is decided in turn, as if it came alone after the ones before it: a boot refused
    (its metadata, or no room left) hears why, and the others go on. An error in the shared
    writes fails every boot of the batch, and what was written is taken out (write_rows)."""
    boots: list[_Boot] = [call.args for call in batch]
    project_id = boots[0].ctx.project_id
    eaches = [_each(boot.found.flavor) for boot in boots]
    accepted: list[tuple[Any, InstanceRows]] = []
    uuids: list[str] = []
    try:
        async with state.pool.acquire() as conn, conn.transaction():
            limit, counted = await quotas.lock_for_boot(conn, state.settings.quota, project_id,
                                                        {res: max(e[res] for e in eaches) for res in eaches[0]})
            used = await quotas.usage(state.cells, project_id) if counted else quotas.total()
            added = quotas.total()
            for call, boot, each in zip(batch, boots, eaches):
                try:
                    quotas.check_metadata(limit, boot.request.metadata)
                    count = quotas.how_many_fit(limit, quotas.total(used, added), each,
                                                boot.request.min_count, boot.request.max_count)
                except errors.NovaAsyncError as exc:
                    if not call.answer.done():
                        call.answer.set_exception(exc)
                    continue
                added = quotas.plus(added, each, count)
                rows = InstanceRows.of(boot.request, boot.found, boot.ctx, [str(uuid.uuid4()) for _ in range(count)],
                                       boot.found.spec, counted, {})
                accepted.append((call, rows))
                uuids += rows.uuids
            if accepted:
                await write_rows(state, conn, cell, [rows for _, rows in accepted], limit, added)
    except errors.DatabaseUnavailable:
        if uuids:   # as reserve_and_write
            state.cells.forget_later(cell, uuids)
        raise
    for call, rows in accepted:
        if not call.answer.done():
            call.answer.set_result(rows.uuids)


@dataclass(frozen=True)
class InstanceRows:
    """A boot request's instances as `servers.insert_many` writes them: what differs per
    instance as lists, the rest once. `arguments()` is the one place they become its $1..$23."""

    uuids: list[str]
    names: list[str]
    project_id: str
    user_id: str
    reservation_id: str
    flavor: Flavor
    image_id: str
    spec: RequestSpec
    networks: list[RequestedNetwork]
    key_name: str | None
    user_data: str | None
    metadata: dict[str, str]
    availability_zone: str | None
    config_drive: str
    access_ip_v4: str | None
    access_ip_v6: str | None
    key_data: str | None
    tags: list[str]
    description: str | None
    request_id: str                 # of the instances' `create` actions
    counted: bool                   # whether the project's usage is recounted (something is limited)
    auto_disk_config: bool          # OS-DCF:diskConfig AUTO
    block_devices: list[tuple[Any, ...]]   # every instance's block_devices.insert arguments

    @classmethod
    def of(cls, request: BootRequest, found: Resolved, ctx: RequestContext, uuids: list[str],
           spec: RequestSpec, counted: bool, reserved: dict[int, Any]) -> InstanceRows:
        names = [request.name] if len(uuids) == 1 else [f"{request.name}-{i + 1}" for i in range(len(uuids))]
        return cls(uuids=uuids, names=names, project_id=ctx.project_id, user_id=ctx.user_id,
                   reservation_id=request.reservation_id, flavor=found.flavor, image_id=spec.image_id, spec=spec,
                   networks=request.networks, key_name=request.key_name, user_data=request.user_data,
                   metadata=request.metadata, availability_zone=request.availability_zone,
                   config_drive=request.config_drive, access_ip_v4=request.access_ip_v4,
                   access_ip_v6=request.access_ip_v6, key_data=found.key_data, tags=request.tags,
                   description=request.description, request_id=ctx.request_id, counted=counted,
                   auto_disk_config=request.auto_disk_config,
                   block_devices=[row for u in uuids for row in boot_volumes.rows(
                       request.block_devices, u, reserved, found.flavor.ephemeral_gb, found.flavor.swap)])

    def columns(self) -> list[list[Any]]:
        """`servers.insert_many`'s $1..$23 for these instances: one list per column."""
        n = len(self.uuids)
        alike = [self.project_id, self.user_id, self.reservation_id, _json(self.flavor), self.image_id,
                 _json(self.spec.to_stored()), _json(self.networks), self.key_name, self.user_data,
                 _json(self.metadata), self.availability_zone, self.config_drive, self.access_ip_v4,
                 self.access_ip_v6, self.key_data, _json(self.tags), self.description, self.request_id,
                 self.auto_disk_config]
        return [list(self.uuids), list(self.names), [_hostname(name) for name in self.names], list(range(n)),
                *([value] * n for value in alike)]


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def insert_arguments(requests: list[InstanceRows]) -> list[Any]:
    """`servers.insert_many`'s arguments for the instances of `requests` (one project's)."""
    columns = [sum(parts, []) for parts in zip(*(rows.columns() for rows in requests))]
    return [*columns, requests[0].counted, requests[0].project_id]


async def write_rows(state: ApiState, conn: asyncpg.Connection, cell: Cell, requests: list[InstanceRows],
                     limit: dict[str, int], added: dict[str, int]) -> None:
    """The instance rows of `requests` (boots of one user, adding `added` to the project's
    usage), with their `create` actions, into the cell database, and their mappings into the
    API database on `conn`, the quota lock's transaction; the two at once, so that the lock
    is held for one round trip less.

    The cell's rows commit on their own, while the lock is still held, so that the next count
    sees them; they come with a recount of that cell (what others committed meanwhile; ours
    are added on top). The mappings commit with the lock's transaction, that is only once the
    rows are in and counted: there are never mappings without rows. Rows without mappings can
    be left, and are listed and counted until they go: when anything fails after the insert
    may have happened, the rows are taken out here, before the error goes on. A cancellation
    (only at the shutdown deadline: aiohttp does not cancel a handler whose client went away)
    waits for that too; should the delete itself be cut short (cancelled again, or the cell
    database away), the database still tells what to do, and the API database is never left
    with mappings: `cells.forget_pending()` (once an outage is over, from `forget_later`) and
    the conductor's `cells.tidy()` (at start and every minute, for rows over a minute old)
    remove the rows no mapping names. Rows cast to nobody (the request cut short after its
    commit) are picked up by the conductor's `_resume_unscheduled` at its next start."""
    inserted: Any = None  # the insert's recount row; None while its outcome is unknown
    first = requests[0]
    uuids = [u for rows in requests for u in rows.uuids]
    try:
        inserted, mapped = await asyncio.gather(
            _insert(cell, requests),
            state.cells.map_instances(conn, cell, uuids, first.project_id, first.user_id),
            return_exceptions=True)
        for outcome in (inserted, mapped):
            if isinstance(outcome, BaseException):
                raise outcome
        if first.counted:
            others = await quotas.usage(state.cells, first.project_id, skip=cell)
            quotas.check_within(limit, quotas.total(quotas.usage_of(inserted), others, added))
    except BaseException:
        if not isinstance(inserted, BaseException):  # in the cell, or perhaps (cut short)
            await cell.pool.execute(CQ.forget_instances, uuids)
        raise


async def _insert(cell: Cell, requests: list[InstanceRows]) -> Any:
    """The instances and their block device mappings, in one transaction of the cell."""
    devices = [device for rows in requests for device in rows.block_devices]
    if not devices:
        return await cell.pool.fetchrow(Q.insert_many, *insert_arguments(requests))
    async with cell.pool.acquire() as conn, conn.transaction():
        inserted = await conn.fetchrow(Q.insert_many, *insert_arguments(requests))
        await conn.executemany(BQ.insert, devices)
        return inserted


# -- the checks

async def _image_of(state: ApiState, ctx: RequestContext, request: BootRequest) -> ImageInfo | None:
    """The image the server boots: from its disk (imageRef), or copied into its new root
    volume; None when it boots from an existing volume, snapshot or blank volume."""
    if request.image_ref:
        return await find_image(state, ctx, request.image_ref)
    root = boot_volumes.root_volume(request.block_devices)
    if root is not None and root.source_type == "image" and root.uuid:
        return await find_image(state, ctx, root.uuid)
    if request.described_by:
        return await find_image(state, ctx, request.described_by)
    return None


def _check_volume_image(image: ImageInfo, root: boot_volumes.BlockDevice | None) -> None:
    """The new root volume must hold the image (Nova's check of min_disk and size)."""
    size = (root.volume_size or 0) if root else 0
    if image.min_disk > size or (image.size or 0) > size * GiB:
        raise errors.InvalidInput(f"Volume is smaller than the minimum size specified in image metadata. "
                                  f"Volume size is {size * GiB} bytes, minimum size is "
                                  f"{max(image.min_disk * GiB, image.size or 0)} bytes.")


async def _host_hints(state: ApiState, ctx: RequestContext, hints: dict[str, Any]) -> dict[str, list[str]]:
    """`same_host` / `different_host`: instance ids (one or a list) that must exist and be the
    caller's to name; anything else is a 400 before anything is written."""
    found: dict[str, list[str]] = {}
    for hint in ("same_host", "different_host"):
        value = hints.get(hint)
        if value is None:
            continue
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            raise errors.InvalidInput(f"The scheduler hint {hint} must be an instance id or a list of them.")
        uuids = []
        for v in values:
            parsed = parse_uuid(v)
            if parsed is None:
                raise errors.InvalidInput(f"The scheduler hint {hint} names {v!r}, which is not an instance id.")
            uuids.append(parsed)
        known = {str(r["uuid"]) for r in await state.cells.gather(
            Q.visible_uuids, uuids, None if ctx.is_admin else ctx.project_id)}
        missing = [u for u in uuids if u not in known]
        if missing:
            raise errors.InvalidInput(f"The scheduler hint {hint} names instance(s) that do not exist: "
                                      f"{', '.join(missing)}.")
        found[hint] = uuids
    return found


def _check_policy_clash(policy: str, hints: dict[str, list[str]]) -> None:
    if policy == "anti-affinity" and hints.get("same_host"):
        raise errors.InvalidInput("The same_host hint contradicts the anti-affinity policy of the server group.")
    if policy == "affinity" and hints.get("different_host"):
        raise errors.InvalidInput("The different_host hint contradicts the affinity policy of the server group.")


async def _flavor(state: ApiState, ctx: RequestContext, ref: str) -> Any:
    try:
        flavor = await flavor_store.visible(state.pool, ctx, ref.rsplit("/", 1)[-1])
    except errors.NotFound:
        raise errors.InvalidInput(f"Flavor {ref} could not be found.") from None
    if flavor["disabled"]:
        raise errors.InvalidInput(f"Flavor {flavor['id']} is disabled.")
    return flavor


async def _check_networks(state: ApiState, ctx: RequestContext, requested: list[RequestedNetwork]) -> None:
    if requested == [NO_NETWORK]:
        return
    # An empty list ("auto") is checked too: it fails up front when the choice is ambiguous.
    try:
        await state.networks.validate(ctx, requested)
    except errors.NotFound as exc:
        raise errors.InvalidInput(exc.message) from None


async def _security_groups(state: ApiState, ctx: RequestContext, request: BootRequest) -> list[str] | None:
    """The ids of the groups the boot names (by name or id) in the caller's project; the
    project's `default` group when it names none (made now, if it is the project's first)."""
    if request.networks == [NO_NETWORK]:
        return None
    try:
        return await state.networks.resolve_security_groups(ctx, request.security_groups)
    except errors.NotFound as exc:
        raise errors.InvalidInput(exc.message) from None


async def usable_image(state: ApiState, ctx: RequestContext, ref: str, flavor: Any) -> ImageInfo:
    """The image a boot or rebuild names, if the caller may use it and `flavor` can hold it."""
    image = await find_image(state, ctx, ref)
    check_image(image, flavor)
    return image


async def find_image(state: ApiState, ctx: RequestContext, ref: str) -> ImageInfo:
    """The active image `ref` names, if the caller may use it."""
    image_ref = str(ref).rsplit("/", 1)[-1]
    try:
        image = await state.images.get(image_ref, ctx.project_id, ctx.is_admin)
    except errors.NotFound:
        raise errors.InvalidInput(f"Image {image_ref} could not be found.") from None
    if image.status != "active":
        raise errors.InvalidInput(f"Image {image_ref} is not active.")
    if "block_device_mapping" in image.properties:
        # The image of a volume-backed server (volume_backed_image.py) has no disk of its
        # own: Nova boots it by making volumes from the snapshots it names, which the boot
        # here does not do yet. Refused, rather than booted from its zero bytes.
        raise errors.InvalidInput(f"Image {image_ref} is the image of a volume-backed server (its disks are "
                                  "volume snapshots); booting from such an image is not supported yet.")
    return image


def check_image(image: ImageInfo, flavor: Any) -> None:
    """InvalidInput when `flavor` cannot hold `image`."""
    if flavor["root_gb"] and (image.size or 0) > flavor["root_gb"] * GiB:
        raise errors.InvalidInput(f"Flavor's disk is too small for requested image. Flavor disk is "
                                  f"{flavor['root_gb'] * GiB} bytes, image is {image.size} bytes.")
    if image.min_ram > flavor["memory_mb"]:
        raise errors.InvalidInput(f"Flavor's memory is too small for requested image "
                                  f"(image needs {image.min_ram} MB).")
    if flavor["root_gb"] and image.min_disk > flavor["root_gb"]:
        raise errors.InvalidInput(f"Flavor's disk is too small for requested image "
                                  f"(image needs {image.min_disk} GB).")


def _hostname(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "-" else "-" for c in name.lower()).strip("-")
    return cleaned[:63] or "server"

