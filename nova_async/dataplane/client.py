"""The typed client compute uses to reach its host's data plane, and whether there is one.

The data plane of a host answers on `dataplane.<host>`: a guest's ports are served by the
data plane of the host the guest runs on (DHCP and firewall are per host)."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.config import Settings
from nova_async.dataplane import messages as m

# A pass makes namespaces, starts dnsmasq and loads rule sets: seconds at most. Longer means
# the data plane is failing, and a guest started now would have no network it can use.
PORTS_READY_TIMEOUT = 60.0


def topic(host: str) -> str:
    return f"dataplane.{host}"


def enabled(settings: Settings) -> bool:
    """Whether this process's settings make the host's networks real (`[network] dataplane`):
    `auto` when it runs real guests (the compute role, no simulated hosts, not libvirt's test
    driver)."""
    mode = settings.network.dataplane
    if mode == "on":
        return True
    if mode == "off":
        return False
    c = settings.compute
    return ("compute" in settings.service.roles and c.simulate_hosts == 0
            and not c.libvirt_uri.startswith("test:"))


def served(settings: Settings) -> bool:
    """Whether compute in this process waits for its host's data plane: the data plane runs in
    this very process (a host's data plane serves that host, so it runs beside its compute:
    `--roles compute,dataplane` on a compute host of a split deployment; a process with
    compute alone starts its guests without waiting, as before the data plane existed)."""
    return enabled(settings) and "dataplane" in settings.service.roles


class DataplaneClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def ports_ready(self, host: str, port_ids: list[str], *, timeout: float = PORTS_READY_TIMEOUT) -> None:
        await self.bus.call(topic(host), m.PortsReady(port_ids=port_ids), timeout=timeout + 5.0,
                            context=None)
