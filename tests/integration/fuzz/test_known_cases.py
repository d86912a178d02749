"""Fixed hostile requests: the examples a user's probe answered with 500, and one case for
each class of 500 the fuzzer (test_hostile_input.py) found. Each must get the status named
here, in the fault format of the API it was sent to."""

from __future__ import annotations

import json

import pytest

from nova_async.common.web import BACKSTOP_REFUSAL
from tests.integration.fuzz.cloud import Cloud, HostileRequest

C = "/compute/v2.1"
MV = {"OpenStack-API-Version": "compute 2.96"}
PV = {"OpenStack-API-Version": "placement 1.39"}
JSON = {"Content-Type": "application/json"}

def in_fault_format(path: str, status: int, body: bytes) -> bool:
    """Whether `body` is a fault in the format of the API that `path` is under."""
    if path.startswith("/image"):
        return body.decode().startswith(f"{status} ")
    doc = json.loads(body)
    if path.startswith("/compute"):
        [(_, fault)] = doc.items()
        return fault["code"] == status
    if path.startswith("/placement"):
        return doc["errors"][0]["status"] == status
    if path.startswith("/network"):
        return "type" in doc["NeutronError"]
    if path.startswith("/v3"):
        return doc["error"]["code"] == status
    raise AssertionError(f"no fault format known for {path}")


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def case(method: str, url: str, status: int, body: object = None, headers: dict | None = None,
         user: str = "admin") -> tuple:
    raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    return method, url, {**JSON, **(headers or {})}, raw, status, user


async def wrong_answers(cloud: Cloud, cases: list[tuple]) -> list[str]:
    """Each case sent in turn (one cloud for all: starting one takes seconds); what went wrong."""
    wrong = []
    for method, url, headers, body, status, user in cases:
        req = HostileRequest(method, url.format(**{k: v[0] for k, v in cloud.known.items()}), "",
                             {**cloud.users[user], **headers}, body)
        got, text = await cloud.send(req)
        if got != status or (status >= 400 and not in_fault_format(req.path, got, text)):
            wrong.append(f"{got}, not {status}, for:\n{req}\n  answer: {text[:300]!r}")
        elif BACKSTOP_REFUSAL.encode() in text:
            wrong.append(f"refused by the database, not where it was read, for:\n{req}")
    return wrong


CASES = [
    # A NUL anywhere is refused before a handler runs (the user's probe: it reached PostgreSQL
    # from the path, the query and JSON strings).: a NUL reached PostgreSQL from the path, the query, a JSON string.
    case("GET", C + "/flavors/%00", 400, headers=MV),
    case("GET", "/network/v2.0/ports?device_id=%00", 400),
    case("GET", C + "/servers?name=%00", 400, headers=MV),
    case("GET", C + "/servers/detail?host=a%00b&all_tenants=1", 400, headers=MV),
    case("DELETE", C + "/os-keypairs/key%00", 400, headers=MV),
    case("GET", "/image/v2/images/%00", 400),
    case("GET", "/image/v2/images?name=%00", 400),
    case("GET", "/placement/resource_providers?name=%00", 400, headers=PV),
    case("GET", "/placement/resource_classes/CUSTOM_%00", 400, headers=PV),
    case("GET", "/v3/projects?name=%00", 400),
    case("GET", "/v3/users/%00", 400),
    case("POST", C + "/os-keypairs", 400, {"keypair": {"name": "a\u0000b"}}),
    case("PUT", C + "/servers/{server_id}/metadata/k", 400, {"meta": {"k": "\u0000"}}, MV),
    case("POST", C + "/flavors", 400, {"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 1,
                                                  "description": "\u0000"}}, MV),
    case("POST", "/network/v2.0/networks", 400, {"network": {"name": "a\u0000"}}),
    case("POST", "/image/v2/images", 400, {"name": "img", "note\u0000": "x"}),
    case("PUT", "/placement/resource_providers/{uuid}", 400, {"name": "\u0000"}, PV),
    # JSON nested past any sense: msgspec gives up at ~1,000 levels with a RecursionError,
    # which was a 500; anything past 32 levels is refused before a schema walks it.
    case("POST", "/v3/projects", 400, b"[" * 2000 + b"]" * 2000),
    case("POST", C + "/servers", 400, b'{"a":' * 900 + b"1" + b"}" * 900, MV),
    case("PUT", "/placement/allocations/{consumer}", 400, b"[" * 500 + b"]" * 500, PV),
    case("POST", "/network/v2.0/networks", 400, {"network": {"name": "n", "x": nested(40)}}),
    # A noVNC file name longer than the filesystem allows: is_file() raised ENAMETOOLONG.
    case("GET", "/compute/console/novnc/" + "x" * 256, 404),
    case("GET", "/compute/console/novnc/core/" + "x" * 300 + ".js", 404),
    # Digits int() refuses though str.isdigit() says yes ("²"): checked with isdigit, then int().
    case("GET", C + "/os-aggregates/%C2%B2", 404, headers=MV),
    case("POST", C + "/os-aggregates/%C2%B2/action", 404, {"add_host": {"host": "sim-1"}}, MV),
    case("GET", "/placement/allocation_candidates?resources=VCPU:1&limit=%C2%B2", 400, headers=PV),
    case("GET", "/placement/allocation_candidates?resources=VCPU:%C2%B2", 400, headers=PV),
    case("GET", "/placement/resource_providers?resources=VCPU:%C2%B2", 400, headers=PV),
    # Integers in query strings past what their column or parameter holds: each is bounded
    # where it is read (query_int, placement's parsers, Neutron's ip_version filter).
    case("GET", C + "/os-keypairs?limit=99999999999999999999", 400, headers=MV),
    case("GET", C + "/os-server-groups?limit=99999999999999999999", 400, headers=MV),
    case("GET", C + "/os-server-groups?offset=9223372036854775808", 400, headers=MV),
    case("GET", C + "/flavors?minRam=99999999999999999999", 400, headers=MV),
    case("GET", C + "/flavors/detail?minDisk=3000000000", 400, headers=MV),
    case("GET", "/network/v2.0/subnets?ip_version=3000000000", 400),
    case("GET", "/network/v2.0/subnets?ip_version=40000", 400),
    case("GET", "/placement/allocation_candidates?resources=VCPU:1&limit=99999999999999999999", 400,
         headers=PV),
    case("GET", "/placement/resource_providers?resources=VCPU:3000000000", 400, headers=PV),
    # Bytes in a JSON string that are not UTF-8: msgspec raises UnicodeDecodeError for them.
    case("POST", C + "/flavors", 400, b'"\xed\xa0\x80"', MV),
    case("PUT", "/placement/resource_providers/{uuid}", 400, b'{"name": "\xff"}', PV),
    case("POST", "/network/v2.0/networks", 400, b'{"network": {"name": "\xc0\xae"}}'),
    case("PATCH", "/v3/users/{user_id}", 400, b'"\xed\xa0\x80"'),
    # A value the schema's pattern lets through and int() refuses: swap of spaces only.
    case("POST", C + "/flavors", 200, {"flavor": {"name": "spaced", "ram": " 64 ", "vcpus": 1, "disk": 1,
                                                  "swap": "  "}}, MV),
    case("POST", C + "/flavors", 200, {"flavor": {"name": "unicode-spaced", "ram": "\u202f64\x1e", "vcpus": 1,
                                                  "disk": "\x1f1\u2029", "swap": "\x1c"}}, MV),   # found by the fuzzer
]


async def test_hostile_requests_get_their_apis_4xx(cloud):
    wrong = await wrong_answers(cloud, CASES)
    assert not wrong, "\n".join(wrong)


# Keystone token requests whose fields have the wrong types (the probe's examples).
IDENTITY = [
    case("POST", "/v3/auth/tokens", 400, {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": "admin", "domain": " ", "password": "x"}}}}}),
    case("POST", "/v3/auth/tokens", 400, {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": "admin", "domain": {"id": "default"}, "password": 1.5}}}}}),
    case("POST", "/v3/auth/tokens", 400, {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": "admin", "domain": -133451467, "password": "x"}}}}}),   # found by the fuzzer
]


async def test_wrongly_typed_token_requests_are_refused(cloud):
    wrong = await wrong_answers(cloud, IDENTITY)
    assert not wrong, "\n".join(wrong)
