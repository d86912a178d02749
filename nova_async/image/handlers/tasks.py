"""/v2/tasks (Glance's tasks API): create an import task, list tasks, show one.

Glance's default policy keeps the whole API to admins (`tasks_api_access` is role:admin;
get_task, get_tasks and add_task are rule:default behind it), so anyone else gets a 403.
A task is deleted only by its expiry: DELETE has no route, so it is a 405, as in Glance."""

from __future__ import annotations

from urllib.parse import urlencode

from aiohttp import web

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.common.web import context, dump, parse_uuid, query_int, read_body
from nova_async.image import tasks, views
from nova_async.image.state import STATE


def _admin_only(request: web.Request) -> RequestContext:
    ctx = context(request)
    if not ctx.is_admin:
        raise errors.Forbidden("You are not authorized to use the tasks API (tasks_api_access).")
    return ctx


def _filters(request: web.Request) -> tasks.TaskFilters:
    q = request.query
    kind, status = q.get("type"), q.get("status")
    if kind is not None and kind not in tasks.TYPES:
        raise errors.InvalidInput(f"Invalid type value: {kind}")
    if status is not None and status not in tasks.STATUSES:
        raise errors.InvalidInput(f"Invalid status value: {status}")
    sort_key, sort_dir = q.get("sort_key", "created_at"), q.get("sort_dir", "desc")
    if sort_key not in tasks.SORT_KEYS:
        raise errors.InvalidInput(f"Invalid sort key: {sort_key}. It must be one of: "
                                  f"{', '.join(tasks.SORT_KEYS)}.")
    if sort_dir not in ("asc", "desc"):
        raise errors.InvalidInput(f"Invalid sort direction: {sort_dir}")
    marker = q.get("marker")
    if marker is not None and parse_uuid(marker) is None:
        raise errors.InvalidInput("Invalid marker format")
    limit = query_int(request, "limit", tasks.DEFAULT_LIMIT)
    return tasks.TaskFilters(type=kind, status=status, sort_key=sort_key, sort_dir=sort_dir,
                             marker=None if marker is None else parse_uuid(marker),
                             limit=min(limit, tasks.MAX_LIMIT))


async def create_task(request: web.Request) -> web.Response:
    ctx = _admin_only(request)
    kind, task_input = tasks.check_new(await read_body(request))
    state = request.app[STATE]
    row = await tasks.create(state.pool, ctx, state.work, state.files, state.size_cap, kind, task_input)
    return dump(views.task(row), status=201,
                headers={"Location": f"{state.base_url}/image/v2/tasks/{row['id']}"})


async def list_tasks(request: web.Request) -> web.Response:
    ctx = _admin_only(request)
    f = _filters(request)
    rows = await tasks.list_tasks(request.app[STATE].pool, ctx, f)
    next_link = None
    if rows and len(rows) == f.limit:
        params = [(k, v) for k, v in request.query.items() if k != "marker"]
        next_link = f"/v2/tasks?{urlencode([*params, ('marker', str(rows[-1]['id']))])}"
    first = [(k, v) for k, v in request.query.items() if k != "marker"]
    return dump(views.task_list(rows, f"/v2/tasks?{urlencode(first)}" if first else "/v2/tasks", next_link))


async def show_task(request: web.Request) -> web.Response:
    ctx = _admin_only(request)
    return dump(views.task(await tasks.get(request.app[STATE].pool, ctx, request.match_info["task_id"])))

