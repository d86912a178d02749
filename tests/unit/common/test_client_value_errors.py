"""The backstop in error_middleware: PostgreSQL's refusal of a value the client chose is that
client's 400, in the API's fault format; any other database error is still a logged 500."""

from __future__ import annotations

import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from nova_async.api.faults import render_fault
from nova_async.common import web as w


def _raising(exc: Exception):
    @w.public
    async def handler(request: web.Request) -> web.Response:
        raise exc
    return handler


@pytest.mark.parametrize("exc,status", [
    (asyncpg.NumericValueOutOfRangeError("integer out of range"), 400),
    (asyncpg.StringDataRightTruncationError("value too long for type character varying(255)"), 400),
    (asyncpg.InvalidTextRepresentationError('invalid input syntax for type uuid: "x"'), 400),
    (asyncpg.CharacterNotInRepertoireError('invalid byte sequence for encoding "UTF8": 0x00'), 400),
    (asyncpg.DataError("invalid input for query argument $1: 3000000000 (value out of int32 range)"), 400),
    (asyncpg.DivisionByZeroError("division by zero"), 500),       # our arithmetic, not their value
    (asyncpg.UniqueViolationError("duplicate key"), 500),
])
async def test_database_refusals_of_client_values_are_400s(exc, status):
    root = web.Application(middlewares=[w.request_middleware])
    app = w.api_app(render_fault)
    app.router.add_get("/thing", _raising(exc))
    root.add_subapp("/compute", app)
    async with TestClient(TestServer(root)) as client:
        resp = await client.get("/compute/thing")
        assert resp.status == status
        body = await resp.json()
        fault = body["badRequest" if status == 400 else "computeFault"]
        assert fault["code"] == status
        if status == 400:
            assert str(exc) in fault["message"]
