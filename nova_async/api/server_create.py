"""Accepting a boot request: check it against flavor, image and networks, write the
instance rows and their `create` actions in one transaction, and cast to the conductor.

Nothing is written unless everything checks out; the 202 goes back before any scheduling."""

from __future__ import annotations

import asyncio
import base64
import binascii
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from nova_async.api import flavor_store, keypairs, quotas, server_groups
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import parse_uuid
from nova_async.db.queries import queries
from nova_async.image.messages import ImageInfo
from nova_async.network.messages import RequestedNetwork
from nova_async.scheduler.messages import Flavor, RequestSpec

GiB = 1024**3
NO_NETWORK = RequestedNetwork(network_id="none")  # the network service's "no NIC at all"
Q = queries("servers")
CQ = queries("cells")


@dataclass(frozen=True)
class Accepted:
    uuids: list[str]
    reservation_id: str
    admin_pass: str


def _count(value: Any, name: str) -> int:
    number = int(value)
    if number < 1:
        raise errors.InvalidInput(f"{name} must be at least 1.")
    return number


def _image_ref(server: dict[str, Any]) -> str:
    ref = server.get("imageRef") or ""
    for bdm in server.get("block_device_mapping_v2") or []:
        if str(bdm.get("boot_index")) == "0" and bdm.get("source_type") == "image":
            if ref and bdm.get("uuid") != ref:
                raise errors.InvalidInput("imageRef and the boot block device mapping name different images.")
            if bdm.get("destination_type") == "volume":
                raise errors.InvalidInput("Booting from a volume is not supported: there is no volume service.")
            ref = ref or bdm.get("uuid", "")
    if not ref:
        raise errors.InvalidInput("imageRef is required: booting from a volume is not supported.")
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


async def create(state: ApiState, ctx: RequestContext, body: dict[str, Any], version) -> Accepted:
    server = body["server"]
    min_count = _count(server.get("min_count", 1), "min_count")
    max_count = _count(server.get("max_count", min_count), "max_count")
    if min_count > max_count:
        raise errors.InvalidInput(f"min_count ({min_count}) must be <= max_count ({max_count}).")
    if max_count > 1000:
        raise errors.InvalidInput("max_count may be at most 1000.")
    user_data = _user_data(server)

    image_ref = _image_ref(server)
    requested = _requested_networks(server, version)
    # The flavor, the image and the networks are looked up at once (three services, three
    # round trips that do not wait for each other); what is wrong is told in that order.
    flavor, image, networks = await asyncio.gather(
        _flavor(state, str(server["flavorRef"])), find_image(state, ctx, image_ref),
        _check_networks(state, ctx, requested), return_exceptions=True)
    for outcome in (flavor, image):
        if isinstance(outcome, BaseException):
            raise outcome
    check_image(image, flavor)
    if isinstance(networks, BaseException):
        raise networks

    key_data = await keypairs.key_for_boot(state.pool, ctx.user_id, server.get("key_name"))
    zone = server.get("availability_zone")
    if zone is not None and not await state.pool.fetchval(Q.zone_exists, zone):
        raise errors.InvalidInput(f"The requested availability zone {zone!r} is not available.")

    flavor_copy = Flavor(id=flavor["id"], name=flavor["name"], vcpus=flavor["vcpus"], memory_mb=flavor["memory_mb"],
                         root_gb=flavor["root_gb"], ephemeral_gb=flavor["ephemeral_gb"], swap=flavor["swap"],
                         extra_specs={str(k): str(v) for k, v in (flavor["extra_specs"] or {}).items()})
    spec = RequestSpec(project_id=ctx.project_id, user_id=ctx.user_id, flavor_id=flavor["id"],
                       vcpus=flavor["vcpus"], memory_mb=flavor["memory_mb"], root_gb=flavor["root_gb"],
                       ephemeral_gb=flavor["ephemeral_gb"], swap_mb=flavor["swap"], image_id=image.id,
                       availability_zone=server.get("availability_zone"),
                       extra_specs={str(k): str(v) for k, v in (flavor["extra_specs"] or {}).items()},
                       image_properties=dict(image.properties))
    hints = body.get("os:scheduler_hints") or body.get("OS-SCH-HNT:scheduler_hints") or {}
    placement_hints = await _host_hints(state, ctx, hints)
    if placement_hints:
        spec = msgspec.structs.replace(spec, scheduler_hints=placement_hints)
    reservation_id = f"r-{secrets.token_hex(4)}"
    nets = [msgspec.to_builtins(r) for r in requested]
    each = {"instances": 1, "cores": flavor["vcpus"], "ram": flavor["memory_mb"]}
    cell = state.cells.default  # where new instances are written; the conductor moves them if need be
    uuids: list[str] = []
    try:
        async with state.pool.acquire() as conn, conn.transaction():
            # Quota: as many as fit, down to min_count, decided and written under the project's
            # counting lock; with nothing limited there is nothing to count, and no lock to wait for
            limit, counted = await quotas.lock_for_boot(conn, state.settings.quota, ctx.project_id, each)
            used = await quotas.usage(state.cells, ctx.project_id) if counted else quotas.total()
            quotas.check_metadata(limit, server.get("metadata", {}))
            count = quotas.how_many_fit(limit, used, each, min_count, max_count)
            uuids = [str(uuid.uuid4()) for _ in range(count)]
            group = await server_groups.join(conn, ctx, hints, uuids, limit)
            if group is not None:
                spec = msgspec.structs.replace(spec, group=group)
                _check_policy_clash(group.policy, placement_hints)
            names = [server["name"]] if count == 1 else [f"{server['name']}-{i + 1}" for i in range(count)]
            # The rows and their actions go into the cell, committed there while the lock is still
            # held, so that the next count sees them. They come with a recount of that cell (what
            # others committed meanwhile; ours are added on top). Should anything after this fail,
            # they are taken out again; after a crash, cells.tidy() removes rows left unmapped.
            # Their mappings are written at the same time, on this transaction's connection: the
            # lock is held for one round trip less.
            insert = asyncio.ensure_future(cell.pool.fetchrow(
                Q.insert_many, uuids, names, [_hostname(n) for n in names], list(range(count)),
                ctx.project_id, ctx.user_id, reservation_id, flavor_copy, image.id, spec.to_stored(), nets,
                server.get("key_name"), user_data, server.get("metadata", {}), server.get("availability_zone"),
                "True" if server.get("config_drive") in (True, "true", "True") else "",
                server.get("accessIPv4"), server.get("accessIPv6"), key_data,
                list(dict.fromkeys(server.get("tags", [])) if version >= (2, 52) else []),
                server.get("description") if version >= (2, 19) else None, ctx.request_id, counted))
            try:
                for outcome in await asyncio.gather(
                        insert, state.cells.map_instances(conn, cell, uuids, ctx.project_id, ctx.user_id),
                        return_exceptions=True):
                    if isinstance(outcome, BaseException):
                        raise outcome
                if counted:
                    others = await quotas.usage(state.cells, ctx.project_id, skip=cell)
                    quotas.check_within(limit, quotas.plus(quotas.total(quotas.usage_of(insert.result()), others),
                                                           each, count))
            except BaseException:
                if insert.done() and not insert.cancelled() and insert.exception() is None:
                    await asyncio.shield(cell.pool.execute(CQ.forget_instances, uuids))
                raise
    except errors.DatabaseUnavailable:
        # Whether the rows, or even the commit, made it is unknown: the rows no mapping names
        # are taken out once the database is back (they are no server the user was promised).
        if uuids:
            state.cells.forget_later(cell, uuids)
        raise
    await state.conductor.schedule_and_build(uuids, ctx, cell.uuid)
    return Accepted(uuids=uuids, reservation_id=reservation_id,
                    admin_pass=server.get("adminPass") or secrets.token_urlsafe(9))


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


async def _flavor(state: ApiState, ref: str) -> Any:
    try:
        flavor = await flavor_store.get(state.pool, ref.rsplit("/", 1)[-1])
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

