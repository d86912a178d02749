"""The fixture every hostile-input test runs against: a whole cloud of its own (cloud.py)."""

from __future__ import annotations

import pytest

from tests.integration.fuzz.cloud import fuzz_cloud


@pytest.fixture
async def cloud(pool, tmp_path):
    async with fuzz_cloud(pool, tmp_path) as c:
        yield c
