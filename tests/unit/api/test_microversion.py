"""Compute microversion negotiation."""

import pytest
from aiohttp.test_utils import make_mocked_request

from nova_async.api import microversion
from nova_async.common import errors


def parse(headers):
    return microversion.parse(make_mocked_request("GET", "/", headers=headers))


@pytest.mark.parametrize("headers, expected", [
    ({}, (2, 1)),
    ({"OpenStack-API-Version": "compute 2.61"}, (2, 61)),
    ({"X-OpenStack-Nova-API-Version": "2.47"}, (2, 47)),
    ({"OpenStack-API-Version": "compute latest"}, (2, 104)),
    ({"OpenStack-API-Version": "placement 1.2, compute 2.10"}, (2, 10)),
])
def test_versions_we_speak(headers, expected):
    assert parse(headers) == expected


@pytest.mark.parametrize("value, error", [("2.105", errors.NotAcceptable), ("3.0", errors.NotAcceptable),
                                          ("2.0", errors.NotAcceptable), ("two", errors.InvalidInput)])
def test_versions_we_do_not(value, error):
    with pytest.raises(error):
        parse({"OpenStack-API-Version": f"compute {value}"})
