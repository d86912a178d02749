"""The volume API under the same hostile requests as the others (test_hostile_input.py),
against a cloud of the volume role alone with a volume and a snapshot to name: never a 5xx,
never a dropped connection."""

from __future__ import annotations

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nova_async.common.web import API_NAME
from tests.harness import running
from tests.integration.fuzz.cloud import Cloud
from tests.integration.fuzz.routes import enumerate_routes
from tests.integration.fuzz.test_hostile_input import FUZZ, strategy


@pytest.fixture
async def volume_cloud(pool, tmp_path):
    async with running(pool, ["volume", "image"], tmp_path) as h:  # image: imageRef is looked up
        resp = await h.http.post("/volume/v3/volumes", headers=h.alice, json={"volume": {"size": 1, "name": "v"}})
        volume = (await resp.json())["volume"]["id"]
        await h.roles["volume"].work.idle()
        resp = await h.http.post("/volume/v3/snapshots", headers=h.alice, json={"snapshot": {"volume_id": volume}})
        snapshot = (await resp.json())["snapshot"]["id"]
        await h.roles["volume"].work.idle()
        known = {"volume_id": [volume], "snapshot_id": [snapshot], "key": ["k"], "project_id": ["proj-a", "admin"],
                 "target": ["proj-a", "admin"], "type_id": ["__DEFAULT__"]}
        known["any"] = sorted({v for values in known.values() for v in values})
        routes = [r for r in enumerate_routes(h.http.app, API_NAME) if r.api == "volume"]
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True),
                                         timeout=aiohttp.ClientTimeout(total=30)) as session:
            yield Cloud(h=h, routes=routes, known=known, session=session)


@settings(FUZZ, max_examples=400)
@given(data=st.data())
async def test_hostile_volume_requests_never_get_a_5xx(volume_cloud: Cloud, data: st.DataObject):
    req = data.draw(strategy(volume_cloud), label="request")
    status, body = await volume_cloud.send(req)
    assert status < 500, f"{status} for:\n{req}\n  answer: {body[:500]!r}"
