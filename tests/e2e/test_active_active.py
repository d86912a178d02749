"""Active-active: two or three `nova-async serve` copies, each with every control role and a
compute host of its own (libvirt's test driver), sharing one PostgreSQL and one RabbitMQ,
behind a real HAProxy that runs examples/haproxy.cfg (the README's, with loopback ports).

A burst of boots, power actions and deletes goes through HAProxy, and one whole node is
SIGKILLed in the middle of it (early, mid or late). Then, on what the survivors show:

- every server ends ACTIVE, SHUTOFF (stopped, its start lost with the node), ERROR with a
  fault message, or deleted; a boot whose answer was lost with the node is found by its name,
  and no name was booted twice. A server on the dead node may keep a power action pending
  (its compute holds the message until it is back, as Nova's would), but not a build or a
  delete: those must end.
- placement holds one allocation set, on its host, per live server with a host (one in ERROR
  may have none: a failed build lets its claim go), and none for a deleted or never-built one;
- no port whose device is a server that does not exist; one port per ACTIVE server; no
  instance directory on a survivor for a server it does not host;
- no request handled twice: each step of a server's actions succeeded once (a conductor
  attempt that failed or was cut off by the kill may be retried, and the steps after it with it);
- the dead node's compute is shown down and gets none of the boots after it;
- periodic jobs go on: a resize on a survivor is confirmed by `resize_confirm_window`;
- each node answers /metrics for itself (`nova_async_node_info{host=…}`), and a token
  issued by one node is accepted by another (the signing key is in the database).

Every broken invariant is collected and reported together, with the kill's timing and the
node logs' last lines, so one run says all that went wrong.

The short variant (two nodes, 40 boots, a kill mid-burst) runs in `make test`. The long one
(three nodes, 200 boots, a kill early, mid and late; and, where tests/rabbitmq.py has the
3-node cluster helper, a RabbitMQ node killed instead, with quorum queues) runs from
`make conformance`, or with NOVA_ASYNC_ACTIVE_ACTIVE=long."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import re
import shutil
import signal
import uuid
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.conftest import PASSWORD, Served, free_port, serve
from tests.e2e.driver import MICROVERSION, V, Api
from nova_async.compute.simhosts import write_node_file
from tests import rabbitmq as brokers
from tests.rabbitmq import available, started
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("active-active"),
              pytest.mark.skipif(available() is not None, reason=str(available())),
              pytest.mark.skipif(shutil.which("haproxy") is None,
                                 reason="haproxy is not installed (apt-get install haproxy; `make test` does)")]

HAPROXY_CFG = Path(__file__).resolve().parents[2] / "examples" / "haproxy.cfg"
CONTROL_ROLES = "identity,image,network,placement,api,conductor,scheduler"
REPORT_INTERVAL = 1
SERVICE_DOWN_TIME = 5
CONFIRM_WINDOW = 2
# Bounds, never timing claims: how long a follow-up waits for its server to leave BUILD, and
# how long everything may take to settle after the burst.
FOLLOW_UP_WAIT = 120
SETTLE_WAIT = 180
# The 3-node RabbitMQ cluster helper, where tests/rabbitmq.py has it.
cluster_started = getattr(brokers, "cluster_started", None)
LONG = os.environ.get("NOVA_ASYNC_ACTIVE_ACTIVE") == "long"
# Where in the burst the kill falls: a random point within this share of its requests.
MOMENTS = {"early": (0.05, 0.2), "mid": (0.4, 0.6), "late": (0.8, 0.95)}
# What the burst does to server i after booting it, by i % 5.
PLANS = ("keep", "stop-start", "reboot", "delete-when-active", "delete-at-once")
STABLE = ("ACTIVE", "SHUTOFF", "ERROR")


@dataclasses.dataclass(frozen=True)
class Variant:
    nodes: int
    boots: int
    moment: str
    victim: str = "node"   # or "broker": the first node of a RabbitMQ cluster, not a nova-async node


def haproxy_config(template: str, listen: int, backends: list[int]) -> str:
    """examples/haproxy.cfg as the test runs it: bound to 127.0.0.1:`listen`, its `server`
    lines pointed at `backends` in order (the ones left over dropped). Nothing else changes."""
    text, bound = re.subn(r"^(\s*bind\s+)\S+", rf"\g<1>127.0.0.1:{listen}", template, flags=re.M)
    assert bound == 1, "examples/haproxy.cfg: one bind line expected"
    ports = iter(backends)
    lines = []
    for line in text.splitlines():
        server = re.match(r"^(\s*server\s+\S+\s+)\S+(.*)$", line)
        if server:
            port = next(ports, None)
            if port is None:
                continue
            line = f"{server[1]}127.0.0.1:{port}{server[2]}"
        lines.append(line)
    assert next(ports, None) is None, "examples/haproxy.cfg has fewer server lines than nodes"
    return "\n".join(lines) + "\n"


@contextlib.asynccontextmanager
async def haproxy(work_dir: Path, listen: int, backends: list[int]):
    """HAProxy (Debian's) in the foreground on examples/haproxy.cfg; yields its URL once a
    request through it is answered."""
    config = work_dir / "haproxy.cfg"
    config.write_text(haproxy_config(HAPROXY_CFG.read_text(), listen, backends))
    check = await asyncio.create_subprocess_exec("haproxy", "-c", "-q", "-f", str(config),
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await check.communicate()
    assert check.returncode == 0, out.decode()
    proc = await asyncio.create_subprocess_exec("haproxy", "-db", "-f", str(config),
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    url = f"http://127.0.0.1:{listen}"
    try:
        async with aiohttp.ClientSession() as session:
            async def healthy() -> bool:
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(url + "/healthz") as resp:
                        return resp.status == 200
                return False

            await until(healthy, what="HAProxy answering", timeout=60, interval=0.2)
        yield url
    finally:
        proc.terminate()
        await proc.wait()


def print_logs(nodes: dict[str, Served]) -> None:
    """Each node's warnings and errors, then its last lines."""
    for name, served in nodes.items():
        print(f"--- {name} (exit code {served.proc.returncode}): warnings and errors ---")
        print("\n".join(line for line in served.log if '"level":"warning"' in line or '"level":"error"' in line))
        print(f"--- {name}: last lines ---")
        print("\n".join(served.log[-40:]))


def mentions(nodes: dict[str, Served], uuid: str, most: int = 60) -> str:
    """The log lines of every node that name `uuid` (a stray thing's history), in order per node."""
    found = [f"    {name}: {line[:400]}" for name, served in nodes.items() for line in served.log if uuid in line]
    return "\n".join(found[:most]) or "    (none)"


async def keystone_token(session: aiohttp.ClientSession, url: str) -> tuple[str, str]:
    """(token, project id) for the admin, from the Keystone at `url`."""
    auth = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"name": "Default"}, "password": PASSWORD}}},
        "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
    async with session.post(f"{url}/v3/auth/tokens", json=auth) as resp:
        assert resp.status == 201, await resp.text()
        return resp.headers["X-Subject-Token"], (await resp.json())["token"]["project"]["id"]


class Burst:
    """Boots, power actions and deletes through the load balancer, some of whose answers the
    kill will cut off: each request's outcome is recorded, never asserted here."""

    def __init__(self, api: Api, base: dict, prefix: str, count: int) -> None:
        self.api, self.base, self.prefix, self.count = api, base, prefix, count
        self.accepted: dict[str, str] = {}       # name -> server id, boots answered 202
        self.lost: set[str] = set()              # names whose boot got no answer (or a 5xx)
        self.deletes: set[str] = set()           # ids whose delete answered 204
        self.outcomes: Counter[str] = Counter()  # "POST /servers 202", "reboot: ServerDisconnectedError", …
        self.answered = 0                        # requests done, answered or not
        self.progress = asyncio.Event()          # set at each answer, for the killer
        self.seen: dict[str, dict] = {}          # the last list of servers (watch)
        self.looked = asyncio.Event()            # set (and replaced) at each new list
        self.slots = asyncio.Semaphore(8)        # requests in flight

    @property
    def planned(self) -> int:
        per_plan = {"keep": 1, "stop-start": 3, "reboot": 2, "delete-when-active": 2, "delete-at-once": 2}
        return sum(per_plan[PLANS[i % len(PLANS)]] for i in range(self.count))

    async def request(self, what: str, method: str, path: str, **kw) -> tuple[int | None, object]:
        try:
            async with self.slots:
                status, body = await self.api.once(method, path, **kw)
            self.outcomes[f"{what} {status}"] += 1
            return status, body
        except (aiohttp.ClientError, TimeoutError) as e:
            self.outcomes[f"{what} {type(e).__name__}"] += 1
            return None, None
        finally:
            self.answered += 1
            self.progress.set()

    async def watch(self, stop: asyncio.Event) -> None:
        """List every server once a second for the follow-ups (one request, not one per server)."""
        while not stop.is_set():
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                status, body = await self.api.once("GET", V + "/servers/detail")
                if status == 200:
                    self.seen = {s["id"]: s for s in body["servers"]}  # type: ignore[index]
                    self.looked.set()
                    self.looked = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1)

    async def left_build(self, server_id: str) -> str | None:
        """The server's status once out of BUILD with no task (None: gone, or still busy)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FOLLOW_UP_WAIT):
                await self.looked.wait()   # a list under way may have started before the request
                while True:
                    await self.looked.wait()
                    server = self.seen.get(server_id)
                    if server is None:
                        return None
                    if server["status"] != "BUILD" and not server["OS-EXT-STS:task_state"]:
                        return server["status"]
        return None

    async def action(self, server_id: str, what: str, body: dict, then: str) -> bool:
        status, _ = await self.request(what, "POST", f"{V}/servers/{server_id}/action", json=body)
        return status == 202 and await self.left_build(server_id) == then

    async def delete(self, server_id: str) -> None:
        status, _ = await self.request("delete", "DELETE", f"{V}/servers/{server_id}")
        if status == 204:
            self.deletes.add(server_id)

    async def one(self, i: int) -> None:
        name = f"{self.prefix}-{i}"
        status, body = await self.request("boot", "POST", V + "/servers",
                                          json={"server": {**self.base, "name": name}})
        if status != 202:
            if status is None or status >= 500:
                self.lost.add(name)
            return
        server_id = body["server"]["id"]  # type: ignore[index]
        self.accepted[name] = server_id
        plan = PLANS[i % len(PLANS)]
        if plan == "delete-at-once":
            await self.delete(server_id)
            return
        if plan == "keep" or await self.left_build(server_id) != "ACTIVE":
            return
        if plan == "stop-start":
            if await self.action(server_id, "stop", {"os-stop": None}, "SHUTOFF"):
                await self.action(server_id, "start", {"os-start": None}, "ACTIVE")
        elif plan == "reboot":
            await self.action(server_id, "reboot", {"reboot": {"type": "SOFT"}}, "ACTIVE")
        elif plan == "delete-when-active":
            await self.delete(server_id)

    async def run(self) -> None:
        """Every server's script at once; the requests themselves eight at a time."""
        stop = asyncio.Event()
        watching = asyncio.create_task(self.watch(stop), name="e2e:watch")
        try:
            await asyncio.gather(*(self.one(i) for i in range(self.count)))
        finally:
            stop.set()
            await watching


async def leases(session: aiohttp.ClientSession, nodes: dict[str, Served], names: list[str]) -> dict[str, list[str]]:
    """Each leased global job (`nova_async_lease_held{job=…}`, where the branch has leases)
    and the nodes among `names` that say they run it."""
    held: dict[str, list[str]] = {}
    for name in names:
        async with session.get(nodes[name].url + "/metrics") as resp:
            text = await resp.text()
        for job, value in re.findall(r'^nova_async_lease_held\{job="([^"]+)"\} (\S+)$', text, flags=re.M):
            held.setdefault(job, [])
            if float(value) == 1:
                held[job].append(name)
    return held


class Report:
    """The broken invariants, all of them, for one assertion at the end."""

    def __init__(self) -> None:
        self.broken: list[str] = []

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.broken.append(what)


async def listed(api: Api) -> dict[str, dict]:
    return {s["id"]: s for s in (await api.call("GET", V + "/servers/detail", 200))["servers"]}


async def allocations(api: Api) -> dict[str, set[str]]:
    """Each consumer's resource providers (by name)."""
    rps = (await api.call("GET", "/placement/resource_providers", 200))["resource_providers"]
    held: dict[str, set[str]] = {}
    for rp in rps:
        body = await api.call("GET", f"/placement/resource_providers/{rp['uuid']}/allocations", 200)
        for consumer in body["allocations"]:
            held.setdefault(consumer, set()).add(rp["name"])
    return held


async def repeated_events(api: Api, server_id: str) -> list[str]:
    """The steps of the server's actions that were done more than once: a second create, a
    conductor step that succeeded twice, or a later step that succeeded more often than the
    conductor tried. A conductor attempt that failed, or that the kill cut off (no result),
    is taken up again (a retry, a redelivery to a survivor), and the steps after it run again
    for it; a build rescheduled onto an alternate records its compute steps once per host, so
    hosts are told apart. Each run is shown with its start and finish."""
    got, body = await api.once("GET", f"{V}/servers/{server_id}/os-instance-actions")
    if got == 404:   # deleted since it was listed (a delete the burst sent, finished late)
        return []
    assert got == 200, body
    actions = body["instanceActions"]
    found = [f"create ×{n}" for a, n in Counter(a["action"] for a in actions).items() if a == "create" and n > 1]
    for action in actions:
        detail = await api.call("GET", f"{V}/servers/{server_id}/os-instance-actions/{action['request_id']}", 200)
        events: dict[tuple[str, str], list[tuple[str | None, str]]] = {}
        for e in detail["instanceAction"].get("events", []):
            events.setdefault((e["event"], e.get("host") or "no host"), []).append(
                (e["result"], f"{e['start_time']}..{e['finish_time']}"))
        attempts = max(1, sum(len(runs) for (event, _), runs in events.items() if event.startswith("conductor_")))
        for (event, host), runs in events.items():
            succeeded = [when for result, when in runs if result == "Success"]
            allowed = 1 if event.startswith("conductor_") else attempts
            if len(succeeded) > allowed:
                found.append(f"{action['action']}: {event} on {host} succeeded ×{len(succeeded)} "
                             f"({', '.join(f'{r} {w}' for r, w in runs)}), {attempts} conductor attempt(s)")
    return found


def settled_view(servers: dict[str, dict], dead: str, deletes: set[str]) -> bool:
    """Nothing left moving that should end: no BUILD, no delete in flight, no task on a survivor."""
    for s in servers.values():
        task = s["OS-EXT-STS:task_state"]
        if s["status"] == "BUILD" or s["id"] in deletes or task == "deleting":
            return False
        if task and s["OS-EXT-SRV-ATTR:host"] != dead:
            return False
    return True


async def active_active(variant: Variant, transport: str, database: str, work_dir: Path, *,
                        cluster=None, options: tuple[str, ...] = ()) -> None:
    """One run: `variant.nodes` nodes on `transport`, the burst, the kill, every invariant.
    With victim "broker", `cluster`'s first RabbitMQ node is killed instead of a nova node."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    run_dir = work_dir / f"aa-{variant.nodes}-{variant.boots}-{variant.moment}-{uuid.uuid4().hex[:6]}"
    run_dir.mkdir()
    lb_port = free_port()
    config = run_dir / "node.toml"
    config.write_text(f'[service]\npublic_url = "http://127.0.0.1:{lb_port}"\n'
                      f"[compute]\nreport_interval = {REPORT_INTERVAL}\nresize_confirm_window = {CONFIRM_WINDOW}\n"
                      f"allow_resize_to_same_host = true\n"
                      f"[scheduler]\nservice_down_time = {SERVICE_DOWN_TIME}\n")
    names = [f"node{i}" for i in range(1, variant.nodes + 1)]
    # Image data is kept as files under each node's state dir and the image role answers with
    # its own path, so the nodes share that directory, as a site shares it (README: a shared
    # mount at <state_dir>/images).
    (run_dir / "images").mkdir()
    for name in names:
        (run_dir / name).mkdir()
        (run_dir / name / "images").symlink_to(run_dir / "images")
    # Each node a machine of its own (libvirt's test driver on a node file), big enough that
    # the survivors hold every server: test:///default's would run out of memory first.
    machines = {name: write_node_file(run_dir / "machines", name, vcpus=64, memory_mb=32768) for name in names}
    report = Report()
    async with contextlib.AsyncExitStack() as stack:
        # Every node the same command: all control roles and a compute host of its own. Started
        # together, as a site's would be after a power cut: their first starts race on one database.
        nodes = dict(zip(names, await asyncio.gather(*(stack.enter_async_context(serve(
            run_dir / name, "--roles", CONTROL_ROLES + ",compute", "--host", name,
            "--libvirt-uri", machines[name], "--transport", transport, "--database", database,
            "--config", str(config), *options)) for name in names))))
        stack.push(lambda *exc: print_logs(nodes) if exc[0] else None)
        lb = await stack.enter_async_context(
            haproxy(run_dir, lb_port, [int(n.url.rsplit(":", 1)[1]) for n in nodes.values()]))
        session = await stack.enter_async_context(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)))

        # A token from one node is good on every other: the signing key is in the database.
        token, _ = await keystone_token(session, nodes[names[0]].url)
        for served in nodes.values():
            async with session.get(served.url + V + "/servers", headers={"X-Auth-Token": token, **MICROVERSION}) as resp:
                assert resp.status == 200, f"{served.url}: a token issued by {names[0]}: {resp.status}"
        # Each node's /metrics is its own, and says which node it is.
        for name, served in nodes.items():
            async with session.get(served.url + "/metrics") as resp:
                text = await resp.text()
            assert resp.status == 200 and f'nova_async_node_info{{host="{name}",' in text, text[-2000:]

        token, project = await keystone_token(session, lb)
        api = Api(session, lb, {"X-Auth-Token": token})
        await api.call("PUT", f"{V}/os-quota-sets/{project}", 200,
                       json={"quota_set": {"instances": -1, "cores": -1, "ram": -1}})
        await until(api.services, lambda s: set(s) == set(names) and set(s.values()) == {"up"},
                    what="every node's compute up", timeout=120, interval=0.5)
        base = await api.boot_base("aa", "10.30.0.0/16")
        bigger = (await api.call("POST", V + "/flavors", 200, json={"flavor": {
            "name": "aa-bigger", "ram": 128, "vcpus": 1, "disk": 0}}))["flavor"]["id"]

        burst = Burst(api, base, "aa", variant.boots)
        low, high = MOMENTS[variant.moment]
        kill_after = max(1, int(burst.planned * rng.uniform(low, high)))
        # The nova-async node that dies (one that leads leased jobs, where there are leases:
        # so they must move); none when a RabbitMQ node does.
        before = await leases(session, nodes, names)
        print("leases before the kill:", before)
        leaders = sorted({name for holders in before.values() for name in holders})
        dead = rng.choice(leaders or names) if variant.victim == "node" else ""
        victim = dead or cluster.nodes[0].nodename
        print(f"seed {seed}: {variant}; {burst.planned} requests planned; SIGKILL {victim} after {kill_after}")

        async def killer() -> None:
            while burst.answered < kill_after:
                burst.progress.clear()
                await burst.progress.wait()
            if dead:
                nodes[dead].proc.send_signal(signal.SIGKILL)
                await nodes[dead].proc.wait()
            else:
                await cluster.nodes[0].stop(kill=True)
            print(f"killed {victim} after {burst.answered} requests answered, "
                  f"{len(burst.accepted)} boots accepted")

        killing = asyncio.create_task(killer(), name="e2e:killer")
        await burst.run()
        if not killing.done():  # fewer requests than planned (boots refused): kill now
            kill_after = 0
            burst.progress.set()
        await killing
        print("burst:", dict(sorted(burst.outcomes.items())))
        survivors = [n for n in names if n != dead]

        # Lost boot answers: the server is there under its name, or was never made.
        everything = await listed(api)
        by_name = Counter(s["name"] for s in everything.values())
        report.check(all(n == 1 for n in by_name.values()),
                     f"names booted twice: {[n for n, c in by_name.items() if c > 1]}")
        found = {s["name"]: s["id"] for s in everything.values() if s["name"] in burst.lost}
        print(f"{len(burst.lost)} boot answers lost; {len(found)} of those servers exist")
        known = set(burst.accepted.values()) | set(found.values())
        report.check(set(everything) <= known, f"servers nobody asked for: {sorted(set(everything) - known)}")

        # The dead node is shown down and gets nothing new.
        if dead:
            await until(api.services, lambda s: s.get(dead) == "down", what=f"{dead} shown down",
                        timeout=120, interval=0.5)
        after = await asyncio.gather(*(api.boot(base, f"after-{i}") for i in range(2 * len(survivors))))
        try:
            placed = await api.settled(after, timeout=120)
        except AssertionError:   # reported below
            placed = {i: s for i, s in (await listed(api)).items() if i in after}
        report.check(all(s["status"] == "ACTIVE" and s["OS-EXT-SRV-ATTR:host"] in survivors for s in placed.values()),
                     f"boots after the kill: {[(s['status'], s['OS-EXT-SRV-ATTR:host']) for s in placed.values()]}")

        # Each leased global job is run by exactly one survivor.
        if before:
            def one_each(held: dict[str, list[str]]) -> bool:
                return set(held) >= set(before) and all(len(held[job]) == 1 for job in before)

            with contextlib.suppress(AssertionError):   # reported below
                await until(lambda: leases(session, nodes, survivors), one_each, what="every job leased by a survivor",
                            timeout=120, interval=1)
            held = await leases(session, nodes, survivors)
            print("leases after the kill:", held)
            report.check(one_each(held), f"leased jobs not run by exactly one survivor: {held}")
        else:
            print("no nova_async_lease_held in /metrics: no leased jobs on this branch")

        # A periodic job goes on on a survivor: a resize left in VERIFY_RESIZE is confirmed.
        resized = after[0]
        await api.call("POST", f"{V}/servers/{resized}/action", 202, json={"resize": {"flavorRef": bigger}})
        with contextlib.suppress(AssertionError):   # reported below
            await until(lambda: api.server(resized),
                        lambda s: s["status"] in ("ACTIVE", "ERROR") and s["flavor"]["original_name"] == "aa-bigger",
                        what="resize confirmed by itself", timeout=120, interval=0.5)
        after_resize = await api.server(resized)
        report.check(after_resize["status"] == "ACTIVE" and after_resize["flavor"]["original_name"] == "aa-bigger",
                     f"resize not auto-confirmed: {after_resize['status']} {after_resize['flavor']['original_name']}")

        # Everything settles: builds and deletes end, even those the dead node had.
        ours = known | set(after)
        try:
            servers = await until(lambda: listed(api),
                                  lambda found: settled_view({k: v for k, v in found.items() if k in ours},
                                                             dead, burst.deletes),
                                  what="every request ended", timeout=SETTLE_WAIT, interval=1)
        except AssertionError:
            servers = await listed(api)
        servers = {k: v for k, v in servers.items() if k in ours}
        print("end states:", Counter((s["status"], s["OS-EXT-STS:task_state"], s["OS-EXT-SRV-ATTR:host"] == dead)
                                     for s in servers.values()))
        print("faults:", Counter(s.get("fault", {}).get("message", "")[:200] for s in servers.values()
                                 if s["status"] == "ERROR"))
        for s in servers.values():
            where, task = s["OS-EXT-SRV-ATTR:host"], s["OS-EXT-STS:task_state"]
            # On the dead node a power action stays pending (REBOOT, say), as in Nova.
            report.check(s["status"] in STABLE or (where == dead and task not in (None, "deleting") and s["status"] != "BUILD"),
                         f"{s['name']} {s['id']} on {where}: {s['status']}/{task}")
            report.check(s["status"] != "ERROR" or bool(s.get("fault", {}).get("message")),
                         f"{s['name']} in ERROR without a fault")
            report.check(not task or (where == dead and task != "deleting"),
                         f"{s['name']} {s['id']} on {where}: {s['status']} still {task}")
        report.check(not (burst.deletes & set(servers)),
                     f"deleted (204) but still there: {sorted((servers[i]['name'], servers[i]['status'], servers[i]['OS-EXT-SRV-ATTR:host']) for i in burst.deletes & set(servers))}")

        # Placement: one allocation set per live server with a host, on that host; nothing else.
        held = await allocations(api)
        hosted = {i: s["OS-EXT-SRV-ATTR:hypervisor_hostname"] for i, s in servers.items()
                  if s["OS-EXT-SRV-ATTR:host"]}
        report.check(set(held) - set(hosted) == set(),
                     f"allocations of no live server: {sorted(set(held) - set(hosted))}")
        # A build that failed (ERROR) lets its claim go, as Nova's does; a server in ERROR
        # after an action on its host keeps it: either is right for ERROR.
        unheld = sorted(i for i in set(hosted) - set(held) if servers[i]["status"] != "ERROR")
        report.check(not unheld, f"live servers without allocations: "
                                 f"{[(servers[i]['name'], i, servers[i]['status'], hosted[i]) for i in unheld]}")
        report.check(all(held[i] == {hosted[i]} for i in set(held) & set(hosted)),
                     f"allocations elsewhere than the host: "
                     f"{[(i, held[i], hosted[i]) for i in set(held) & set(hosted) if held[i] != {hosted[i]}]}")

        # Ports: none for a server that does not exist; one per ACTIVE server.
        ports = (await api.call("GET", "/network/v2.0/ports", 200))["ports"]
        devices = Counter(p["device_id"] for p in ports if p["device_owner"].startswith("compute:"))
        report.check(set(devices) <= set(servers), f"ports of no server: {sorted(set(devices) - set(servers))}")
        report.check(all(devices[i] == 1 for i, s in servers.items() if s["status"] == "ACTIVE"),
                     f"ACTIVE servers without exactly one port: "
                     f"{[(i, devices[i]) for i, s in servers.items() if s['status'] == 'ACTIVE' and devices[i] != 1]}")

        # Disks: a survivor's instance directories are those of the servers it hosts.
        for name in survivors:
            root = nodes[name].state_dir / "instances"
            dirs = {p.name for p in root.iterdir() if p.is_dir() and re.fullmatch(r"[0-9a-f-]{36}", p.name)} \
                if root.is_dir() else set()
            mine = {i for i, s in servers.items() if s["OS-EXT-SRV-ATTR:host"] == name}
            report.check(dirs <= mine, f"{name}: instance directories of servers it does not host: {sorted(dirs - mine)}")

        # Nothing handled twice.
        for server_id in servers:
            twice = await repeated_events(api, server_id)
            report.check(not twice, f"{servers[server_id]['name']} {server_id}: {twice}")

        services = (await api.call("GET", V + "/os-services", 200))["services"]
        print("services:", sorted((s["binary"], s["host"], s["state"]) for s in services))
        for name in survivors:
            assert nodes[name].proc.returncode is None, "\n".join(nodes[name].log[-40:])
        if report.broken:
            print_logs(nodes)
            # the history of the first few servers named, what a failure is read from
            named = list(dict.fromkeys(re.findall(r"[0-9a-f]{8}-[0-9a-f-]{27}", "\n".join(report.broken))))
            for server_id in named[:3]:
                print(f"--- what the nodes logged of {server_id} ---\n{mentions(nodes, server_id)}")
        assert not report.broken, f"seed {seed}, {variant}, {victim} killed after {kill_after} requests:\n" + \
            "\n".join(report.broken[:60]) + (f"\n… {len(report.broken) - 60} more" if len(report.broken) > 60 else "")


@pytest.fixture(scope="module")
async def rabbitmq(work_dir):
    async with started(work_dir / "rabbitmq-active-active") as broker:
        yield broker


@pytest.mark.skipif(LONG, reason="NOVA_ASYNC_ACTIVE_ACTIVE=long: the long variant runs instead")
async def test_two_nodes_one_killed_mid_burst(rabbitmq, database, work_dir):
    await active_active(Variant(nodes=2, boots=40, moment="mid"), rabbitmq.url, database, work_dir)


@pytest.mark.skipif(not LONG, reason="the long variant: make conformance (NOVA_ASYNC_ACTIVE_ACTIVE=long)")
@pytest.mark.parametrize("moment", list(MOMENTS))
async def test_three_nodes_one_killed(moment, rabbitmq, database, work_dir):
    await active_active(Variant(nodes=3, boots=200, moment=moment), rabbitmq.url, database, work_dir)


@pytest.mark.skipif(not LONG, reason="the long variant: make conformance (NOVA_ASYNC_ACTIVE_ACTIVE=long)")
@pytest.mark.skipif(cluster_started is None, reason="tests/rabbitmq.py has no cluster_started (3-node RabbitMQ)")
async def test_three_nodes_rabbitmq_node_killed(database, work_dir):
    """The same burst on a 3-node RabbitMQ cluster with quorum queues; its first node (the one
    every nova-async node connects to first) is SIGKILLed mid-burst instead of a nova node."""
    async with cluster_started(work_dir / f"rabbitmq-cluster-{uuid.uuid4().hex[:6]}") as cluster:
        await active_active(Variant(nodes=3, boots=200, moment="mid", victim="broker"), cluster.transport,
                            database, work_dir, cluster=cluster, options=("--rabbit-quorum-queue", "true"))
