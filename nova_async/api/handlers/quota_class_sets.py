"""`os-quota-class-sets`: the limits of a quota class. The class "default" holds what every
project without a limit of its own gets (in place of the `[quota]` settings); other classes
are kept and shown, and apply to no project, as in Nova. Admin only. The fields follow the
microversion: the nova-network ones until 2.49, server groups from 2.50, personality files
until 2.56."""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from nova_async.api import microversion, quotas
from nova_async.api.policy import require_admin
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w

_LIMIT = {"type": "integer", "minimum": -1, "maximum": 2**31 - 1}
_GROUPS = ("server_groups", "server_group_members")


def _names(version) -> list[str]:
    names = [r for r in quotas.RESOURCES if version >= (2, 50) or r not in _GROUPS]
    if version < (2, 57):
        names += list(quotas.FILES)
    if version < (2, 50):
        names += list(quotas.NETWORK)
    return names


@functools.cache   # one validator per microversion, not one per request
def _schema(version) -> Any:
    return w.validator({"type": "object", "required": ["quota_class_set"], "additionalProperties": False,
                        "properties": {"quota_class_set": {
                            "type": "object", "properties": {n: _LIMIT for n in _names(version)},
                            "additionalProperties": False}}})


def _shown(limits: dict[str, int], version) -> dict[str, Any]:
    extra = {**quotas.FILES, **quotas.NETWORK}
    return {n: limits.get(n, extra.get(n)) for n in _names(version)}


async def show_class(request: web.Request) -> web.Response:
    require_admin(request)
    state = request.app[STATE]
    name = request.match_info["class_name"]
    limits = await quotas.class_limits(state.pool, state.settings.quota, name)
    return w.dump({"quota_class_set": {"id": name, **_shown(limits, microversion.of(request))}})


async def update_class(request: web.Request) -> web.Response:
    require_admin(request)
    version = microversion.of(request)
    name = request.match_info["class_name"]
    if len(name) > 255:
        raise errors.InvalidInput("A quota class name is at most 255 characters.")
    body = (await w.read_json(request, _schema(version)))["quota_class_set"]
    state = request.app[STATE]
    limits = await quotas.set_class_limits(state.pool, state.settings.quota, name, body)
    return w.dump({"quota_class_set": _shown(limits, version)})
