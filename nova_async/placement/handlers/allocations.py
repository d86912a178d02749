"""`/allocations/{consumer_uuid}`: what one consumer holds, replaced or removed whole; and
`POST /allocations` (1.13+), which does that for several consumers at once, all or nothing."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import msgspec
from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import dump, parse_uuid
from nova_async.placement import allocations, catalog, microversion
from nova_async.placement.handlers.common import authorize, path_uuid, pool
from nova_async.placement.media import json_body, schema, validate

# what old (pre-1.8) clients did not say
INCOMPLETE_CONSUMER = "00000000-0000-0000-0000-000000000000"

_UUID_KEY = "^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$"
_RESOURCES = {"type": "object", "minProperties": 1,
              "patternProperties": {"^[A-Z0-9_]{1,255}$": {"type": "integer", "minimum": 1,
                                                           "maximum": 2**31 - 1}},
              "additionalProperties": False}
_ID = {"type": "string", "minLength": 1, "maxLength": 255}


def _schema(minor: int, batch: bool = False) -> dict:
    """One consumer's body at `minor`; in a POST batch the allocations may be empty (removal)."""
    if minor < 12:
        allocs: dict = {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "properties": {"resource_provider": {"type": "object", "properties": {
                               "uuid": {"type": "string", "format": "uuid"}},
                               "required": ["uuid"], "additionalProperties": False},
                           "resources": _RESOURCES},
            "required": ["resource_provider", "resources"]}}
    else:
        allocs = {"type": "object", "minProperties": 0 if minor >= 28 or batch else 1,
                  "patternProperties": {_UUID_KEY: {
                      "type": "object",
                      "properties": {"resources": _RESOURCES, "generation": {}},
                      "required": ["resources"], "additionalProperties": False}},
                  "additionalProperties": False}
    props = {"allocations": allocs}
    required = ["allocations"]
    if minor >= 8:
        props.update(project_id=_ID, user_id=_ID)
        required += ["project_id", "user_id"]
    if minor >= 28:
        props["consumer_generation"] = {"type": ["integer", "null"]}
        required.append("consumer_generation")
    if minor >= 34:  # which request group each provider satisfied; we accept and ignore it
        props["mappings"] = {"type": "object", "patternProperties": {"^.{0,64}$": {
            "type": "array", "minItems": 1, "items": {"type": "string", "format": "uuid"}}},
            "additionalProperties": False}
    if minor >= 38:
        props["consumer_type"] = {"type": "string", "pattern": "^[A-Z0-9_]{1,255}$"}
        required.append("consumer_type")
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_STEPS = (0, 8, 12, 28, 34, 38)  # the versions at which the body changed
UPDATE = {minor: schema(_schema(minor)) for minor in _STEPS}
BATCH = {minor: schema({"type": "object", "minProperties": 1,
                           "patternProperties": {_UUID_KEY: _schema(minor, batch=True)},
                           "additionalProperties": False})
         for minor in _STEPS if minor >= 12}


# The same bodies (1.28 and later) as msgspec types: jsonschema takes ~0.5 ms to walk a claim,
# which is a good part of answering one; msgspec checks the same constraints in microseconds.
# Only a body msgspec accepts skips the schema: anything it refuses goes to jsonschema, which
# decides and words the error, so the two never disagree on what is refused.
_Uuid = Annotated[str, msgspec.Meta(pattern=_UUID_KEY)]
_Name = Annotated[str, msgspec.Meta(pattern="^[A-Z0-9_]{1,255}$")]
_Id = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]
_Resources = Annotated[dict[_Name, Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]],
                       msgspec.Meta(min_length=1)]
_Mappings = dict[Annotated[str, msgspec.Meta(pattern="^.{0,64}$")],
                 Annotated[list[_Uuid], msgspec.Meta(min_length=1)]]


class _Entry(msgspec.Struct, forbid_unknown_fields=True):
    resources: _Resources
    generation: Any = None  # any value; ignored


class _Body28(msgspec.Struct, forbid_unknown_fields=True):
    allocations: dict[_Uuid, _Entry]
    project_id: _Id
    user_id: _Id
    consumer_generation: int | None


class _Body34(_Body28, forbid_unknown_fields=True):
    mappings: _Mappings | msgspec.UnsetType = msgspec.UNSET


class _Body38(_Body34, forbid_unknown_fields=True, kw_only=True):
    consumer_type: _Name


FAST_UPDATE: dict[int, Any] = {0: None, 28: _Body28, 34: _Body34, 38: _Body38}
FAST_BATCH: dict[int, Any] = {12: None} | {
    m: Annotated[dict[_Uuid, t], msgspec.Meta(min_length=1)] for m, t in FAST_UPDATE.items() if t}


def _at_version(request: web.Request, table: dict):
    minor = microversion.version(request).minor
    return table[max(m for m in table if m <= minor)]


def _validate(request: web.Request, body: Any, fast: dict[int, Any], schemas: dict) -> None:
    model = _at_version(request, fast)
    if model is not None:
        try:
            msgspec.convert(body, model)
            return
        except msgspec.ValidationError:
            pass  # jsonschema decides, and says why
    validate(_at_version(request, schemas), body)


def _write(consumer: str, body: dict) -> allocations.ConsumerWrite:
    generation = body["consumer_generation"] if "consumer_generation" in body else allocations.ANY_GENERATION
    return allocations.ConsumerWrite(
        consumer, _wanted(body), project_id=body.get("project_id", INCOMPLETE_CONSUMER),
        user_id=body.get("user_id", INCOMPLETE_CONSUMER), consumer_type=body.get("consumer_type"),
        consumer_generation=generation)


def _wanted(body: dict) -> dict[str, dict[str, int]]:
    if isinstance(body["allocations"], list):
        wanted: dict[str, dict[str, int]] = {}
        for item in body["allocations"]:
            wanted.setdefault(str(uuid.UUID(item["resource_provider"]["uuid"])), {}).update(item["resources"])
        return wanted
    return {str(uuid.UUID(rp)): entry["resources"] for rp, entry in body["allocations"].items()}


async def show_allocations(request: web.Request) -> web.Response:
    authorize(request, "allocations:list")
    found = await allocations.get_allocations(pool(request), path_uuid(request, "consumer", "consumer"))
    body: dict = {"allocations": {rp: {"generation": gen, "resources": res}
                                  for rp, (gen, res) in found.providers.items()}}
    if found.providers and microversion.at_least(request, 12):
        body.update(project_id=found.project_id, user_id=found.user_id)
        if microversion.at_least(request, 28):
            body["consumer_generation"] = found.generation
        if microversion.at_least(request, 38):
            body["consumer_type"] = found.consumer_type or "UNKNOWN"
    return dump(body)


async def _refuse_unknown_classes(request: web.Request, writes: list[allocations.ConsumerWrite],
                                  prefix: str) -> None:
    """A class nobody defined is the client's mistake (400), not a lack of room (409)."""
    named = sorted({rc for w in writes for res in w.allocations.values() for rc in res})
    unknown = await catalog.unknown_classes(pool(request), named)
    if unknown:
        raise errors.InvalidInput(f"{prefix}No such resource class {', '.join(unknown)}.")


async def update_allocations(request: web.Request) -> web.Response:
    authorize(request, "allocations:update")
    raw = request.match_info["consumer"]
    consumer = parse_uuid(raw)
    if consumer is None:
        raise errors.InvalidInput(f"Malformed consumer_uuid: {raw}")
    body = await json_body(request)
    _validate(request, body, FAST_UPDATE, UPDATE)
    writes = [_write(consumer, body)]
    await _refuse_unknown_classes(request, writes, f"Unable to allocate inventory for consumer {consumer}: ")
    await allocations.replace_many(pool(request), writes)
    return web.Response(status=204)


async def create_allocations(request: web.Request) -> web.Response:
    """POST /allocations: replace (or, with empty allocations, remove) the allocations of every
    consumer named in the body in one transaction — how a move swaps an instance's claim for a
    migration's without a window where either holds nothing or both hold everything."""
    microversion.require(request, 13)
    authorize(request, "allocations:manage")
    body = await json_body(request)
    _validate(request, body, FAST_BATCH, BATCH)
    writes = [_write(str(uuid.UUID(c)), b) for c, b in body.items()]
    await _refuse_unknown_classes(request, writes, "Unable to allocate inventory ")
    await allocations.replace_many(pool(request), writes)
    return web.Response(status=204)


async def delete_allocations(request: web.Request) -> web.Response:
    authorize(request, "allocations:delete")
    consumer = path_uuid(request, "consumer", "consumer")
    if not await allocations.delete_allocations(pool(request), consumer):
        raise errors.NotFound(f"No allocations for consumer '{consumer}'")
    return web.Response(status=204)
