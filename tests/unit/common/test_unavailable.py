"""A database (or broker) that is away is a 503 that says when to try again, in each API's
own fault format, never a 500; and /healthz says whether the database answers."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from nova_async.api.faults import render_fault as nova_fault
from nova_async.common import errors
from nova_async.common import web as common_web
from nova_async.common.tokens import TokenCodec
from nova_async.config import Settings
from nova_async.db.health import DatabaseHealth
from nova_async.identity.routes import render_fault as keystone_fault
from nova_async.image.routes import render_fault as glance_fault
from nova_async.network.routes import render_fault as neutron_fault
from nova_async.placement.microversion import render_fault as placement_fault
from nova_async.service import build_http

GONE = "The database is unavailable (connection refused); try again shortly."


def nova(body: dict) -> str:
    return body["serviceUnavailable"]["message"]


def placement(body: dict) -> str:
    assert body["errors"][0]["status"] == 503
    return body["errors"][0]["detail"]


def keystone(body: dict) -> str:
    assert body["error"]["title"] == "Service Unavailable"
    return body["error"]["message"]


def neutron(body: dict) -> str:
    assert body["NeutronError"]["type"] == "HTTPServiceUnavailable"
    return body["NeutronError"]["message"]


@pytest.mark.parametrize("render, message_of", [
    (nova_fault, nova), (placement_fault, placement), (keystone_fault, keystone), (neutron_fault, neutron),
    (glance_fault, None)])
@pytest.mark.parametrize("error", [errors.DatabaseUnavailable(GONE), errors.BusTimeout("no answer from conductor")])
async def test_unavailable_is_a_503_with_retry_after_in_the_apis_format(render, message_of, error):
    async def handler(request: web.Request) -> web.Response:
        raise error

    app = common_web.api_app(render)
    app.router.add_get("/thing", common_web.public(handler))
    async with TestClient(TestServer(app)) as client:
        async with client.get("/thing") as resp:
            assert resp.status == 503
            assert resp.headers["Retry-After"] == common_web.RETRY_AFTER
            if message_of is None:  # Glance answers faults as text
                assert error.message in await resp.text()
            else:
                assert message_of(await resp.json()) == error.message


async def test_other_errors_say_nothing_about_retrying():
    async def handler(request: web.Request) -> web.Response:
        raise errors.Conflict("busy")

    app = common_web.api_app(nova_fault)
    app.router.add_get("/thing", common_web.public(handler))
    async with TestClient(TestServer(app)) as client:
        async with client.get("/thing") as resp:
            assert resp.status == 409 and "Retry-After" not in resp.headers


async def test_healthz_says_whether_the_database_answers_without_a_token():
    health = DatabaseHealth()
    dsn = "postgresql://nova@/nova?host=/run/nowhere"
    health.register(dsn)
    app = build_http(Settings(), [], TokenCodec(b"k" * 32), health)
    async with TestClient(TestServer(app)) as client:
        async with client.get("/healthz") as resp:
            assert resp.status == 200
            assert await resp.json() == {"status": "ok", "database": {"status": "ok"}}
        health.lost(dsn, "connection refused")
        async with client.get("/healthz") as resp:
            assert resp.status == 503 and resp.headers["Retry-After"] == common_web.RETRY_AFTER
            body = await resp.json()
            assert body["status"] == "unavailable" and body["database"]["status"] == "unreachable"
            assert body["database"]["since"].endswith("Z") and body["database"]["seconds"] >= 0
        health.reached(dsn)
        async with client.get("/healthz") as resp:
            assert resp.status == 200
