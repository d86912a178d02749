"""The data-plane role: runs the reconciler on hosts whose guests need real networks
(`[network] dataplane`: auto = this process runs real guests; on; off), and answers
compute's PortsReady on `dataplane.<host>`.

Disabled, the role only waits to be stopped: no LISTEN, no bus topic, nothing on the host —
the many services with simulated hosts see no difference and pay nothing.

The parts, in the order a pass applies them (`build_parts`), each built from the PartDeps
(reconcile.py) every part shares."""

from __future__ import annotations

import asyncio
import socket

import structlog

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.dataplane import client
from nova_async.dataplane import messages as m
from nova_async.dataplane.desired import Desired
from nova_async.dataplane.dhcp import DhcpPart
from nova_async.dataplane.external import ExternalNetworks
from nova_async.dataplane.firewall import Firewall
from nova_async.dataplane.made import Made
from nova_async.dataplane.metadata import Metadata
from nova_async.dataplane.reconcile import Part, PartDeps, Reconciler
from nova_async.dataplane.routers import Routers
from nova_async.db.embedded import become_subreaper
from nova_async.network.client import NetworkClient
from nova_async.role import Deps, Role

log = structlog.get_logger("dataplane")

def build_parts(d: PartDeps) -> list[Part]:
    """The parts in the order a pass applies them: bridges and DHCP first (every other part
    plugs into a network's bridge, and the metadata listeners live in DHCP's namespaces),
    external bridges before the routers whose gateways plug into them, the firewall last
    (it filters what the others wired)."""
    return [
        DhcpPart(d),
        ExternalNetworks(made=d.made, settings=d.settings),
        Metadata(pool=d.pool, cells=d.cells, made=d.made, settings=d.settings, host=d.host,
                 state_dir=d.state_dir),
        Routers(made=d.made, host=d.host),
        Firewall(pool=d.pool, made=d.made, settings=d.settings, host=d.host, state_dir=d.state_dir),
    ]


async def tear_down(d: PartDeps) -> None:
    """Everything this host's data plane made, removed: each part, last first, applied to a
    desired state that wants nothing — the code recovery runs, so exactly what
    `dataplane_objects` lists goes, and nothing else (a host taken out of service; a test
    done with its service)."""
    for part in reversed(build_parts(d)):
        await part.apply(Desired())
        await part.close()


class DataplaneRole(Role):
    name = "dataplane"
    # Stops after compute (tier 0), which may be waiting for PortsReady, and before the
    # network role (tier 2) its parts call.
    stop_tier = 1
    ports_ready_timeout = client.PORTS_READY_TIMEOUT

    def __init__(self, deps: Deps) -> None:
        super().__init__(deps)
        self.enabled = client.enabled(self.settings)
        self.host = self.settings.compute.host or socket.gethostname()
        self.reconciler: Reconciler | None = None
        self.handlers = {m.PortsReady: self._ports_ready}

    async def run(self) -> None:
        if not self.enabled:
            self.ready.set()
            await self.stopping.wait()
            return
        # dnsmasq and the like are our children; what they leave behind comes to us, not init.
        become_subreaper()
        state_dir = (self.deps.state_dir / "dataplane").resolve()
        state_dir.mkdir(parents=True, exist_ok=True)
        self.reconciler = reconciler = Reconciler(self.pool, [])
        part_deps = PartDeps(pool=self.pool, cells=self.cells, made=Made(self.pool, self.host),
                             settings=self.settings.network, host=self.host, state_dir=state_dir,
                             network=NetworkClient(self.bus), bus=self.bus, poke=reconciler.poke)
        parts = build_parts(part_deps)
        reconciler.parts = parts
        structlog.contextvars.bind_contextvars(host=self.host)
        log.info("data plane on", parts=",".join(p.name for p in parts), state_dir=str(state_dir))
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.reconciler.run(self.stopping), name="dataplane:reconciler")
            # Ready once the pass at start (recovery) is over, clean or not.
            await self.reconciler.settled()
            self.ready.set()
            tg.create_task(self.serve(client.topic(self.host), self.dispatch), name="dataplane:consume")

    async def _ports_ready(self, msg: m.PortsReady, ctx: RequestContext) -> None:
        reconciler = self.reconciler
        if reconciler is None:
            raise errors.Unavailable(f"the data plane of host {self.host} is not running")
        try:
            async with asyncio.timeout(self.ports_ready_timeout):
                # A pass that read the ports bound to this host serves them as the build bound
                # them: the one their binding's NOTIFY set off, usually under way by now.
                outcome = await reconciler.serving(lambda want: all(
                    (port := want.ports.get(port_id)) is not None and port.binding_host == self.host
                    for port_id in msg.port_ids))
                while not outcome.clean:
                    # The reconciler retries on its own, with backoff; wait for its next pass.
                    outcome = await reconciler.settled(ask=False)
        except TimeoutError:
            raise errors.Unavailable(
                f"the data plane of host {self.host} could not make ports {', '.join(msg.port_ids)} ready "
                f"within {self.ports_ready_timeout:g} s: {reconciler.last.describe() or 'no pass finished'}",
                code="dataplane_not_ready") from None
