"""Prometheus metrics: what an operator graphs and alerts on, served at /metrics.

Every metric object lives here, behind small functions named for what happened
(`observe_rpc`, `build_finished`, …), so any transport or role records the same series
with one call and never touches prometheus_client itself. Labels are bounded and carry no
project data: API and role names, status codes, message types, bus topics (a compute
host's topic names that host), outcomes — never project ids, instance uuids, user names
or paths.

The registry is our own, not prometheus_client's global one, so /metrics shows exactly
these series plus the process's own (memory, CPU, open files)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram,
                               ProcessCollector, generate_latest)

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)

CONTENT_TYPE = CONTENT_TYPE_LATEST

_HTTP = Histogram(
    "nova_async_http_request_duration_seconds",
    "Time to answer one HTTP request, by the API (role) that served it and the status it got",
    ["api", "method", "status"], registry=REGISTRY)
_BUILDS = Counter(
    "nova_async_builds",
    "Instance builds that ended: active, error (the instance is ERROR), or rescheduled "
    "(handed to an alternate host)",
    ["outcome"], registry=REGISTRY)
_DECISIONS = Counter(
    "nova_async_scheduling_decisions",
    "Scheduling requests decided: placed (every instance got a claimed host), no_valid_host, "
    "or failed (an error other than no valid host)",
    ["result"], registry=REGISTRY)
_DECISION_SECONDS = Histogram(
    "nova_async_scheduling_decision_duration_seconds",
    "Time to decide one scheduling request, placement claims included",
    ["result"], registry=REGISTRY)
_QUEUE_DEPTH = Gauge(
    "nova_async_bus_queue_depth",
    "Messages waiting on a bus topic that no consumer has taken yet",
    ["topic"], registry=REGISTRY)
_RPC = Histogram(
    "nova_async_bus_rpc_duration_seconds",
    "Round trip of one bus call (send, handle, answer), by topic, message type and outcome "
    "(ok, error: the receiver raised, timeout: no answer)",
    ["topic", "message", "outcome"], registry=REGISTRY)

_LEASES = Gauge(
    "nova_async_lease_held",
    "1 while this process runs the global job (common/lease.py), 0 while another copy does",
    ["job"], registry=REGISTRY)
_NODE = Gauge(
    "nova_async_node_info",
    "Always 1: which node serves this /metrics (several copies behind one load balancer each "
    "answer for themselves): its host name, the URL it listens on, its roles and release",
    ["host", "listen", "roles", "version"], registry=REGISTRY)

BUILD_OUTCOMES = ("active", "error", "rescheduled")
DECISION_RESULTS = ("placed", "no_valid_host", "failed")
# Known label values start at zero, so a rate() works from the first scrape.
for _outcome in BUILD_OUTCOMES:
    _BUILDS.labels(_outcome)
for _result in DECISION_RESULTS:
    _DECISIONS.labels(_result)


# A series' child looked up once per label values, not at every observation: labels() checks
# and locks each time, a cost paid on every bus message and HTTP request. The label values
# are bounded (above), and so are these caches.
_http = functools.cache(_HTTP.labels)
_rpc = functools.cache(_RPC.labels)
_queue_depth = functools.cache(_QUEUE_DEPTH.labels)


def node_is(host: str, listen: str, roles: list[str], version: str) -> None:
    """Name the node this process is, once at start."""
    _NODE.labels(host, listen, ",".join(roles), version).set(1)


def observe_request(api: str, method: str, status: int, seconds: float) -> None:
    _http(api, method, status).observe(seconds)


def build_finished(outcome: str) -> None:
    """A build attempt ended: `outcome` is one of BUILD_OUTCOMES."""
    _BUILDS.labels(outcome).inc()


def scheduling_decided(result: str, seconds: float) -> None:
    """`result`: one of DECISION_RESULTS."""
    _DECISIONS.labels(result).inc()
    _DECISION_SECONDS.labels(result).observe(seconds)


def set_queue_depth(topic: str, depth: int) -> None:
    _queue_depth(topic).set(depth)


def read_queue_depth(topic: str, depth: Callable[[], int]) -> None:
    """The topic's depth, asked of `depth` when scraped (a queue in this process: nothing is
    written per message)."""
    _queue_depth(topic).set_function(depth)


def observe_rpc(topic: str, seconds: float, *, message: str = "", outcome: str = "ok") -> None:
    _rpc(topic, message, outcome).observe(seconds)


def lease_held(job: str, held: bool) -> None:
    _LEASES.labels(job).set(1 if held else 0)


def render() -> bytes:
    """The exposition text for a scrape."""
    return generate_latest(REGISTRY)
