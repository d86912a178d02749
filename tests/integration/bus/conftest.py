"""One real RabbitMQ for the bus's integration tests, started once per run in a temp dir."""

from __future__ import annotations

import pytest

from tests.rabbitmq import available, started


@pytest.fixture(scope="session")
async def rabbitmq(work_dir):
    why = available()
    if why:
        pytest.fail(why)
    async with started(work_dir / "rabbitmq") as broker:
        yield broker


@pytest.fixture
async def broker(rabbitmq):
    """The shared broker, running (a restart test may have stopped it half-way)."""
    await rabbitmq.start()
    return rabbitmq
