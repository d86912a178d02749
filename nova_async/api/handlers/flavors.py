"""Flavor handlers: `/flavors`, `/flavors/detail`, `/flavors/{id}` (its description from 2.55), `os-extra_specs`
and flavor access (`os-flavor-access`, addTenantAccess/removeTenantAccess) for private flavors."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import flavor_store, microversion
from nova_async.api.links import links, next_page
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_INT = {"type": ["integer", "string"], "pattern": r"^\s*[0-9]+\s*$", "minimum": 0}
_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^\S(.*\S)?$"}

CREATE = w.validator({
    "type": "object",
    "required": ["flavor"],
    "additionalProperties": False,
    "properties": {"flavor": {
        "type": "object",
        "required": ["name", "ram", "vcpus", "disk"],
        "additionalProperties": False,
        "properties": {
            "name": _NAME,
            "id": {"type": ["string", "integer", "null"], "pattern": r"^(?! )[a-zA-Z0-9. _-]{1,255}(?<! )$"},
            "ram": _INT, "vcpus": _INT, "disk": _INT,
            "OS-FLV-EXT-DATA:ephemeral": _INT,
            "swap": {"type": ["integer", "string"], "pattern": r"^\s*[0-9]*\s*$", "minimum": 0},
            "rxtx_factor": {"type": ["number", "string"], "pattern": r"^[0-9]+(\.[0-9]+)?$"},
            "os-flavor-access:is_public": {"type": ["boolean", "string"]},
            "description": {"type": ["string", "null"], "maxLength": 65535},
        },
    }},
})

# 2.102 takes rxtx_factor away.
CREATE_V2102 = w.validator({**CREATE.schema, "properties": {"flavor": {
    **CREATE.schema["properties"]["flavor"],
    "properties": {k: v for k, v in CREATE.schema["properties"]["flavor"]["properties"].items() if k != "rxtx_factor"}}}})

EXTRA_SPECS = w.validator({
    "type": "object",
    "required": ["extra_specs"],
    "additionalProperties": False,
    "properties": {"extra_specs": {
        "type": "object",
        "propertyNames": {"pattern": r"^[a-zA-Z0-9-_:. ]{1,255}$"},
        "additionalProperties": {"type": ["string", "integer", "number", "boolean"], "maxLength": 255},
    }},
})

_MAX_INT = 2**31 - 1
_MAX_LIMIT = 1000   # Nova's [api] max_limit: a larger limit, or none, means this many


def _int(value: Any, field: str, minimum: int) -> int:
    # The schema lets digits be padded with whitespace (Unicode's, to its \s, some of which
    # int() will not strip: "\x1e") and swap be left empty, as it is when only whitespace.
    if isinstance(value, str):
        value = value.strip()
    if value in (None, ""):
        return 0
    number = int(value)
    if not minimum <= number <= _MAX_INT:
        raise errors.InvalidInput(f"Invalid input for field/attribute {field}. Value: {value}. "
                                  f"It must be between {minimum} and {_MAX_INT}.")
    return number


def view(row, base: str, version: microversion.Version, *, detail: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row["id"], "name": row["name"], "links": links(base, "flavors", row["id"])}
    if version >= (2, 55):
        out["description"] = row["description"]
    if not detail:
        return out
    swap: Any = row["swap"] if row["swap"] or version >= (2, 75) else ""
    out.update({"ram": row["memory_mb"], "disk": row["root_gb"], "vcpus": row["vcpus"],
                "OS-FLV-EXT-DATA:ephemeral": row["ephemeral_gb"], "swap": swap,
                "os-flavor-access:is_public": row["is_public"]})
    if version < (2, 102):   # gone from 2.102
        out.update({"rxtx_factor": row["rxtx_factor"], "OS-FLV-DISABLED:disabled": row["disabled"]})
    if version >= (2, 61):
        out["extra_specs"] = row["extra_specs"]
    return out


async def create_flavor(request: web.Request) -> web.Response:
    require_admin(request)
    version = microversion.of(request)
    spec = (await w.read_json(request, CREATE_V2102 if version >= (2, 102) else CREATE))["flavor"]
    if "description" in spec and version < (2, 55):
        raise errors.InvalidInput("Invalid input: 'description' is not allowed before microversion 2.55.")
    public = spec.get("os-flavor-access:is_public", True)
    if isinstance(public, str):
        if public.lower() not in ("true", "false", "1", "0"):
            raise errors.InvalidInput(f"Invalid value {public!r} for os-flavor-access:is_public.")
        public = public.lower() in ("true", "1")
    rxtx = float(spec.get("rxtx_factor", 1.0))
    if rxtx <= 0:
        raise errors.InvalidInput("rxtx_factor must be greater than 0.")
    row = await flavor_store.create(request.app[STATE].pool, {
        "id": spec.get("id"), "name": spec["name"], "ram": _int(spec["ram"], "ram", 1),
        "vcpus": _int(spec["vcpus"], "vcpus", 1), "disk": _int(spec["disk"], "disk", 0),
        "ephemeral": _int(spec.get("OS-FLV-EXT-DATA:ephemeral"), "OS-FLV-EXT-DATA:ephemeral", 0),
        "swap": _int(spec.get("swap"), "swap", 0), "rxtx_factor": rxtx, "is_public": public,
        "description": spec.get("description")})
    return w.dump({"flavor": view(row, request.app[STATE].base_url, version)})


def _is_public(raw: str | None) -> bool | None:
    """An admin's is_public filter as Nova reads it: absent is public only, "none" both,
    else oslo's strict boolean spellings (any case); None means both."""
    if raw is None:
        return True
    if raw.strip().lower() == "none":
        return None
    value = w.oslo_bool(raw)
    if value is None:
        raise errors.InvalidInput(f"Invalid is_public filter [{raw}]")
    return value


async def _listing(request: web.Request, detail: bool) -> web.Response:
    state, ctx = request.app[STATE], w.context(request)
    # Members see the public flavors and the private ones their project was given access to,
    # whatever they ask.
    is_public = _is_public(request.query.get("is_public")) if ctx.is_admin else True
    q = request.query
    version = microversion.of(request)
    sort_key, sort_dir = q.get("sort_key") or "flavorid", q.get("sort_dir") or "asc"
    if (sort_key not in flavor_store.SORT_KEYS or sort_dir not in ("asc", "desc")
            or (sort_key == "rxtx_factor" and version >= (2, 102))):
        raise errors.InvalidInput(f"Invalid sort_key {sort_key!r} or sort_dir {sort_dir!r}.")
    limit = min(w.query_int(request, "limit", _MAX_LIMIT), _MAX_LIMIT)
    rows = await flavor_store.listing(state.pool, flavor_store.ListFilter(
        is_public, w.query_int(request, "minRam", 0), w.query_int(request, "minDisk", 0),
        sort_key, sort_dir == "desc", q.get("marker"), limit, None if ctx.is_admin else ctx.project_id,
        q.get("name") if version >= (2, 102) else None))
    return w.dump({"flavors": [view(r, state.base_url, version, detail=detail) for r in rows],
                   **next_page(state.base_url, "flavors", "flavors/detail" if detail else "flavors", q,
                               [r["id"] for r in rows], limit)})


async def list_flavors(request: web.Request) -> web.Response:
    return await _listing(request, detail=False)


async def list_flavors_detail(request: web.Request) -> web.Response:
    return await _listing(request, detail=True)


async def show_flavor(request: web.Request) -> web.Response:
    state = request.app[STATE]
    row = await flavor_store.visible(state.pool, w.context(request), request.match_info["flavor_id"])
    return w.dump({"flavor": view(row, state.base_url, microversion.of(request))})


UPDATE = w.validator({"type": "object", "required": ["flavor"], "additionalProperties": False, "properties": {
    "flavor": {"type": "object", "required": ["description"], "additionalProperties": False,
               "properties": {"description": {"type": ["string", "null"], "maxLength": 65535,
                                              "pattern": "^[^\\x00-\\x1f\\x7f]*$"}}}}})


async def update_flavor(request: web.Request) -> web.Response:
    """Only a flavor's description changes (from 2.55), as in Nova."""
    version = microversion.of(request)
    if version < (2, 55):
        raise errors.NotFound("Updating a flavor needs microversion 2.55 or later.")
    require_admin(request)
    body = (await w.read_json(request, UPDATE))["flavor"]
    state = request.app[STATE]
    row = await flavor_store.set_description(state.pool, request.match_info["flavor_id"], body["description"])
    return w.dump({"flavor": view(row, state.base_url, version)})


def _access(rows) -> dict[str, Any]:
    return {"flavor_access": [{"flavor_id": r["flavor_id"], "tenant_id": r["project_id"]} for r in rows]}


async def list_flavor_access(request: web.Request) -> web.Response:
    require_admin(request)
    return w.dump(_access(await flavor_store.access_list(request.app[STATE].pool, request.match_info["flavor_id"])))


_TENANT = {"type": "object", "required": ["tenant"], "additionalProperties": False,
           "properties": {"tenant": {"type": "string", "minLength": 1, "maxLength": 255,
                                     "pattern": "^[^\\x00-\\x1f\\x7f]*$"}}}
ACCESS_ACTION = w.validator({"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                             "properties": {"addTenantAccess": _TENANT, "removeTenantAccess": _TENANT}})


async def flavor_action(request: web.Request) -> web.Response:
    """addTenantAccess / removeTenantAccess: which projects may use a private flavor."""
    require_admin(request)
    body = await w.read_json(request, ACCESS_ACTION)
    [(name, value)] = body.items()
    rows = await flavor_store.change_access(request.app[STATE].pool, request.match_info["flavor_id"],
                                            value["tenant"], add=name == "addTenantAccess")
    return w.dump(_access(rows))


async def delete_flavor(request: web.Request) -> web.Response:
    require_admin(request)
    await flavor_store.delete(request.app[STATE].pool, request.match_info["flavor_id"])
    return web.Response(status=202)


async def list_extra_specs(request: web.Request) -> web.Response:
    row = await flavor_store.visible(request.app[STATE].pool, w.context(request), request.match_info["flavor_id"])
    return w.dump({"extra_specs": row["extra_specs"]})


async def create_extra_specs(request: web.Request) -> web.Response:
    require_admin(request)
    specs = (await w.read_json(request, EXTRA_SPECS))["extra_specs"]
    specs = {k: str(v) for k, v in specs.items()}
    merged = await flavor_store.merge_extra_specs(request.app[STATE].pool, request.match_info["flavor_id"],
                                                  specs)
    return w.dump({"extra_specs": {k: merged[k] for k in specs}})


async def show_extra_spec(request: web.Request) -> web.Response:
    row = await flavor_store.visible(request.app[STATE].pool, w.context(request), request.match_info["flavor_id"])
    key = request.match_info["key"]
    if key not in row["extra_specs"]:
        raise errors.NotFound(f"Flavor {row['id']} has no extra spec with key {key}.")
    return w.dump({key: row["extra_specs"][key]})


async def update_extra_spec(request: web.Request) -> web.Response:
    require_admin(request)
    key = request.match_info["key"]
    body = await w.read_body(request)
    if not isinstance(body, dict) or list(body) != [key]:
        raise errors.InvalidInput("The request body must hold exactly the key named in the URL.")
    w.check(EXTRA_SPECS, {"extra_specs": body})
    merged = await flavor_store.merge_extra_specs(request.app[STATE].pool, request.match_info["flavor_id"],
                                                  {key: str(body[key])})
    return w.dump({key: merged[key]})


async def delete_extra_spec(request: web.Request) -> web.Response:
    require_admin(request)
    await flavor_store.delete_extra_spec(request.app[STATE].pool, request.match_info["flavor_id"],
                                         request.match_info["key"])
    return web.Response(status=200)
