"""The `resources=` query parameter of allocation candidates."""

import pytest

from nova_async.common import errors
from nova_async.placement.candidates import parse_resources


@pytest.mark.parametrize("text, expected", [
    ("VCPU:1", {"VCPU": 1}),
    ("VCPU:1,MEMORY_MB:512,DISK_GB:10", {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10}),
    ("CUSTOM_GPU:2", {"CUSTOM_GPU": 2}),
    (" VCPU:1 , MEMORY_MB:512", {"VCPU": 1, "MEMORY_MB": 512}),
])
def test_good(text, expected):
    assert parse_resources(text) == expected


@pytest.mark.parametrize("text, why", [
    ("", "Badly formed"),
    ("VCPU", "Badly formed"),
    ("VCPU:x", "Badly formed"),
    ("VCPU:-1", "Badly formed"),
    ("vcpu:1", "Badly formed"),
    ("VCPU:0", "positive|from 1"),
    ("VCPU:99999999999", "from 1"),
    ("VCPU:1,VCPU:2", "more than once"),
])
def test_bad(text, why):
    with pytest.raises(errors.InvalidInput, match=why) as caught:
        parse_resources(text)
    assert caught.value.code.startswith("placement.query.")
