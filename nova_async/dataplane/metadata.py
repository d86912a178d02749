"""The metadata service at 169.254.169.254, as a data-plane part.

Guests reach http://169.254.169.254/ through their network's DHCP namespace: the DHCP part
(dhcp.py) makes `qdhcp-<network id>` with a device holding the DHCP port's address and
169.254.169.254/32, and hands guests a route to 169.254.169.254 through it. This part puts a
listening socket on 169.254.169.254:80 inside each such namespace — made from this process
by a thread that enters the namespace (netns.py), no proxy process — and serves it from the
event loop with one aiohttp application per network (metadata_api.py), which is how a
request's network is known.

A listener is a socket of this process, not a kernel object that outlives it: it is not
recorded in dataplane_objects, and a restart simply makes them again. A listener goes when
its network stops needing one, when its namespace is gone, or when the namespace was made
again under the same name (the socket would be serving the old, detached one). A namespace
that is not there yet is waited for quietly: the next pass looks again (DHCP runs before
this part in a pass, so normally it is there)."""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass
from pathlib import Path

import structlog
from aiohttp import web

from nova_async.config import NetworkSettings
from nova_async.dataplane import netns
from nova_async.dataplane.desired import Desired, Network
from nova_async.dataplane.linux import HostNetworkError, check_name
from nova_async.dataplane.made import Made
from nova_async.dataplane.metadata_api import metadata_app
from nova_async.dataplane.metadata_source import Requesters
from nova_async.db.cells import Cells
from nova_async.db.pool import Pool

log = structlog.get_logger("dataplane.metadata")

ADDRESS = "169.254.169.254"
PORT = 80
# Seconds a closing listener gives requests in flight; a metadata answer takes milliseconds.
SHUTDOWN_TIMEOUT = 2.0


def namespace_of(network_id: str) -> str:
    return check_name(f"qdhcp-{network_id}", netns=True)


def serves_metadata(network: Network) -> bool:
    """Networks the DHCP part makes a namespace for: those with a DHCP-enabled IPv4 subnet."""
    return any(s.ip_version == 4 and s.enable_dhcp for s in network.subnets)


@dataclass
class _Listener:
    namespace: str
    identity: netns.Identity
    sock: socket.socket
    runner: web.AppRunner


class Metadata:
    name = "metadata"

    def __init__(self, *, pool: Pool, cells: Cells, made: Made, settings: NetworkSettings, host: str,
                 state_dir: Path, port: int = PORT) -> None:
        # `made`, `host` and `state_dir` are every part's deps; this part leaves nothing on the
        # host that outlives the process (module docstring), so it needs none of them.
        self.port = port
        self._requesters = Requesters(pool, cells, tuple(settings.dns_servers))
        self._listeners: dict[str, _Listener] = {}
        self._waiting: dict[str, str] = {}   # network id → why it has no listener yet (logged once)

    @property
    def serving(self) -> set[str]:
        """The networks with a listener."""
        return set(self._listeners)

    async def apply(self, want: Desired) -> None:
        wanted = {n.id for n in want.networks.values() if serves_metadata(n)}
        for network_id, listener in list(self._listeners.items()):
            if network_id not in wanted:
                await self._stop(network_id, "its network no longer needs one")
            elif netns.identity(listener.namespace) != listener.identity:
                await self._stop(network_id, f"namespace {listener.namespace} is gone or was made again")
        for network_id in list(self._waiting):
            if network_id not in wanted:
                del self._waiting[network_id]
        failures = []
        for network_id in sorted(wanted - self._listeners.keys()):
            try:
                await self._start(network_id)
            except netns.NamespaceMissing:
                self._wait(network_id, f"namespace {namespace_of(network_id)} is not there yet")
            except OSError as exc:
                self._wait(network_id, str(exc))
                failures.append(f"{namespace_of(network_id)}: {exc}")
        if failures:
            raise HostNetworkError(f"no metadata listener in {'; '.join(failures)}")

    async def close(self) -> None:
        for network_id in list(self._listeners):
            await self._stop(network_id, "the service is stopping")

    async def _start(self, network_id: str) -> None:
        namespace = namespace_of(network_id)
        sock, identity = await netns.listening_socket(namespace, ADDRESS, self.port)
        runner = web.AppRunner(metadata_app(self._requesters, network_id), handle_signals=False,
                               access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
        try:
            await runner.setup()
            await web.SockSite(runner, sock).start()
        except BaseException:
            with contextlib.suppress(Exception):
                await runner.cleanup()
            sock.close()
            raise
        self._listeners[network_id] = _Listener(namespace, identity, sock, runner)
        self._waiting.pop(network_id, None)
        log.info("metadata service listening", network_id=network_id, namespace=namespace,
                 address=f"{ADDRESS}:{self.port}")

    async def _stop(self, network_id: str, why: str) -> None:
        listener = self._listeners.pop(network_id)
        try:
            await listener.runner.cleanup()
        finally:
            listener.sock.close()   # the server closed it already; this is for a cleanup that failed
        log.info("metadata service stopped listening", network_id=network_id, namespace=listener.namespace,
                 why=why)

    def _wait(self, network_id: str, why: str) -> None:
        if self._waiting.get(network_id) != why:
            log.info("metadata service waits for its namespace", network_id=network_id, why=why)
        self._waiting[network_id] = why

