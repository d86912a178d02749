"""What the volume API's handlers share: the caller (with the project a /v3/{project_id}/…
path names checked against the token's, as Cinder checks it), the list conventions (filters,
sort, limit/marker), and the request's microversion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from aiohttp import web

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import context, query_flag, query_int
from nova_async.volume.state import STATE, VolumeApi

# What each listing can be sorted by: the keys its rows have.
VOLUME_SORT_KEYS = ("created_at", "updated_at", "id", "name", "size", "status", "availability_zone", "bootable")
SNAPSHOT_SORT_KEYS = ("created_at", "updated_at", "id", "name", "size", "status", "volume_id")
ATTACHMENT_SORT_KEYS = ("created_at", "updated_at", "id", "status")
MAX_LIMIT = 1000


def api(request: web.Request) -> VolumeApi:
    return request.app[STATE]


def caller(request: web.Request) -> RequestContext:
    """The token's context. A path naming a project names the caller's own (Cinder answers any
    other with 400 "Malformed request url"); an admin may name any."""
    ctx = context(request)
    project = request.match_info.get("project_id")
    if project is not None and project != ctx.project_id and not ctx.is_admin:
        raise errors.InvalidInput("Malformed request url")
    return ctx


def base(request: web.Request) -> str:
    return api(request).settings.base_url


def all_projects(request: web.Request, ctx: RequestContext) -> bool:
    return bool(query_flag(request, "all_tenants") or query_flag(request, "all_projects")) and ctx.is_admin


def metadata_filter(request: web.Request) -> dict[str, str] | None:
    """`?metadata={"k": "v"}` (Cinder's, JSON or a Python-dict literal) → what must match."""
    raw = request.query.get("metadata")
    if raw is None:
        return None
    try:
        value = msgspec.json.decode(raw.replace("'", '"'))
    except msgspec.DecodeError:
        raise errors.InvalidInput(f"Invalid filter metadata: {raw!r} is not a JSON object.") from None
    if not isinstance(value, dict) or not all(isinstance(v, str) and isinstance(k, str)
                                              for k, v in value.items()):
        raise errors.InvalidInput(f"Invalid filter metadata: {raw!r} must map strings to strings.")
    return value


def _sort(request: web.Request, sort_keys: tuple[str, ...]) -> list[tuple[str, bool]]:
    """[(key, descending)], from `sort=k1:asc,k2` or `sort_key`/`sort_dir`; Cinder's default
    is newest first."""
    keys: list[tuple[str, str]] = []
    if "sort" in request.query:
        if "sort_key" in request.query or "sort_dir" in request.query:
            raise errors.InvalidInput("The 'sort_key' and 'sort_dir' parameters are deprecated and cannot be "
                                      "used with the 'sort' parameter.")
        for part in request.query["sort"].split(","):
            key, _, direction = part.strip().partition(":")
            keys.append((key, direction or "desc"))
    elif "sort_key" in request.query or "sort_dir" in request.query:
        keys.append((request.query.get("sort_key", "created_at"), request.query.get("sort_dir", "desc")))
    keys = keys or [("created_at", "desc")]
    out = []
    for key, direction in keys:
        key = {"display_name": "name"}.get(key, key)
        if key not in sort_keys:
            raise errors.InvalidInput(f"Invalid input received: Invalid sort key {key!r}.")
        if direction not in ("asc", "desc"):
            raise errors.InvalidInput(f"Invalid input received: Unknown sort direction {direction!r}, must be "
                                      "'desc' or 'asc'.")
        out.append((key, direction == "desc"))
    if "id" not in (k for k, _ in out):
        out.append(("id", out[0][1]))
    return out


def page(request: web.Request, rows: list[Any], sort_keys: tuple[str, ...]) -> tuple[list[Any], str | None]:
    """The rows sorted as asked, from after `marker`, at most `limit` of them, and the marker
    of the next page when there may be one (the row count of a project is bounded by its
    quota, so this sorts in memory)."""
    order = _sort(request, sort_keys)
    for key, desc in reversed(order):
        rows = sorted(rows, key=_sort_value(key), reverse=desc)
    marker = request.query.get("marker")
    if marker is not None:
        at = next((i for i, r in enumerate(rows) if str(r["id"]) == marker), None)
        if at is None:
            raise errors.NotFound(f"Marker {marker} could not be found.", code="marker_not_found")
        rows = rows[at + 1:]
    limit = query_int(request, "limit", None, minimum=0, maximum=2**31 - 1)
    if limit is not None and len(rows) > limit:
        return rows[:limit], str(rows[limit - 1]["id"]) if limit else None
    return rows, None


def _sort_value(key: str) -> Callable[[Any], Any]:
    # None sorts first ascending, as PostgreSQL's NULLS FIRST for DESC reversed.
    return lambda row: (row[key] is not None, str(row[key]) if key == "id" else row[key])


def next_link(request: web.Request, marker: str | None) -> list[dict[str, str]] | None:
    if marker is None:
        return None
    query = {k: v for k, v in request.query.items() if k != "marker"}
    query["marker"] = marker
    url = request.url.with_query(query)
    return [{"rel": "next", "href": f"{base(request)}/volume{url.path_qs.removeprefix('/volume')}"}]
