"""A whole cloud for hostile requests: every role in this test's event loop over its own
database (libvirt's test driver behind two simulated hosts), with one of each thing a path
can name, so that random requests reach past "not found" into the code that writes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

import aiohttp
import pytest
import yarl

from nova_async.common.web import API_NAME
from nova_async.network import external
from tests.harness import Harness, running
from tests.waiting import until
from tests.integration.fuzz.routes import Route, enumerate_routes


@dataclasses.dataclass(repr=False)
class HostileRequest:
    """One request exactly as it goes on the wire (nothing re-encoded on the way)."""

    method: str
    path: str                        # already percent-encoded, sent as it is
    query: str                       # already encoded, without the "?"
    headers: dict[str, str]
    body: bytes | None

    @property
    def url(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")

    def __str__(self) -> str:
        body = "" if self.body is None else f"\n  body ({len(self.body)} bytes): {self.body[:600]!r}"
        return f"{self.method} {self.url[:800]}\n  headers: {self.headers}{body}"

    __repr__ = __str__  # hypothesis prints drawn values with repr: short, whatever the body


ROLES = ["identity", "image", "network", "placement", "api", "conductor", "scheduler", "compute", "volume"]
C = "/compute/v2.1"
MV = {"OpenStack-API-Version": "compute 2.96"}
PV = {"OpenStack-API-Version": "placement 1.39"}


class Cloud:
    """The running cloud, what its routes are and what its paths can name. Not a dataclass:
    hypothesis prints a failing test's arguments, and would print a dataclass field by field
    (every route and the whole harness) where this prints one line."""

    def __init__(self, h: Harness, routes: list[Route], known: dict[str, list[str]],
                 session: aiohttp.ClientSession) -> None:
        self.h = h
        self.routes = routes
        self.known = known               # path parameter name -> values that name something real
        self.session = session           # a connection per request: a drop is that request's fault

    def __repr__(self) -> str:
        return f"<cloud: {len(self.routes)} routes>"

    @property
    def users(self) -> dict[str, dict[str, str]]:
        return {"admin": self.h.admin, "alice": self.h.alice}

    async def send(self, req: HostileRequest) -> tuple[int, bytes]:
        """The answer's status and whole body; a dropped connection or a truncated body fails
        the test, naming the request."""
        # Sent as written: yarl would otherwise decode, re-encode or normalise it.
        url = yarl.URL(str(self.h.http.make_url("")).rstrip("/") + req.url, encoded=True)
        try:
            async with self.session.request(req.method, url, headers=req.headers, data=req.body,
                                            skip_auto_headers=("Content-Type",)) as resp:
                if resp.content_type == "text/event-stream":
                    # The event stream (GET /compute/v2.1/events) has no end: its answer is
                    # the status it opened with.
                    return resp.status, b""
                return resp.status, await resp.read()
        except aiohttp.ClientResponseError as exc:
            # An answer the client could not parse past its status line: aiohttp's server
            # refuses an over-long request line with a 400 that has a body even for HEAD.
            if exc.status:
                return exc.status, exc.message.encode()
            pytest.fail(f"unreadable answer ({exc!r:.300}) for:\n{req}")
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            pytest.fail(f"connection dropped ({exc!r:.300}) for:\n{req}")


async def _ok(resp: aiohttp.ClientResponse, *statuses: int):
    assert resp.status in statuses, f"{resp.method} {resp.url}: {resp.status} {await resp.text()}"
    return await resp.json() if resp.content_type == "application/json" else None


async def _seed(h: Harness) -> dict[str, list[str]]:
    """One of each resource; returns what each path parameter can name."""
    http, admin, alice = h.http, {**h.admin, **MV}, {**h.alice, **MV}
    flavor = (await _ok(await http.post(C + "/flavors", headers=admin, json={"flavor": {
        "name": "fuzz", "ram": 256, "vcpus": 1, "disk": 1}}), 200))["flavor"]["id"]
    await _ok(await http.post(f"{C}/flavors/{flavor}/os-extra_specs", headers=admin,
                              json={"extra_specs": {"hw:cpu_policy": "shared"}}), 200)
    image = (await _ok(await http.post("/image/v2/images", headers=h.alice, json={
        "name": "fuzz", "disk_format": "raw", "container_format": "bare"}), 201))["id"]
    await _ok(await http.put(f"/image/v2/images/{image}/file", data=b"\0" * 4096,
                             headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    net = (await _ok(await http.post("/network/v2.0/networks", headers=h.alice,
                                     json={"network": {"name": "fuzz"}}), 201))["network"]["id"]
    subnet = (await _ok(await http.post("/network/v2.0/subnets", headers=h.alice, json={"subnet": {
        "network_id": net, "cidr": "10.9.0.0/24", "ip_version": 4}}), 201))["subnet"]["id"]
    port = (await _ok(await http.post("/network/v2.0/ports", headers=h.alice,
                                      json={"port": {"network_id": net}}), 201))["port"]["id"]
    public = str((await external.ensure(h.pool, h.deps.settings.network))["id"])
    router = (await _ok(await http.post("/network/v2.0/routers", headers=h.alice, json={"router": {
        "name": "fuzz", "external_gateway_info": {"network_id": public}}}), 201))["router"]["id"]
    await _ok(await http.put(f"/network/v2.0/routers/{router}/add_router_interface", headers=h.alice,
                             json={"subnet_id": subnet}), 200)
    fip = (await _ok(await http.post("/network/v2.0/floatingips", headers=h.alice, json={"floatingip": {
        "floating_network_id": public, "port_id": port}}), 201))["floatingip"]["id"]
    security_group = (await _ok(await http.post("/network/v2.0/security-groups", headers=h.alice, json={
        "security_group": {"name": "fuzz"}}), 201))["security_group"]["id"]
    rule = (await _ok(await http.post("/network/v2.0/security-group-rules", headers=h.alice, json={
        "security_group_rule": {"security_group_id": security_group, "direction": "ingress", "protocol": "tcp",
                                "port_range_min": 22, "port_range_max": 22}}), 201))["security_group_rule"]["id"]
    await _ok(await http.post(C + "/os-keypairs", headers=h.alice,  # 2.1: generated
                              json={"keypair": {"name": "fuzzkey"}}), 200, 201)
    aggregate = (await _ok(await http.post(C + "/os-aggregates", headers=admin, json={
        "aggregate": {"name": "fuzzagg"}}), 200))["aggregate"]["id"]
    group = (await _ok(await http.post(C + "/os-server-groups", headers=alice, json={
        "server_group": {"name": "fuzzgrp", "policy": "anti-affinity"}}), 200))["server_group"]["id"]
    server = (await _ok(await http.post(C + "/servers", headers=alice, json={"server": {
        "name": "fuzzvm", "imageRef": image, "flavorRef": flavor, "networks": [{"uuid": net}],
        "metadata": {"role": "fuzz"}, "tags": ["fuzztag"]}}), 202))["server"]["id"]
    async def status() -> str:
        return (await _ok(await http.get(f"{C}/servers/{server}", headers=alice), 200))["server"]["status"]

    await until(status, lambda s: s in ("ACTIVE", "ERROR"), what="the fuzz server built")
    actions = (await _ok(await http.get(f"{C}/servers/{server}/os-instance-actions", headers=alice), 200))
    services = (await _ok(await http.get(C + "/os-services", headers=admin), 200))["services"]
    await _ok(await http.put("/placement/resource_classes/CUSTOM_FUZZ", headers={**h.admin, **PV}), 201, 204)
    await _ok(await http.put("/placement/traits/CUSTOM_FUZZ", headers={**h.admin, **PV}), 201, 204)
    providers = [p["uuid"] for p in (await _ok(await http.get("/placement/resource_providers",
                                                              headers={**h.admin, **PV}), 200))["resource_providers"]]
    projects = [p["id"] for p in (await _ok(await http.get("/v3/projects", headers=h.admin), 200))["projects"]]
    users = [u["id"] for u in (await _ok(await http.get("/v3/users", headers=h.admin), 200))["users"]]
    roles = [r["id"] for r in (await _ok(await http.get("/v3/roles", headers=h.admin), 200))["roles"]]
    known = {
        "flavor_id": [flavor], "key": ["hw:cpu_policy", "role"], "server_id": [server], "tag": ["fuzztag"],
        "image_id": [image], "network_id": [net, public], "subnet_id": [subnet], "port_id": [port],
        "router_id": [router], "floatingip_id": [fip], "alias": ["router", "external-net"],
        "name": ["fuzzkey", "CUSTOM_FUZZ", "VCPU", "HW_CPU_X86_AVX"], "aggregate_id": [str(aggregate)],
        "group_id": [group, security_group], "security_group_id": [security_group], "rule_id": [rule],
        "service_id": [str(s["id"]) for s in services], "uuid": providers,
        "resource_class": ["CUSTOM_FUZZ", "VCPU", "DISK_GB"], "consumer": [server],
        "project_id": [*projects, "proj-a", "admin"], "user_id": [*users, "alice"], "role_id": roles,
        "domain_id": ["default"], "request_id": [a["request_id"] for a in actions["instanceActions"]],
        "path": ["vnc_lite.html", "core/rfb.js", "../../etc/passwd"],
    }
    known["any"] = sorted({v for values in known.values() for v in values})
    return known


@contextlib.asynccontextmanager
async def fuzz_cloud(pool, tmp_path) -> AsyncIterator[Cloud]:
    async with running(pool, ROLES, tmp_path, compute={"simulate_hosts": 2, "sim_vcpus": 64,
                                                       "sim_memory_mb": 65536, "sim_disk_gb": 500},
                       network={"external_cidr": "203.0.113.0/24"}) as h:
        known = await _seed(h)
        routes = enumerate_routes(h.http.app, API_NAME)
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(connector=connector,
                                         timeout=aiohttp.ClientTimeout(total=30)) as session:
            yield Cloud(h=h, routes=routes, known=known, session=session)
