"""When a process runs the data plane, and when its compute waits for it."""

from __future__ import annotations

import pytest

from nova_async import config
from nova_async.dataplane.client import enabled, served


def settings(**over):
    return config.load(None, {tuple(k.split(".")): v for k, v in over.items()})


@pytest.mark.parametrize(("over", "on", "waits"), [
    ({}, True, True),                                                    # real guests, every role here
    ({"compute.simulate_hosts": 2}, False, False),
    ({"compute.libvirt_uri": "test:///default"}, False, False),
    ({"service.roles": ("network", "dataplane")}, False, False),         # no compute here: auto is off
    ({"network.dataplane": "on", "compute.simulate_hosts": 2}, True, True),
    ({"network.dataplane": "off"}, False, False),
    # Compute waits only for a data plane in its own process (the one of its host).
    ({"service.roles": ("compute", "network")}, True, False),
    ({"service.roles": ("compute",), "service.transport": "amqp://u:p@h:5672/"}, True, False),
    ({"service.roles": ("compute", "dataplane"), "service.transport": "amqp://u:p@h:5672/"}, True, True),
])
def test_enabled_and_served(over, on, waits):
    s = settings(**over)
    assert (enabled(s), served(s)) == (on, waits)


def test_a_bad_mode_is_refused():
    with pytest.raises(config.ConfigError):
        settings(**{"network.dataplane": "maybe"})
