"""Compute integration tests: the real compute role on libvirt's test driver, next to fake
image/network/placement roles, on a real bus and a real database."""

from __future__ import annotations

import pytest

from nova_async import service
from tests.integration.compute import fakes


@pytest.fixture
def fake_roles(monkeypatch):
    for name, cls in (("image", "FakeImage"), ("network", "FakeNetwork"), ("placement", "FakePlacement")):
        monkeypatch.setitem(service.ROLE_CLASSES, name, f"{fakes.__name__}:{cls}")

