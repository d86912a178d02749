"""`POST /os-server-external-events`: what other services tell compute about a server
(Neutron's `network-vif-plugged`, Cinder's `volume-extended`, ...), callable by the `service`
role or an admin, as Nova's policy has it.

Nova forwards each accepted event to the server's host. Here the network and volume roles
run beside compute and write what changed to the database compute reads, so no host waits
for these events: an accepted event is acknowledged and logged. The answer is Nova's per
event: 200 for a server on a host, 404 for an unknown one, 422 for one with no host yet, 400
when an event that needs a tag has none; any of those makes the whole answer a 207.
"""

from __future__ import annotations

import functools

import structlog
from aiohttp import web

from nova_async.api import lookup, microversion
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.common.context import admin_context

log = structlog.get_logger("api")

# Event names, each from the microversion that added it.
_NAMES = (((2, 1), "network-changed"), ((2, 1), "network-vif-plugged"), ((2, 1), "network-vif-unplugged"),
          ((2, 1), "network-vif-deleted"), ((2, 51), "volume-extended"), ((2, 76), "power-update"),
          ((2, 82), "accelerator-request-bound"), ((2, 93), "volume-reimaged"))
_TAG_REQUIRED = frozenset({"volume-extended", "power-update", "accelerator-request-bound"})


@functools.cache
def _validator(version: microversion.Version):
    """The body's schema at `version` (the event names it knows), built once per version."""
    return w.validator({
        "type": "object", "required": ["events"], "additionalProperties": False,
        "properties": {"events": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "server_uuid"], "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "enum": [n for since, n in _NAMES if version >= since]},
                "server_uuid": {"type": "string", "format": "uuid"},
                "status": {"type": "string", "enum": ["failed", "completed", "in-progress"]},
                "tag": {"type": "string", "maxLength": 255}}}}}})


@w.readers_too  # the service role alone may call it; checked below
async def create_events(request: web.Request) -> web.Response:
    ctx = w.context(request)
    if not ({"service", "admin"} & set(ctx.roles)):
        raise errors.Forbidden("Policy doesn't allow os_compute_api:os-server-external-events:create "
                               "to be performed.")
    body = await w.read_json(request, _validator(microversion.of(request)))
    state, everyone = request.app[STATE], admin_context(ctx.request_id)
    status, out = 200, []
    for event in body["events"]:
        answer = {**event, "status": event.get("status", "completed")}
        try:
            _, row = await lookup.visible_instance(state, everyone, event["server_uuid"])
        except errors.NotFound:
            row = None
        if row is None:
            answer.update(status="failed", code=404)
        elif event["name"] in _TAG_REQUIRED and "tag" not in event:
            answer.update(status="failed", code=400)
        elif not row["host"]:
            answer.update(status="failed", code=422)
        else:
            answer.update(status="completed", code=200)
            log.info("external event", name=event["name"], tag=event.get("tag"),
                     server=event["server_uuid"], host=row["host"])
        status = status if answer["code"] == 200 else 207
        out.append(answer)
    return w.dump({"events": out}, status=status)

