"""The /v2.0/security-groups and /v2.0/security-group-rules resources."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import context, dump, read_json
from nova_async.network import schemas, views
from nova_async.network import security_group_rules as rules
from nova_async.network import security_groups as groups
from nova_async.network.handlers.common import fields, many
from nova_async.network.state import STATE


async def list_security_groups(request: web.Request) -> web.Response:
    filters = groups.GroupFilters(
        ids=many(request, "id"), names=many(request, "name"), descriptions=many(request, "description"),
        project_ids=many(request, "project_id") or many(request, "tenant_id"))
    pool = request.app[STATE].pool
    rows = await groups.list_groups(pool, context(request), filters)
    found = await groups.rules_of(pool, rows)
    wanted = fields(request)
    return dump({"security_groups": [views.only(views.security_group(r, found[str(r["id"])]), wanted)
                                     for r in rows]})


async def show_security_group(request: web.Request) -> web.Response:
    pool = request.app[STATE].pool
    row = await groups.get_group(pool, context(request), request.match_info["security_group_id"])
    found = await groups.rules_of(pool, [row])
    return dump({"security_group": views.only(views.security_group(row, found[str(row["id"])]),
                                              fields(request))})


async def create_security_group(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.SECURITY_GROUP)
    pool = request.app[STATE].pool
    row = await groups.create_group(pool, ctx, body["security_group"])
    found = await groups.rules_of(pool, [row])
    return dump({"security_group": views.security_group(row, found[str(row["id"])])}, status=201)


async def update_security_group(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.SECURITY_GROUP_UPDATE)
    pool = request.app[STATE].pool
    row = await groups.update_group(pool, ctx, request.match_info["security_group_id"], body["security_group"])
    found = await groups.rules_of(pool, [row])
    return dump({"security_group": views.security_group(row, found[str(row["id"])])})


async def delete_security_group(request: web.Request) -> web.Response:
    await groups.delete_group(request.app[STATE].pool, context(request), request.match_info["security_group_id"])
    return web.Response(status=204)


async def list_security_group_rules(request: web.Request) -> web.Response:
    filters = rules.RuleFilters(
        ids=many(request, "id"), group_ids=many(request, "security_group_id"),
        directions=many(request, "direction"), ethertypes=many(request, "ethertype"),
        protocols=many(request, "protocol"), remote_group_ids=many(request, "remote_group_id"),
        project_ids=many(request, "project_id") or many(request, "tenant_id"))
    rows = await rules.list_rules(request.app[STATE].pool, context(request), filters)
    wanted = fields(request)
    return dump({"security_group_rules": [views.only(views.security_group_rule(r), wanted) for r in rows]})


async def show_security_group_rule(request: web.Request) -> web.Response:
    row = await rules.get_rule(request.app[STATE].pool, context(request), request.match_info["rule_id"])
    return dump({"security_group_rule": views.only(views.security_group_rule(row), fields(request))})


async def create_security_group_rule(request: web.Request) -> web.Response:
    ctx = context(request)
    body = await read_json(request, schemas.SECURITY_GROUP_RULE)
    row = await rules.create_rule(request.app[STATE].pool, ctx, body["security_group_rule"])
    return dump({"security_group_rule": views.security_group_rule(row)}, status=201)


async def delete_security_group_rule(request: web.Request) -> web.Response:
    await rules.delete_rule(request.app[STATE].pool, context(request), request.match_info["rule_id"])
    return web.Response(status=204)
