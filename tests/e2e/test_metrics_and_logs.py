"""What an operator watches, read from a real `nova-async serve` (libvirt's test driver):
the /metrics scrape after a server is built and another one is refused, and the JSON log
lines with the request id, role and instance uuid bound."""

from __future__ import annotations

import json
import re

import aiohttp

from tests.e2e.conftest import serve
from tests.e2e.driver import V, Api



def sample(text: str, name: str, **labels: str) -> float:
    """The value of the series `name` whose labels include `labels`."""
    for line in text.splitlines():
        found = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if found and all(f'{k}="{v}"' in (found.group(1) or "") for k, v in labels.items()):
            return float(found.group(2))
    raise AssertionError(f"no {name} {labels} in /metrics:\n{text}")


async def test_metrics_and_json_logs_of_a_served_process(database, work_dir):
    async with serve(work_dir / "metrics", "--database", database, "--libvirt-uri", "test:///default") as served:
        async with aiohttp.ClientSession() as s:
            api = await Api.admin(s, served)
            small = (await api.call("POST", V + "/flavors", 200, json={"flavor": {
                "name": "m1.metrics", "ram": 256, "vcpus": 1, "disk": 1}}))["flavor"]["id"]
            huge = (await api.call("POST", V + "/flavors", 200, json={"flavor": {
                "name": "m1.huge", "ram": 256, "vcpus": 1, "disk": 1000000}}))["flavor"]["id"]
            image = await api.image("metrics-image", b"\0" * 65536, "raw", "bare")
            net = (await api.call("POST", "/network/v2.0/networks", 201,
                                  json={"network": {"name": "metrics-net"}}))["network"]["id"]
            await api.call("POST", "/network/v2.0/subnets", 201, json={"subnet": {
                "network_id": net, "cidr": "10.9.0.0/24", "ip_version": 4}})
            base = {"imageRef": image, "networks": [{"uuid": net}]}

            built = await api.status(await api.boot({**base, "flavorRef": small}, "metrics-vm"), "ACTIVE")
            refused = await api.status(await api.boot({**base, "flavorRef": huge}, "metrics-toobig"),
                                       "ACTIVE", "ERROR")
            assert refused["status"] == "ERROR"

            async with s.get(f"{served.url}/metrics") as r:  # no token: a scraper has none
                assert r.status == 200
                assert r.headers["Content-Type"].startswith("text/plain")
                text = await r.text()

    # Request latency by API and status; builds by outcome; scheduling decisions;
    # bus depth and RPC latency; the process itself.
    assert sample(text, "nova_async_http_request_duration_seconds_count", api="api", method="POST",
                  status="202") >= 2
    assert sample(text, "nova_async_http_request_duration_seconds_count", api="identity", status="201") >= 1
    assert sample(text, "nova_async_builds_total", outcome="active") == 1
    assert sample(text, "nova_async_builds_total", outcome="error") == 1
    assert sample(text, "nova_async_scheduling_decisions_total", result="placed") == 1
    assert sample(text, "nova_async_scheduling_decisions_total", result="no_valid_host") == 1
    assert sample(text, "nova_async_scheduling_decision_duration_seconds_count", result="placed") == 1
    assert sample(text, "nova_async_bus_queue_depth", topic="conductor") == 0
    assert sample(text, "nova_async_bus_rpc_duration_seconds_count", topic="scheduler",
                  message="SelectDestinations", outcome="ok") == 1
    assert sample(text, "nova_async_bus_rpc_duration_seconds_count", topic="scheduler",
                  message="SelectDestinations", outcome="error") == 1
    assert sample(text, "process_resident_memory_bytes") > 0
    # Nothing that belongs to a project: no ids, names or paths.
    for private in (built["id"], refused["id"], built["tenant_id"], "metrics-vm", "metrics-image",
                    image, net, "/servers"):
        assert private not in text, private

    # JSON lines with the context bound: the canonical request line, a compute line.
    lines = [json.loads(line) for line in served.log if line.startswith("{")]
    assert len(lines) > 0.9 * len(served.log), "log lines that are not JSON:\n" + "\n".join(
        line for line in served.log if not line.startswith("{"))
    booted = [e for e in lines if e["event"] == "request" and e.get("method") == "POST"
              and e.get("path") == f"{V}/servers" and e.get("status") == 202]
    assert booted and all(e["request_id"].startswith("req-") and e["role"] == "api" for e in booted)
    active = [e for e in lines if e["event"] == "instance active"]
    assert [(e["instance_uuid"], e["role"]) for e in active] == [(built["id"], "compute")]
    assert active[0]["request_id"] in {e["request_id"] for e in booted}
