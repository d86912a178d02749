"""Nova's fault format: `{"itemNotFound": {"code": 404, "message": "…"}}`, keyed by status."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common import web as w

FAULT_NAMES = {400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
               405: "badMethod", 406: "computeFault", 409: "conflictingRequest", 413: "overLimit",
               415: "badMediaType", 501: "notImplemented", 503: "serviceUnavailable"}


def render_fault(err: errors.NovaAsyncError, request_id: str) -> web.Response:
    name = FAULT_NAMES.get(err.status, "computeFault")
    return w.dump({name: {"code": err.status, "message": err.message}}, err.status,
                  {"X-Compute-Request-Id": request_id} if request_id else None)
