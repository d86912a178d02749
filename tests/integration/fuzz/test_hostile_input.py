"""Bad input gets a 4xx in the API's own fault format: never a 5xx, never a dropped
connection. Random and hostile requests (hypothesis) to every route of every API on the one
port, read from the application's route tables (routes.py); strategies.py says what they
hold. Fixed cases for what this found are in test_known_cases.py."""

from __future__ import annotations

import weakref

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.integration.fuzz.cloud import Cloud
from tests.integration.fuzz.strategies import requests

APIS = {"api", "image", "network", "placement", "identity", "volume", "root"}
_STRATEGIES: weakref.WeakKeyDictionary[Cloud, dict[str, st.SearchStrategy]] = weakref.WeakKeyDictionary()


def strategy(cloud: Cloud, part: str = "all") -> st.SearchStrategy:
    """Built once per cloud and part (building is most of a draw's cost): "identity" (its
    routes), "others" (every other API's) or "all" (every route of the cloud)."""
    built = _STRATEGIES.setdefault(cloud, {})
    if part not in built:
        routes = [r for r in cloud.routes if part == "all" or (r.api == "identity") == (part == "identity")]
        built[part] = requests(routes, cloud.known, cloud.users)
    return built[part]


async def fuzz(cloud: Cloud, data: st.DataObject, identity: bool) -> None:
    req = data.draw(strategy(cloud, "identity" if identity else "others"), label="request")
    status, body = await cloud.send(req)
    # 501 is a deliberate answer (errors.NotImplementedHere: what these hypervisors cannot do,
    # as Nova answers for a driver without it), never a failure.
    assert status < 500 or status == 501, f"{status} for:\n{req}\n  answer: {body[:500]!r}"


# Each example is one request to the cloud the fixture built (destructive ones included: its
# database is this test's own). Derandomized, so a failure reproduces; no example database,
# so a run leaves nothing in the checkout; no shrinking, as every request changes the cloud
# and a replay is not the same experiment (the failing request is printed whole). Sized to
# run within about a minute, both tests, on a 2-core machine.
FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


@settings(FUZZ, max_examples=2000)
@given(data=st.data())
async def test_hostile_requests_never_get_a_5xx(cloud: Cloud, data: st.DataObject):
    """Compute, image, network, placement and /metrics."""
    await fuzz(cloud, data, identity=False)


@settings(FUZZ, max_examples=500)
@given(data=st.data())
async def test_hostile_identity_requests_never_get_a_5xx(cloud: Cloud, data: st.DataObject):
    await fuzz(cloud, data, identity=True)


async def test_every_api_is_fuzzed(cloud: Cloud):
    """The route tables were read, not guessed: every API on the port is in them."""
    assert {r.api for r in cloud.routes} == APIS
    assert len([r for r in cloud.routes if r.method != "HEAD"]) > 150
