"""Upstream OpenStack Nova and Placement, run on this machine for `nova_vs_upstream.py`.

Everything the peer needs is started here and stopped again when the block ends, all state in
one work directory: a private MariaDB (its own datadir, socket and loopback port; never the
system's instance), Placement and nova-api under gunicorn, nova-conductor, nova-scheduler and
H nova-compute processes with Nova's fake virt driver, each compute under a host name of its
own. The RabbitMQ broker is the caller's (tests/rabbitmq.py), as is the image service stub
(`ImageStub`), which answers the few Glance calls a boot makes.

What is left out of upstream, and how:
  * Keystone: a paste filter of ours (written into the work dir) sets the identity headers
    keystonemiddleware would set (admin user and project, roles admin/member/reader) in place
    of `authtoken`; Nova 34 no longer ships `noauth2`. Placement runs with its `noauth2`, and
    the services reach it with keystoneauth's `admin_token` plugin.
  * Glance: `ImageStub`, one image.
  * Neutron: none; servers are created with `"networks": "none"`.

Upstream is installed once into a venv of its own (its pins must never meet nova-async's) under
/var/cache/nova-async/bench-peer and reused by later runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from aiohttp import web

from bench import upstream_venv

DEFAULT_VENV = Path(os.environ.get("NOVA_PEER_VENV", "/var/cache/nova-async/bench-peer/venv"))
UPSTREAM_PACKAGES = ["nova==34.*", "openstack-placement==16.*", "gunicorn", "PyMySQL"]
IMAGE_ID = "1f6d9c3e-2b0a-4c57-9d1e-6a4f0b7c8e21"
IMAGE_SIZE = 65536  # what nova-async's side uploads for its image, too
READY_TIMEOUT_S = 300
STOP_TIMEOUT_S = 30
CELL_DATABASES = ("nova_api", "nova", "nova_cell0", "placement")

# Our identity filter: stands where keystonemiddleware's authtoken would, and says every
# request comes from an admin of the `admin` project, as nova-async's noauth mode does.
IDENTITY_FILTER = '''\
"""Sets the identity headers keystonemiddleware would set: every caller is admin."""

IDENTITY = {"HTTP_X_IDENTITY_STATUS": "Confirmed", "HTTP_X_USER_ID": "admin", "HTTP_X_USER_NAME": "admin",
            "HTTP_X_PROJECT_ID": "admin", "HTTP_X_PROJECT_NAME": "admin", "HTTP_X_USER_DOMAIN_ID": "default",
            "HTTP_X_PROJECT_DOMAIN_ID": "default", "HTTP_X_ROLES": "admin,member,reader",
            "HTTP_X_AUTH_TOKEN": "admin"}


def filter_factory(global_conf, **local_conf):
    def wrap(app):
        def with_identity(environ, start_response):
            environ.update(IDENTITY)
            return app(environ, start_response)
        return with_identity
    return wrap
'''

# gunicorn's own command line is in sys.argv when it imports the app, and Nova's WSGI module
# hands sys.argv to oslo.config, which refuses gunicorn's flags: cleared first.
NOVA_API_SHIM = '''\
import sys

sys.argv = sys.argv[:1]
from nova.wsgi.osapi_compute import application  # noqa: E402,F401
'''

# Nova's usual pipeline, with our identity filter where `authtoken` would be; mounted under
# /compute so that the bench's client speaks the same paths to both sides.
API_PASTE = '''\
[composite:osapi_compute]
use = call:nova.api.openstack.urlmap:urlmap_factory
/compute: oscomputeversions
/compute/v2.1: openstack_compute_api_v21

[pipeline:oscomputeversions]
pipeline = faultwrap request_log oscomputeversionapp

[pipeline:openstack_compute_api_v21]
pipeline = compute_req_id faultwrap request_log sizelimit bench_identity keystonecontext osapi_compute_app_v21

[app:oscomputeversionapp]
paste.app_factory = nova.api.openstack.compute.versions:Versions.factory

[app:osapi_compute_app_v21]
paste.app_factory = nova.api.openstack.compute.routes:APIRouterV21.factory

[filter:compute_req_id]
paste.filter_factory = nova.api.compute_req_id:ComputeReqIdMiddleware.factory

[filter:faultwrap]
paste.filter_factory = nova.api.openstack:FaultWrapper.factory

[filter:request_log]
paste.filter_factory = nova.api.openstack.requestlog:RequestLog.factory

[filter:sizelimit]
paste.filter_factory = oslo_middleware:RequestBodySizeLimiter.factory

[filter:bench_identity]
paste.filter_factory = bench_identity:filter_factory

[filter:keystonecontext]
paste.filter_factory = nova.api.auth:NovaKeystoneContext.factory
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_venv(venv: Path) -> Path:
    return upstream_venv.ensure(venv, UPSTREAM_PACKAGES, ("gunicorn", "nova-compute", "nova-manage", "placement-manage"),
                                "upstream nova and placement (~1-2 min)")


def versions(venv: Path) -> dict[str, str]:
    script = "import importlib.metadata as m; print(m.version('nova'), m.version('openstack-placement'))"
    done = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True)
    nova, placement = (done.stdout.split() + ["?", "?"])[:2]
    return {"nova": nova, "openstack-placement": placement}


class ImageStub:
    """The one image the boots use, served as Glance's v2 API shapes it; it also records every
    request, so the bench can say what Nova asked of it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.seen: dict[str, int] = {}
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def image(self) -> dict:
        stamp = "2025-01-01T00:00:00Z"
        return {"id": IMAGE_ID, "name": "bench", "status": "active", "visibility": "public",
                "protected": False, "os_hidden": False, "owner": "admin", "size": IMAGE_SIZE,
                "virtual_size": None, "checksum": None, "os_hash_algo": None, "os_hash_value": None,
                "min_ram": 0, "min_disk": 0, "disk_format": "raw", "container_format": "bare",
                "created_at": stamp, "updated_at": stamp, "tags": [],
                "self": f"/v2/images/{IMAGE_ID}", "file": f"/v2/images/{IMAGE_ID}/file",
                "schema": "/v2/schemas/image"}

    async def _answer(self, request: web.Request) -> web.Response:
        key = f"{request.method} {request.path.replace(IMAGE_ID, '{id}')}"
        self.seen[key] = self.seen.get(key, 0) + 1
        if request.path == f"/v2/images/{IMAGE_ID}":
            return web.json_response(self.image())
        if request.path == "/v2/schemas/image":
            # Every field of the image is a "base property" (Nova files the others under
            # `properties`), and none is constrained: glanceclient validates against this.
            return web.json_response({"name": "image", "properties": {key: {} for key in self.image()},
                                      "additionalProperties": {"type": "string"}, "links": []})
        if request.path in ("/", "/versions"):
            return web.json_response({"versions": [{"id": "v2.16", "status": "CURRENT",
                                                    "links": [{"rel": "self", "href": f"{self.url}/v2/"}]}]})
        return web.json_response({"error": "not in the stub"}, status=404)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@dataclasses.dataclass
class Daemon:
    """A process we started in a session of its own, so that stopping it stops its workers too."""

    name: str
    proc: asyncio.subprocess.Process
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    async def stop(self) -> None:
        if self.proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
        with contextlib.suppress(ProcessLookupError):  # workers that outlived their parent
            os.killpg(self.proc.pid, signal.SIGKILL)


async def spawn(name: str, argv: list[str], logs: Path, env: dict[str, str] | None = None) -> Daemon:
    log_path = logs / f"{name}.log"
    with log_path.open("ab") as log:
        proc = await asyncio.create_subprocess_exec(
            *argv, env={**os.environ, **(env or {})}, stdin=asyncio.subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
    return Daemon(name, proc, log_path)


MARIADB_PROGRAMS = (Path("/usr/bin/mariadb-install-db"), Path("/usr/sbin/mariadbd"))


def mariadb_missing() -> str | None:
    """Why the private MariaDB cannot be started here, or None when it can."""
    absent = [str(p) for p in MARIADB_PROGRAMS if not p.exists()]
    return f"{', '.join(absent)} not found (apt-get install mariadb-server)" if absent else None


async def run_tool(argv: list[str], what: str, env: dict[str, str] | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        *argv, env={**os.environ, **(env or {})}, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed ({proc.returncode}):\n{out.decode(errors='replace')[-3000:]}")
    return out.decode(errors="replace")


@contextlib.asynccontextmanager
async def mariadb(root: Path) -> AsyncIterator[tuple[Daemon, str]]:
    """A private MariaDB under `root`; yields it and the SQLAlchemy URL prefix for its databases
    (append a database name)."""
    data, sock, logs = root / "data", root / "mysqld.sock", root
    root.mkdir(parents=True, exist_ok=True)
    await run_tool(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                    "--auth-root-authentication-method=normal", "--skip-test-db"], "mariadb-install-db")
    daemon = await spawn("mariadb", [
        "/usr/sbin/mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={sock}",
        f"--port={free_port()}", "--bind-address=127.0.0.1", "--user=root", f"--pid-file={root / 'mysqld.pid'}",
        "--skip-name-resolve", "--max-connections=1000", "--character-set-server=utf8mb4"], logs)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            ping = await asyncio.create_subprocess_exec(
                "mariadb-admin", "--no-defaults", f"--socket={sock}", "-uroot", "ping",
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
            if await ping.wait() == 0:
                break
            if daemon.proc.returncode is not None or time.monotonic() > deadline:
                raise SystemExit(f"MariaDB did not start:\n{daemon.log_tail()}")
            await asyncio.sleep(0.2)
        ddl = "".join(f"CREATE DATABASE {db} CHARACTER SET utf8mb4;" for db in CELL_DATABASES)
        await run_tool(["mariadb", "--no-defaults", f"--socket={sock}", "-uroot", "-e", ddl], "CREATE DATABASE")
        yield daemon, f"mysql+pymysql://root@localhost/{{}}?unix_socket={sock}&charset=utf8mb4"
    finally:
        await daemon.stop()


@dataclasses.dataclass
class Layout:
    """Where upstream's files go, and the ports its services answer on."""

    root: Path
    db_url: str           # with {} for the database name
    transport_url: str
    image_url: str
    hosts: int
    api_port: int = dataclasses.field(default_factory=free_port)
    placement_port: int = dataclasses.field(default_factory=free_port)

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def logs(self) -> Path:
        return self.root / "log"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def placement_url(self) -> str:
        return f"http://127.0.0.1:{self.placement_port}"

    def conf(self, *names: str) -> list[str]:
        return [arg for name in names for arg in ("--config-file", str(self.etc / name))]


def write_configs(lay: Layout, service_workers: int) -> None:
    """nova.conf is what every Nova service reads; db.conf only the API, conductor and scheduler
    (a compute has no database, as in a real deployment); host-N.conf names each compute."""
    for d in (lay.etc, lay.logs, lay.root / "pylib"):
        d.mkdir(parents=True, exist_ok=True)
    (lay.root / "pylib" / "bench_identity.py").write_text(IDENTITY_FILTER)
    (lay.root / "pylib" / "bench_nova_api.py").write_text(NOVA_API_SHIM)
    (lay.etc / "api-paste.ini").write_text(API_PASTE)
    (lay.etc / "nova.conf").write_text(textwrap.dedent(f"""\
        [DEFAULT]
        transport_url = {lay.transport_url}
        compute_driver = fake.FakeDriver
        my_ip = 127.0.0.1
        host = controller
        graceful_shutdown_timeout = 5
        state_path = {lay.root / "state"}
        [oslo_concurrency]
        lock_path = {lay.root / "lock"}
        [oslo_messaging_notifications]
        driver = noop
        [placement]
        auth_type = admin_token
        endpoint = {lay.placement_url}
        token = admin
        [glance]
        endpoint_override = {lay.image_url}
        [filter_scheduler]
        shuffle_best_same_weighed_hosts = True
        [scheduler]
        workers = {service_workers}
        discover_hosts_in_cells_interval = -1
        [conductor]
        workers = {service_workers}
        [vnc]
        enabled = False
        [quota]
        instances = -1
        cores = -1
        ram = -1
        [wsgi]
        api_paste_config = {lay.etc / "api-paste.ini"}
        """))
    (lay.etc / "db.conf").write_text(f"[database]\nconnection = {lay.db_url.format('nova')}\n"
                                     f"[api_database]\nconnection = {lay.db_url.format('nova_api')}\n")
    for n in range(1, lay.hosts + 1):
        (lay.etc / f"host-{n}.conf").write_text(
            f"[DEFAULT]\nhost = fake-{n}\nstate_path = {lay.root / f'state-{n}'}\n"
            f"[oslo_concurrency]\nlock_path = {lay.root / f'lock-{n}'}\n")
    (lay.etc / "placement.conf").write_text(
        "[DEFAULT]\ndebug = False\n[api]\nauth_strategy = noauth2\n"
        f"[placement_database]\nconnection = {lay.db_url.format('placement')}\n")


async def sync_databases(lay: Layout, venv: Path) -> None:
    """What an operator runs once: Placement's schema, then Nova's API database, cell0, cell1
    (this MariaDB, this broker) and the cell database."""
    bin_ = venv / "bin"
    await run_tool([str(bin_ / "placement-manage"), *lay.conf("placement.conf"), "db", "sync"],
                   "placement-manage db sync")
    manage = [str(bin_ / "nova-manage"), *lay.conf("nova.conf", "db.conf")]
    await run_tool([*manage, "api_db", "sync"], "nova-manage api_db sync")
    await run_tool([*manage, "cell_v2", "map_cell0", "--database_connection", lay.db_url.format("nova_cell0")],
                   "nova-manage cell_v2 map_cell0")
    await run_tool([*manage, "cell_v2", "create_cell", "--name", "cell1"], "nova-manage cell_v2 create_cell")
    await run_tool([*manage, "db", "sync"], "nova-manage db sync")


async def wait_http(url: str, daemon: Daemon, headers: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline and daemon.proc.returncode is None:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url, headers=headers) as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.3)
    raise SystemExit(f"{daemon.name} did not answer at {url}; its log ends:\n{daemon.log_tail()}")


async def wait_for_computes(lay: Layout, venv: Path, computes: list[Daemon]) -> None:
    """Until every fake host is a resource provider in Placement; then the cell learns of them
    (`discover_hosts`), which the conductor needs to send it builds."""
    headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.0"}
    deadline = time.monotonic() + READY_TIMEOUT_S
    async with aiohttp.ClientSession() as session:
        while True:
            async with session.get(lay.placement_url + "/resource_providers", headers=headers) as resp:
                if len((await resp.json())["resource_providers"]) >= lay.hosts:
                    break
            dead = [c for c in computes if c.proc.returncode is not None]
            if dead or time.monotonic() > deadline:
                culprit = (dead or computes)[0]
                raise SystemExit(f"not every nova-compute registered; {culprit.name} log ends:\n"
                                 f"{culprit.log_tail()}")
            await asyncio.sleep(1)
    await run_tool([str(venv / "bin" / "nova-manage"), *lay.conf("nova.conf", "db.conf"), "cell_v2",
                    "discover_hosts"], "nova-manage cell_v2 discover_hosts")


@dataclasses.dataclass
class Upstream:
    api_url: str
    services: list[Daemon]
    database: Daemon


@contextlib.asynccontextmanager
async def upstream(root: Path, venv: Path, transport_url: str, image_url: str, hosts: int,
                   api_workers: int = 2, api_threads: int = 4, service_workers: int = 2,
                   ) -> AsyncIterator[Upstream]:
    """Upstream Nova and Placement on their own MariaDB, ready to boot on `hosts` fake hosts."""
    async with mariadb(root / "mariadb") as (db, db_url), contextlib.AsyncExitStack() as stack:
        lay = Layout(root, db_url, transport_url, image_url, hosts)
        write_configs(lay, service_workers)
        print("upstream: database schemas and cells (nova-manage) …", file=sys.stderr, flush=True)
        await sync_databases(lay, venv)
        services: list[Daemon] = []

        async def start(name: str, argv: list[str], env: dict[str, str] | None = None) -> Daemon:
            daemon = await spawn(name, argv, lay.logs, env)
            stack.push_async_callback(daemon.stop)
            services.append(daemon)
            return daemon

        gunicorn = [str(venv / "bin" / "gunicorn"), "--workers", str(api_workers), "--threads",
                    str(api_threads), "--timeout", "600", "--no-control-socket"]
        placement = await start("placement", [*gunicorn, "--bind", f"127.0.0.1:{lay.placement_port}",
                                              "placement.wsgi.api:application"],
                                {"OS_PLACEMENT_CONFIG_DIR": str(lay.etc)})
        api = await start("nova-api", [*gunicorn, "--bind", f"127.0.0.1:{lay.api_port}",
                                       "bench_nova_api:application"],
                          {"OS_NOVA_CONFIG_DIR": str(lay.etc), "PYTHONPATH": str(lay.root / "pylib"),
                           "OS_NOVA_CONFIG_FILES": "api-paste.ini;nova.conf;db.conf"})
        for binary in ("nova-conductor", "nova-scheduler"):
            await start(binary, [str(venv / "bin" / binary), *lay.conf("nova.conf", "db.conf")])
        print(f"upstream: starting {hosts} nova-compute …", file=sys.stderr, flush=True)
        computes = [await start(f"nova-compute-{n}", [str(venv / "bin" / "nova-compute"),
                                                      *lay.conf("nova.conf", f"host-{n}.conf")])
                    for n in range(1, hosts + 1)]
        await wait_http(lay.placement_url + "/", placement)
        await wait_http(lay.api_url + "/compute/v2.1/flavors", api)
        await wait_for_computes(lay, venv, computes)
        # the computes go first, the API and Placement last (the stack unwinds in reverse)
        yield Upstream(lay.api_url, services, db)


async def prepare(s: aiohttp.ClientSession, url: str, headers: dict[str, str], flavor: dict) -> dict:
    """The flavor, as nova-async's side makes it; the image is the stub's. Quotas are lifted in
    nova.conf: Nova checks a project id in Keystone before it changes a project's quotas, and
    there is no Keystone here. Returns the server body the boots share."""
    async with s.post(url + "/compute/v2.1/flavors", headers=headers,
                      json={"flavor": {"name": "bench", **flavor}}) as r:
        assert r.status == 200, await r.text()
        flavor_id = (await r.json())["flavor"]["id"]
    return {"flavorRef": flavor_id, "imageRef": IMAGE_ID, "networks": "none"}
