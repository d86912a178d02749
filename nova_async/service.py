"""The supervisor: one process, every configured role a named task in one TaskGroup.

Start-up: database (private cluster or DSN) → migrations (expand, then contract when no
live service of an older release needs what it takes away: db/migrate.py) → bus → roles → HTTP → first-start
steps (the demo guest's images, the Debian cloud image's, the external network) → ready
line, and READY=1 to systemd (common/systemd.py: STATUS= on the way, STOPPING=1 at shutdown,
watchdog pings from the loop throughout).
Shutdown (SIGTERM/SIGINT), one deadline for all of it: stop HTTP intake → stop bus intake
and tell roles to stop → let them drain → cancel what is left → stop watching the database
→ close resources in reverse order (the AsyncExitStack).

The conductor and scheduler roles of the process have service records of their own, kept
up by a heartbeat beside the roles (common/service_records.py), so that os-services lists
every copy; the compute role keeps its hosts' records itself.

The database is watched beside the roles, in the same TaskGroup (db/health.py): a probe,
and for the private cluster its supervisor (db/embedded.py), which starts it again when it
dies and ends the service when it keeps dying. While the database is away requests answer
503 with Retry-After, /healthz says so, STATUS= says since when, and once that has lasted
longer than service.database_outage_limit the watchdog is no longer fed, so that systemd
restarts a service whose database is gone for good."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import secrets
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from nova_async import __version__
from nova_async.bus import Bus
from nova_async.bus.caps import VersionCaps
from nova_async.bus.memory import MemoryBus
from nova_async.common import errors, malloc, metrics, service_records, systemd
from nova_async.common import web as common_web
from nova_async.common.service_records import ServiceRecords
from nova_async.common.tokens import TokenCodec
from nova_async.compute import cloud_image
from nova_async.compute.simhosts import host_names
from nova_async.compute.guest_image import default_cache_dir, load_cached
from nova_async.config import ALL_ROLES, Settings
from nova_async.db.cells import adopt_legacy_instances, open_cells
from nova_async.db.embedded import EmbeddedPostgres, embedded_postgres
from nova_async.db.health import DatabaseHealth
from nova_async.db.migrate import Gate, migrate
from nova_async.db.pool import open_pool
from nova_async.db.queries import queries
from nova_async.db.session_locks import SessionLocks
from nova_async.hooks import runner as hook_runner
from nova_async.identity import revocations
from nova_async.image import cloud, demo
from nova_async.image.blobs import BuiltFile
from nova_async.network import external
from nova_async.notifications.feed import Feed
from nova_async.role import Deps, Role

log = structlog.get_logger("service")
SQ = queries("service")

ROLE_CLASSES = {
    "identity": "nova_async.identity.role:IdentityRole",
    "image": "nova_async.image.role:ImageRole",
    "network": "nova_async.network.role:NetworkRole",
    "volume": "nova_async.volume.role:VolumeRole",
    "placement": "nova_async.placement.role:PlacementRole",
    "api": "nova_async.api.role:ComputeApiRole",
    "conductor": "nova_async.conductor.role:ConductorRole",
    "scheduler": "nova_async.scheduler.role:SchedulerRole",
    "compute": "nova_async.compute.role:ComputeRole",
    "dataplane": "nova_async.dataplane.role:DataplaneRole",
}


def role_class(name: str) -> type[Role]:
    module, _, attr = ROLE_CLASSES[name].partition(":")
    return getattr(importlib.import_module(module), attr)


async def _token_key(pool) -> bytes:
    """The token signing key: made once, shared by every process on this database."""
    await pool.execute(SQ.ensure_key, "token", secrets.token_bytes(32))
    return await pool.fetchval(SQ.get_key, "token")


def built_file(path: Path, facts: dict[str, dict[str, Any]], virtual_size: int | None = None) -> BuiltFile:
    """One of a built guest's files with the size and hashes its build recorded (`facts`, by
    file name), for the image service to adopt."""
    f = facts[path.name]
    return BuiltFile(path=path, size=f["size"], md5=f["md5"], sha512=f["sha512"], virtual_size=virtual_size)


async def register_demo_guest(pool, roles: list[Role]) -> None:
    """Once per database: the demo guest as images, so that a fresh install can boot something.
    Skipped (and tried again next start) while the guest has not been built."""
    image_role = next((r for r in roles if r.name == "image"), None)
    if image_role is None or await pool.fetchval(SQ.step_done, "demo-guest"):
        return
    guest = load_cached(default_cache_dir())
    if guest is None:
        log.info("the demo guest is not built yet; `make guest-image` builds it and the next start "
                 "registers it", cache=str(default_cache_dir()))
        return
    try:
        await demo.register(pool, image_role.files, built_file(guest.kernel, guest.facts),
                            built_file(guest.initrd, guest.facts))
    except Exception:
        log.exception("could not register the demo guest's images; trying again next start")
        return
    await pool.execute(SQ.mark_step_done, "demo-guest")


async def make_external_network(pool, settings: Settings, roles: list[Role]) -> None:
    """Once per database, where the network role runs: the external network the settings
    describe (network/external.py). A setting it cannot use is logged, and tried again next
    start; the service serves without it meanwhile."""
    if not any(r.name == "network" for r in roles):
        return
    try:
        await external.ensure(pool, settings.network)
    except errors.InvalidInput as exc:
        log.error("cannot make the external network; fix [network] external_cidr / external_gateway",
                  error=exc.message)


async def register_cloud_image(pool, roles: list[Role]) -> None:
    """Once per database: the Debian cloud image (`make cloud-image`) as the public image
    debian-cloud with its kernel and ramdisk. Skipped (and tried again next start) while it
    has not been built."""
    image_role = next((r for r in roles if r.name == "image"), None)
    if image_role is None or await pool.fetchval(SQ.step_done, "cloud-image"):
        return
    built = cloud_image.find_cached()
    if built is None:
        log.info("the Debian cloud image is not built yet; `make cloud-image` builds it and the next "
                 "start registers it as debian-cloud", cache=str(cloud_image.default_cache_dir()))
        return

    try:
        await cloud.register(pool, image_role.files, built_file(built.kernel, built.facts),
                             built_file(built.initrd, built.facts),
                             built_file(built.disk, built.facts, built.virtual_size), built.properties(),
                             min_disk=built.min_disk_gb, min_ram=cloud_image.MIN_RAM_MB)
    except Exception:
        log.exception("could not register the Debian cloud image; trying again next start")
        return
    await pool.execute(SQ.mark_step_done, "cloud-image")


def migration_gate(settings: Settings) -> Gate:
    """What may hold this start's contract migrations back (db/migrate.py): the live services
    of an older release, but this process's own, whose records are about to be replaced
    (its compute hosts', and its conductor's and scheduler's: common/service_records.py).
    So `make run` upgrades a single box in place."""
    own = tuple(host_names(settings)) if "compute" in settings.service.roles else ()
    if any(role in service_records.RECORDED for role in settings.service.roles):
        own += (service_records.process_host(settings),)   # its conductor's and scheduler's
    return Gate(down_time=settings.scheduler.service_down_time, replacing=own)


HEALTH = web.AppKey("health", DatabaseHealth)


async def show_health(request: web.Request) -> web.Response:
    """/healthz: whether this process can work, for load balancers and readiness checks. No
    token, and nothing about any project: only whether the database answers."""
    outage = request.app[HEALTH].outage()
    if outage is None:
        return common_web.dump({"status": "ok", "database": {"status": "ok"}})
    return common_web.dump({"status": "unavailable", "database": {
        "status": "unreachable", "since": outage.since_text(), "seconds": round(outage.seconds(), 1)}},
        status=503, headers={"Retry-After": common_web.RETRY_AFTER})


def build_http(settings: Settings, roles: list[Role], tokens: TokenCodec, health: DatabaseHealth) -> web.Application:
    root = web.Application(middlewares=[common_web.request_middleware])
    root[common_web.AUTHENTICATOR] = common_web.Authenticator(settings.identity.auth, tokens)
    root[HEALTH] = health
    root.router.add_get("/metrics", common_web.show_metrics)
    metrics.node_is(settings.compute.host or socket.gethostname(), settings.service.listen,
                    [r.name for r in roles], __version__)
    root.router.add_get("/healthz", show_health)
    for role in roles:
        root.router.add_routes(role.root_routes())
        mounted = role.http()
        if mounted:
            prefix, app = mounted
            app[common_web.API_NAME] = role.name
            root.add_subapp(prefix, app)
    return root


async def drain(roles: list[Role], tasks: list[asyncio.Task], deadline: float) -> None:
    """Stop roles tier by tier, so that work in flight can still call the services it needs;
    whatever has not finished by the deadline is cancelled."""
    for tier in sorted({r.stop_tier for r in roles}):
        members = [(r, t) for r, t in zip(roles, tasks) if r.stop_tier == tier]
        for role, _ in members:
            role.stopping.set()
        _, pending = await asyncio.wait([t for _, t in members],
                                        timeout=max(0.01, deadline - time.monotonic()))
        for task in pending:
            log.warning("role did not drain in time; cancelling", task=task.get_name())
            task.cancel()


async def _run_role(role: Role) -> None:
    structlog.contextvars.bind_contextvars(role=role.name)
    await role.run()


class RoleTasks:
    """Built roles running, each a named task of the caller's TaskGroup with its name bound
    in its log context: waited for until every one is ready, and stopped tier by tier, then
    the bus's intake. The service runs its configured roles so; tests/harness.py runs the
    roles a test chose through the same class, with a test HTTP server in front."""

    def __init__(self, tg: asyncio.TaskGroup, roles: list[Role]) -> None:
        self.roles = roles
        self.tasks = [tg.create_task(_run_role(role), name=f"role:{role.name}") for role in roles]

    async def ready(self, waiting: Callable[[Role], None] = lambda role: None) -> None:
        """Until all are ready, one by one: `waiting` hears of each that is not yet."""
        for role in self.roles:
            if not role.ready.is_set():
                waiting(role)
                await role.ready.wait()

    async def stop(self, bus: Bus, deadline: float) -> None:
        await drain(self.roles, self.tasks, deadline)
        bus.stop_intake()


class Service:
    # serve() hands over the one that systemd's environment asked for.
    notifier: systemd.Notifier = systemd.DISABLED

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stop_requested = asyncio.Event()
        self.health = DatabaseHealth()

    def withhold_watchdog(self) -> str | None:
        """Why the systemd watchdog should not be fed now, if it should not."""
        away, limit = self.health.unreachable_for(), self.settings.service.database_outage_limit
        if away > limit:
            return (f"the database has been unreachable for {away:.0f} s, longer than "
                    f"service.database_outage_limit ({limit:g} s)")
        return None

    def request_stop(self) -> None:
        self.stop_requested.set()

    async def run(self) -> None:
        settings = self.settings
        started = time.monotonic()
        # First: a plugin that cannot be used is a mistake in the config, told before anything starts.
        hooks = hook_runner.load(settings.hooks.enabled, settings.hooks.post_timeout,
                                  settings.hooks.pre_timeout)
        settings.state_path.mkdir(parents=True, exist_ok=True)
        async with contextlib.AsyncExitStack() as stack:
            dsn = settings.service.database
            pg = None
            if not dsn:
                pg = await stack.enter_async_context(embedded_postgres(settings.state_path))
                dsn = pg.dsn
            pool = await stack.enter_async_context(open_pool(dsn, health=self.health))
            gate = migration_gate(settings)
            async with pool.acquire() as conn:
                await migrate(conn, gate=gate)
            cells = await stack.enter_async_context(open_cells(pool, dsn, gate=gate))
            await adopt_legacy_instances(cells)
            bus: Bus
            if settings.service.transport == "memory":
                bus = MemoryBus()
                missing = [r for r in ALL_ROLES if r not in settings.service.roles]
                if missing:
                    # In-memory messages never leave this process: calls to these roles time out.
                    log.warning("running without some roles on the in-memory bus; what they serve "
                                "will not answer", missing=",".join(missing))
            else:
                from nova_async.bus.amqp import AmqpBus  # aio-pika takes ~0.5 s to import: only when used

                # Closed after the roles have stopped, before the database pool.
                bus = await stack.enter_async_context(AmqpBus(settings.service.transport,
                                                              quorum=settings.service.rabbit_quorum_queue))
                # Split over processes, maybe of different releases: sends honour the
                # receivers' caps (bus/caps.py).
                bus.caps = VersionCaps(pool)
            bus.call_timeout = settings.service.rpc_response_timeout
            locks = SessionLocks(dsn, health=self.health, name=f"nova-async {settings.compute.host or 'locks'}")
            stack.push_async_callback(locks.close)   # after the roles have stopped
            # This run's own lock, before any work records it as its worker (an upload, a
            # volume being made): other copies leave that work alone while it is held.
            await locks.open()
            deps = Deps(settings=settings, pool=pool, bus=bus, tokens=TokenCodec(await _token_key(pool)),
                        cells=cells, hooks=hooks, feed=Feed(bus, file=settings.notifications.file), locks=locks)
            hooks.follow(deps.feed)
            if "identity" not in settings.service.roles:
                # The identity role keeps the revoked-token list current where it runs; a process
                # that checks tokens without it follows the database itself.
                await stack.enter_async_context(revocations.following(pool, deps.tokens.revocations))
            roles = [role_class(name)(deps) for name in settings.service.roles]
            await self._supervise(roles, bus, deps, started, pg)

    async def _supervise(self, roles: list[Role], bus: Bus, deps: Deps, started: float,
                         pg: EmbeddedPostgres | None) -> None:
        settings = self.settings
        notifier = self.notifier
        notifier.status("starting roles: " + ", ".join(r.name for r in roles))
        runner = web.AppRunner(build_http(settings, roles, deps.tokens, self.health), access_log=None,
                               handle_signals=False, shutdown_timeout=settings.service.shutdown_timeout)
        async with asyncio.TaskGroup() as tg:
            # First and last: the roles need the database while they start and while they drain.
            watching = [tg.create_task(self.health.watch(), name="db:probe")]
            if deps.locks is not None:
                watching.append(tg.create_task(deps.locks.watch(), name="db:locks"))
            records = ServiceRecords(deps.pool, bus, settings)
            try:
                await records.register()
            except Exception as exc:   # kept trying by keep_up: the roles need not wait for it
                log.warning("cannot write this process's service records yet", error=str(exc))
            watching.append(tg.create_task(records.keep_up(), name="service:records"))
            if pg is not None:
                watching.append(tg.create_task(
                    pg.supervise(self.health, deaths=settings.service.private_database_deaths,
                                 window=settings.service.private_database_window),
                    name="db:private-postgres"))
            # Started before the roles, stopped after them: what they say last is handed out too.
            feed_stop = asyncio.Event()
            feeding = tg.create_task(deps.feed.run(feed_stop), name="notifications:feed") if deps.feed else None
            running = RoleTasks(tg, roles)
            await runner.setup()
            host, _, port = settings.service.listen.rpartition(":")
            site = web.TCPSite(runner, host.strip("[]") or None, int(port), reuse_address=True)
            try:
                await site.start()
            except OSError as exc:
                log.error("cannot listen", listen=settings.service.listen, error=exc.strerror)
                raise SystemExit(f"nova-async: cannot listen on {settings.service.listen}: {exc.strerror}")
            # One by one: all must be ready, and the status names the laggard.
            await running.ready(lambda role: notifier.status(
                f"listening at {settings.base_url}; waiting for role {role.name}"))
            if settings.image.demo_guest:
                await register_demo_guest(deps.pool, roles)
            if settings.image.cloud_image:
                await register_cloud_image(deps.pool, roles)
            await make_external_network(deps.pool, settings, roles)
            login = ("any token (see README: noauth)" if settings.identity.auth == "noauth" else
                     "user admin, project admin, password " + (
                         "from --admin-password" if settings.identity.admin_password
                         else f"in {settings.state_path / 'admin-password'}"))
            ready = f"ready at {settings.base_url}, roles {','.join(r.name for r in roles)}"
            notifier.ready(ready)
            reporting = tg.create_task(self._report_database(ready), name="systemd:database-status")
            dashboard = (f"{settings.base_url}/dashboard/" if any(r.name == "api" for r in roles) else None)
            log.info(f"nova-async ready at {settings.base_url}", url=settings.base_url, dashboard=dashboard,
                     identity=f"{settings.base_url}/v3", login=login, auth=settings.identity.auth,
                     roles=",".join(r.name for r in roles),
                     seconds=round(time.monotonic() - started, 2))
            await self.stop_requested.wait()

            deadline = time.monotonic() + settings.service.shutdown_timeout
            reporting.cancel()
            notifier.stopping("stopping: no new requests; draining work in flight")
            log.info("shutting down: stopping intake")
            await runner.cleanup()
            await running.stop(bus, deadline)
            feed_stop.set()   # the roles have said all they will: the feed hands out the rest
            if feeding is not None:
                try:   # within what is left of the deadline (at least a second), then cancelled
                    async with asyncio.timeout(max(1.0, deadline - time.monotonic())):
                        await feeding
                except TimeoutError:
                    log.warning("shutting down: notifications not all handed out before the deadline")
            log.info("shutting down: no longer watching the database", tasks=[t.get_name() for t in watching])
            for task in watching:
                task.cancel()
        log.info("nova-async stopped")

    async def _report_database(self, ready: str) -> None:
        """STATUS= follows the database: since when it is unreachable, and back to ready."""
        if self.health.outage() is not None:  # it went while the roles were starting
            self._say_database(ready)
        async for _ in self.health.changes():
            self._say_database(ready)

    def _say_database(self, ready: str) -> None:
        outage = self.health.outage()
        self.notifier.status(ready if outage is None else
                             f"database unreachable since {outage.since_text()} ({outage.reason}); "
                             "requests answer 503")


def serve(settings: Settings) -> int:
    # Read before anything starts a child process (see systemd.Notifier.from_environ).
    notifier = systemd.Notifier.from_environ()

    async def main() -> None:
        service = Service(settings)
        service.notifier = notifier
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, service.request_stop)
        systemd.hang_on_signal_if_asked(loop)
        notifier.status("starting: database and migrations")
        # The watchdog is fed from the first moment to the last (a slow database start or a
        # long drain is not a hang), by a task of this loop: a hung loop stops feeding it.
        # Not fed while the database has been gone too long (Service.withhold_watchdog).
        watchdog = asyncio.create_task(notifier.watchdog(service.withhold_watchdog), name="systemd:watchdog")
        try:
            await service.run()
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog

    # The cyclic garbage collector's defaults (a pass over the young objects every 700
    # allocations) suit a script. This process allocates and frees small objects by the
    # million (rows, messages, requests), nearly none of them in cycles: passes every 10,000
    # cost it a fifth of the CPU time they did (schedule_rate), and a cycle is still
    # freed within moments.
    gc.set_threshold(10_000, 20, 20)
    malloc.few_arenas()   # before any thread pool: see common/malloc.py
    try:
        asyncio.run(main())
    finally:
        notifier.close()
    return 0
