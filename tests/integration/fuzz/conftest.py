"""The fixture every hostile-input test runs against: a whole cloud of its own (cloud.py).

Hypothesis caches what it learns (unicode tables, constants it reads from the source) in
.hypothesis/ under the working directory from the moment a test module here is collected,
example database or not; pointed instead at a directory of this process' own, removed at exit,
so that a run writes nothing into the checkout."""

from __future__ import annotations

import atexit
import shutil
import tempfile

import pytest
from hypothesis import configuration

from tests.integration.fuzz.cloud import fuzz_cloud

_HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="nova-async-hypothesis-")
atexit.register(shutil.rmtree, _HYPOTHESIS_HOME, ignore_errors=True)
configuration.set_hypothesis_home_dir(_HYPOTHESIS_HOME)


@pytest.fixture
async def cloud(pool, tmp_path):
    async with fuzz_cloud(pool, tmp_path) as c:
        yield c
