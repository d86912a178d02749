"""Placement microversion negotiation and the placement fault body."""

import msgspec
import pytest

from nova_async.common import errors
from nova_async.placement import microversion
from nova_async.placement.microversion import Version


@pytest.mark.parametrize("header, expected", [
    (None, (1, 0)),
    ("", (1, 0)),
    ("placement 1.29", (1, 29)),
    ("placement latest", (1, 39)),
    ("Placement 1.10", (1, 10)),
    ("compute 2.61, placement 1.17", (1, 17)),
    ("compute 2.61", (1, 0)),          # nothing said to placement
    ("placement 1.0", (1, 0)),
    ("placement 1.39", (1, 39)),
])
def test_versions_we_speak(header, expected):
    assert microversion.parse(header) == expected


@pytest.mark.parametrize("value", ["1.40", "2.0", "1.100", "0.9"])
def test_versions_we_do_not_speak_carry_our_range(value):
    with pytest.raises(microversion.VersionNotAcceptable) as caught:
        microversion.parse(f"placement {value}")
    body = msgspec.json.decode(microversion.render_fault(caught.value, "req-1").body)
    assert caught.value.status == 406
    assert body["errors"][0] == {
        "status": 406, "title": "Not Acceptable", "detail": f"Unacceptable version header: {value}",
        "code": "placement.undefined_code", "request_id": "req-1",
        "max_version": "1.39", "min_version": "1.0"}


@pytest.mark.parametrize("value", ["1.x", "1", "1.01", "one", "01.1", "1.2.3", ""])
def test_garbage_is_a_bad_request(value):
    with pytest.raises(errors.InvalidInput):
        microversion.parse(f"placement {value}")


def test_version_prints_as_clients_write_it():
    assert str(Version(1, 39)) == "1.39" and Version(1, 9) < Version(1, 10)


@pytest.mark.parametrize("error, code", [
    (errors.Conflict("x", code="placement.concurrent_update"), "placement.concurrent_update"),
    (errors.Conflict("x"), "placement.undefined_code"),
    (errors.NotFound("x"), "placement.undefined_code"),
])
def test_fault_codes(error, code):
    resp = microversion.render_fault(error, "req-2")
    fault = msgspec.json.decode(resp.body)["errors"][0]
    assert resp.status == error.status and fault["code"] == code and fault["detail"] == "x"
