"""Hypothesis strategies for hostile requests: path parameters, query strings, headers and
bodies, each mixing values a well-behaved client sends (ids that exist, bodies shaped by the
route's own schema) with values none should (NUL, huge numbers, wrong types, bytes that are
not UTF-8), so that a request gets past the first check often enough to reach the database."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import msgspec
from hypothesis import strategies as st

from tests.integration.fuzz.cloud import HostileRequest
from tests.integration.fuzz.routes import Route, body_schemas, query_names


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, each as often as its weight says (`st.one_of` treats its
    branches alike, and drops repeated ones)."""
    slots = [i for i, (weight, _) in enumerate(choices) for _ in range(weight)]
    return st.sampled_from(slots).flatmap(lambda i: choices[i][1])


# --- scalars -------------------------------------------------------------------------------

INT_EDGES = [0, -1, 1, 2**31 - 1, 2**31, -(2**31) - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1,
             2**64, 10**30, -(10**30)]
FLOAT_EDGES = [0.5, -0.0, 1.5, 1e308, -1e308, 5e-324, 1e20, 3.0]
NASTY_TEXT = [
    "", " ", "\x00", "a\x00b", "%", "%00", "%zz", "%%", "..", "../..", "/", "\\", "'", '"', "' OR '1'='1",
    "null", "true", "false", "[]", "{}", "-1", "0", "1.5", "1e400", "NaN", "Infinity", "0x1F",
    "99999999999999999999", "-99999999999999999999", "2147483648", "9223372036854775808",
    "\u202e\u0644", "\ufeff", "\U0001f600", "\ufffd", "ǅ", "\u0301", "\u00a0", "\t\n\r",
    "2020-13-45T25:61:61Z", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00", "10000-01-01", "-infinity",
    "in:", "in:a,,b", "!", "!in:x", "a,b", ",", "(", "[[", "*", ".*", "(a+)+$", "%s%n", "${jndi:x}",
    "x" * 256, "x" * 70_000, "é" * 300, "²", "٣", "①", "  ", " 1 ", "1\n", "+1", "-0", "1_000", "0" * 400,
]
# Shapes query values take in some APIs (placement's resources and member_of, Glance's in:).
QUERY_SHAPES = ["VCPU:{}", "VCPU:1,MEMORY_MB:{}", "in:{}", "in:{},{}", "!{}", "{}:1", "CUSTOM_FUZZ:{}"]


def text_values(known: list[str]) -> st.SearchStrategy[str]:
    """Strings: ids that exist, classic nasties, and hypothesis' own text (which has NUL,
    combining marks, astral characters, long runs)."""
    return st.one_of(
        st.sampled_from(known) if known else st.nothing(),
        st.sampled_from(NASTY_TEXT),
        st.text(max_size=40),
        st.uuids().map(str),
        st.integers().map(str),
        st.sampled_from(INT_EDGES).map(str),
    )


def json_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from(INT_EDGES),
                     st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(FLOAT_EDGES),
                     st.text(max_size=20), st.sampled_from(NASTY_TEXT[:40]))


def json_values() -> st.SearchStrategy[Any]:
    """Any JSON document: what a confused or malicious client sends in place of the right one."""
    return st.recursive(json_scalars(),
                        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                        max_leaves=12)


# --- bodies shaped by the route's schema ---------------------------------------------------

def _regex(pattern: str) -> st.SearchStrategy[str]:
    try:
        re.compile(pattern)
        return st.from_regex(pattern)
    except (re.error, TypeError, ValueError):
        return st.text(max_size=10)


def _string(schema: dict, known: list[str]) -> st.SearchStrategy[str]:
    if "pattern" in schema:
        fitting = _regex(schema["pattern"])
    elif schema.get("format") == "uuid":
        fitting = st.one_of(st.sampled_from(known) if known else st.nothing(), st.uuids().map(str))
    elif schema.get("format") in ("date-time", "date"):
        fitting = st.datetimes().map(lambda d: d.isoformat() + "Z")
    elif schema.get("format") == "ipv4":
        fitting = st.ip_addresses(v=4).map(str)
    elif schema.get("format") == "ipv6":
        fitting = st.ip_addresses(v=6).map(str)
    else:
        fitting = st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 30), 30))
    return st.one_of(fitting, text_values(known))


def _integer(schema: dict) -> st.SearchStrategy[int]:
    low, high = schema.get("minimum"), schema.get("maximum")
    # Unbounded on a side: hypothesis reaches for large values itself, which is the point.
    return st.one_of(st.integers(min_value=low, max_value=high), st.sampled_from(INT_EDGES))


def shaped(schema: Any, known: list[str], depth: int = 0) -> st.SearchStrategy[Any]:
    """A value shaped like `schema` (the keys, types and enums it names) whose leaves are now
    fitting, now hostile, and whose subtrees are sometimes replaced by the wrong type."""
    if not isinstance(schema, dict) or depth > 6:
        return json_values()
    hostile = st.one_of(json_scalars(), st.just({}), st.just([]), st.just([[[]]]), st.just({"": {"": None}}))
    options: list[st.SearchStrategy[Any]] = []
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    for key in ("oneOf", "anyOf", "allOf"):
        options += [shaped({**schema, key: None, **sub}, known, depth + 1)
                    for sub in schema.get(key) or [] if isinstance(sub, dict)]
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if not kinds and not options and ("properties" in schema or "patternProperties" in schema):
        kinds = ["object"]
    for kind in kinds:
        if kind == "object":
            options.append(_object(schema, known, depth))
        elif kind == "array":
            items = schema.get("items", {})
            options.append(st.lists(shaped(items, known, depth + 1), max_size=3))
        elif kind == "string":
            options.append(_string(schema, known))
        elif kind == "integer":
            options.append(_integer(schema))
        elif kind == "number":
            options.append(st.one_of(_integer(schema), st.floats(allow_nan=False, allow_infinity=False),
                                     st.sampled_from(FLOAT_EDGES)))
        elif kind == "boolean":
            options.append(st.booleans())
        elif kind == "null":
            options.append(st.none())
    if not options:
        options.append(json_values())
    # Fitting values four times as often as hostile ones: most requests should pass the schema's
    # first checks and carry their hostility further in.
    return weighted((4, st.one_of(*options)), (1, hostile))


def _object(schema: dict, known: list[str], depth: int) -> st.SearchStrategy[dict]:
    props = schema.get("properties") or {}
    required = {k: shaped(props.get(k, {}), known, depth + 1) for k in schema.get("required", [])}
    optional = {k: shaped(v, known, depth + 1) for k, v in props.items() if k not in required}
    extra_keys = st.one_of(st.sampled_from(known) if known else st.nothing(), st.text(max_size=12),
                           st.sampled_from(["CUSTOM_FUZZ", "VCPU", "MEMORY_MB", "a", "\x00", "x" * 300]))
    extras: list[st.SearchStrategy[dict]] = []
    for pattern, sub in (schema.get("patternProperties") or {}).items():
        extras.append(st.dictionaries(st.one_of(_regex(pattern), extra_keys), shaped(sub, known, depth + 1),
                                      max_size=3))
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        extras.append(st.dictionaries(extra_keys, shaped(additional, known, depth + 1), max_size=3))
    base = st.fixed_dictionaries(required, optional=optional)
    if not extras:
        return base
    return st.builds(lambda b, *more: {k: v for d in (*more, b) for k, v in d.items()}, base, *extras)


def _paths(value: Any, here: tuple = ()) -> list[tuple]:
    """Where each node of a JSON document is, the document itself first."""
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*here, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*here, i))
    return found


def _mutate(example: Any, path: tuple, how: str, new: Any) -> Any:
    """`example` with the node at `path` replaced by `new`, deleted, or given `new` beside it."""
    doc = msgspec.json.decode(msgspec.json.encode(example))  # a deep copy
    if not path:
        return new if how == "replace" else doc
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "replace":
        parent[last] = new
    elif how == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[f"{last}_x" if isinstance(new, (dict, list)) else "fuzz"] = new
    else:
        parent.append(new)
    return doc


def mutated(example: Any, known: list[str]) -> st.SearchStrategy[Any]:
    """A body a client really sends with one thing changed: a value replaced by a hostile one
    or by the wrong type, a key taken away, or one added. All else stays valid, so the change
    is what the code behind the schema meets."""
    hostile = st.one_of(json_scalars(), st.sampled_from(INT_EDGES), st.sampled_from(NASTY_TEXT),
                        st.sampled_from(known) if known else st.nothing(), st.just({}), st.just([]),
                        st.just([[]]), st.just({"": None}), json_values())
    return st.builds(_mutate, st.just(example), st.sampled_from(_paths(example)),
                     weighted((6, st.just("replace")), (1, st.just("delete")), (1, st.just("add"))), hostile)


def encode(value: Any) -> bytes:
    return msgspec.json.encode(value)


def _filled(example: Any, known: dict[str, list[str]]) -> Any:
    """The example with each "{name}" string (key or value) replaced by a real one."""
    if isinstance(example, str) and example.startswith("{") and example.endswith("}"):
        return known.get(example[1:-1], [example])[0]
    if isinstance(example, dict):
        return {_filled(k, known): _filled(v, known) for k, v in example.items()}
    if isinstance(example, list):
        return [_filled(v, known) for v in example]
    return example


C = "/compute/v2.1"
# Bodies the OpenStack clients send to each route (a few per route), for `mutated`.
EXAMPLES: dict[str, list[Any]] = {
    f"POST {C}/servers": [{"server": {"name": "vm", "imageRef": "{image_id}", "flavorRef": "{flavor_id}",
                                      "networks": [{"uuid": "{network_id}"}], "min_count": 1, "max_count": 2,
                                      "metadata": {"a": "b"}, "key_name": "fuzzkey", "tags": ["t"],
                                      "availability_zone": "nova", "user_data": "aGk=",
                                      "block_device_mapping_v2": [{"boot_index": 0, "uuid": "{image_id}",
                                                                   "source_type": "image",
                                                                   "destination_type": "local"}]},
                           "os:scheduler_hints": {"group": "{group_id}"}}],
    f"PUT {C}/servers/{{server_id}}": [{"server": {"name": "renamed", "description": "d"}}],
    f"POST {C}/servers/{{server_id}}/action": [
        {"reboot": {"type": "SOFT"}}, {"os-stop": None}, {"os-start": None}, {"pause": None},
        {"lock": {"locked_reason": "r"}}, {"unlock": None}, {"os-getConsoleOutput": {"length": 10}},
        {"resize": {"flavorRef": "{flavor_id}"}}, {"confirmResize": None}, {"revertResize": None},
        {"createImage": {"name": "snap", "metadata": {"k": "v"}}},
        {"rebuild": {"imageRef": "{image_id}", "name": "again", "metadata": {"k": "v"}}},
        {"os-getVNCConsole": {"type": "novnc"}}, {"shelve": None}, {"shelveOffload": None},
        {"unshelve": {"availability_zone": "nova", "host": "sim-1"}}, {"unrescue": None},
        {"rescue": {"adminPass": "p", "rescue_image_ref": "{image_id}"}}],
    f"POST {C}/servers/{{server_id}}/remote-consoles": [{"remote_console": {"protocol": "vnc", "type": "novnc"}}],
    f"POST {C}/servers/{{server_id}}/metadata": [{"metadata": {"k": "v"}}],
    f"PUT {C}/servers/{{server_id}}/metadata": [{"metadata": {"k": "v"}}],
    f"PUT {C}/servers/{{server_id}}/metadata/{{key}}": [{"meta": {"role": "v"}}],
    f"PUT {C}/servers/{{server_id}}/tags": [{"tags": ["a", "b"]}],
    f"POST {C}/flavors": [{"flavor": {"name": "f", "ram": 512, "vcpus": 1, "disk": 1, "swap": 0, "id": "f1",
                                      "OS-FLV-EXT-DATA:ephemeral": 0, "rxtx_factor": 1.0,
                                      "os-flavor-access:is_public": True, "description": "d"}}],
    f"POST {C}/flavors/{{flavor_id}}/os-extra_specs": [{"extra_specs": {"hw:cpu_policy": "dedicated"}}],
    f"PUT {C}/flavors/{{flavor_id}}/os-extra_specs/{{key}}": [{"hw:cpu_policy": "shared"}],
    f"POST {C}/os-keypairs": [{"keypair": {"name": "k2", "type": "ssh", "user_id": "alice"}}],
    f"POST {C}/os-aggregates": [{"aggregate": {"name": "agg2", "availability_zone": "az"}}],
    f"PUT {C}/os-aggregates/{{aggregate_id}}": [{"aggregate": {"name": "agg3"}}],
    f"POST {C}/os-aggregates/{{aggregate_id}}/action": [{"add_host": {"host": "sim-1"}},
                                                       {"remove_host": {"host": "sim-1"}},
                                                       {"set_metadata": {"metadata": {"k": "v"}}}],
    f"POST {C}/os-server-groups": [{"server_group": {"name": "g", "policy": "affinity",
                                                     "rules": {"max_server_per_host": 2}}}],
    f"PUT {C}/os-quota-sets/{{project_id}}": [{"quota_set": {"instances": 10, "cores": 20, "ram": 4096,
                                                             "force": True}}],
    f"PUT {C}/os-services/{{service_id}}": [{"status": "disabled", "disabled_reason": "r"},
                                            {"forced_down": True}],
    "POST /image/v2/images": [{"name": "i", "disk_format": "qcow2", "container_format": "bare",
                               "visibility": "shared", "min_disk": 1, "min_ram": 1, "tags": ["t"],
                               "protected": False, "hw_disk_bus": "virtio"}],
    "PATCH /image/v2/images/{image_id}": [[{"op": "replace", "path": "/name", "value": "n"},
                                           {"op": "add", "path": "/hw_qemu_guest_agent", "value": "yes"},
                                           {"op": "remove", "path": "/hw_qemu_guest_agent"}]],
    "POST /network/v2.0/networks": [{"network": {"name": "n", "admin_state_up": True, "shared": False,
                                                 "mtu": 1450, "description": "d"}}],
    "POST /network/v2.0/subnets": [{"subnet": {"network_id": "{network_id}", "cidr": "10.8.0.0/24",
                                               "ip_version": 4, "gateway_ip": "10.8.0.1", "enable_dhcp": True,
                                               "allocation_pools": [{"start": "10.8.0.10", "end": "10.8.0.20"}],
                                               "dns_nameservers": ["10.8.0.2"]}}],
    "POST /network/v2.0/ports": [{"port": {"network_id": "{network_id}", "name": "p",
                                           "fixed_ips": [{"subnet_id": "{subnet_id}", "ip_address": "10.9.0.50"}],
                                           "mac_address": "fa:16:3e:00:00:01", "device_id": "{server_id}",
                                           "device_owner": "compute:nova", "binding:host_id": "sim-1"}}],
    "POST /network/v2.0/routers": [{"router": {"name": "r", "admin_state_up": True, "external_gateway_info": {
        "network_id": "{network_id}", "enable_snat": True, "external_fixed_ips": [{"subnet_id": "{subnet_id}"}]}}}],
    "PUT /network/v2.0/routers/{router_id}": [{"router": {"name": "r", "external_gateway_info": {}, "routes": []}}],
    "PUT /network/v2.0/routers/{router_id}/add_router_interface": [{"subnet_id": "{subnet_id}"},
                                                                   {"port_id": "{port_id}"}],
    "PUT /network/v2.0/routers/{router_id}/remove_router_interface": [{"subnet_id": "{subnet_id}"},
                                                                      {"port_id": "{port_id}"}],
    "POST /network/v2.0/floatingips": [{"floatingip": {"floating_network_id": "{network_id}", "port_id": "{port_id}",
                                                       "fixed_ip_address": "10.9.0.2",
                                                       "floating_ip_address": "203.0.113.9"}}],
    "PUT /network/v2.0/floatingips/{floatingip_id}": [{"floatingip": {"port_id": "{port_id}",
                                                                      "fixed_ip_address": "10.9.0.2"}},
                                                      {"floatingip": {"port_id": None}}],
    "POST /placement/resource_providers": [{"name": "rp", "uuid": "{consumer}",
                                            "parent_provider_uuid": "{uuid}"}],
    "PUT /placement/resource_providers/{uuid}": [{"name": "renamed", "parent_provider_uuid": None}],
    "PUT /placement/resource_providers/{uuid}/inventories": [
        {"resource_provider_generation": 1, "inventories": {"VCPU": {"total": 8, "reserved": 0, "min_unit": 1,
                                                                     "max_unit": 8, "step_size": 1,
                                                                     "allocation_ratio": 16.0}}}],
    "PUT /placement/resource_providers/{uuid}/inventories/{resource_class}": [
        {"resource_provider_generation": 1, "total": 8, "max_unit": 8}],
    "PUT /placement/resource_providers/{uuid}/traits": [{"resource_provider_generation": 1,
                                                         "traits": ["CUSTOM_FUZZ", "HW_CPU_X86_AVX"]}],
    "PUT /placement/resource_providers/{uuid}/aggregates": [{"resource_provider_generation": 1,
                                                             "aggregates": ["{consumer}"]}],
    "PUT /placement/allocations/{consumer}": [
        {"allocations": {"{uuid}": {"resources": {"VCPU": 1, "MEMORY_MB": 64}}}, "project_id": "p",
         "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}],
    "POST /placement/allocations": [
        {"{consumer}": {"allocations": {"{uuid}": {"resources": {"VCPU": 1}}}, "project_id": "p",
                        "user_id": "u", "consumer_generation": 1, "consumer_type": "INSTANCE"}}],
    "POST /placement/resource_classes": [{"name": "CUSTOM_NEW"}],
    "POST /v3/auth/tokens": [{"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": "x"}}},
        "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}],
    "POST /v3/projects": [{"project": {"name": "p2", "description": "d", "enabled": True,
                                       "domain_id": "default"}}],
    "PATCH /v3/projects/{project_id}": [{"project": {"description": "d2", "enabled": True}}],
    "POST /v3/users": [{"user": {"name": "u2", "password": "secret", "default_project_id": "{project_id}",
                                 "enabled": True, "email": "u2@example.org"}}],
    "PATCH /v3/users/{user_id}": [{"user": {"enabled": False, "email": "x@example.org"}}],
    "POST /v3/users/{user_id}/password": [{"user": {"password": "new", "original_password": "old"}}],
}


MALFORMED = [b"", b"{", b"}", b"[", b'{"a":', b'{"a": 1,}', b"[1,]", b"{'a': 1}", b'{"a": 1}}', b"nul",
             b"NaN", b"Infinity", b'{"a": NaN}', b"\xff\xfe\x00{", b'"\xed\xa0\x80"', b'"\\ud800"',
             b'{"a": "\\ud800\\udc00"}', b'{"a": "x\x00y"}', b'{"\\u0000": 1}', b'{"a": "\\u0000"}',
             b"[" * 2000 + b"]" * 2000, b"[" * 500 + b"]" * 500, b'{"a":' * 900 + b"1" + b"}" * 900,
             b"\xef\xbb\xbf{}", b"1" * 5000, b"-" + b"9" * 400, b"1e999999", b" " * 1000]


def bodies(route: Route, known: dict[str, list[str]]) -> st.SearchStrategy[bytes | None]:
    ids = known["any"]
    shaped_bodies = [shaped(s, ids).map(encode) for s in body_schemas(route)]
    examples = [mutated(_filled(e, known), ids).map(encode) for e in EXAMPLES.get(str(route), [])]
    choices = [
        (6, st.one_of(*shaped_bodies) if shaped_bodies else json_values().map(encode)),  # schema-shaped
        (1, json_values().map(encode)),       # any JSON at all
        (1, st.sampled_from(MALFORMED)),      # not JSON, not UTF-8, or nested past any sense
        (1, st.binary(min_size=1, max_size=8).map(lambda b: b'{"name": "' + b + b'"}')),  # bytes in a string
        (1, st.binary(max_size=64)),
        (1, st.none()),
    ]
    if examples:                              # a real body with one thing changed
        choices.append((8, st.one_of(*examples)))
    return weighted(*choices)


# --- the request -----------------------------------------------------------------------------

def _encoded_path_value(known: list[str]) -> st.SearchStrategy[str]:
    return weighted(
        (4, st.sampled_from(known).map(lambda s: quote(s, safe=""))),
        (2, text_values(known).map(lambda s: quote(s, safe=""))),
        (1, st.binary(min_size=1, max_size=16).map(lambda b: quote(b, safe=""))),   # not UTF-8
        (1, st.sampled_from(["..", ".", "%", "%zz", "%00", "%2e%2e", "%2F", "a/b", ";x", "%C0%AE", "~", "@"])),
    )


VERSION_HEADERS = {
    "api": ("OpenStack-API-Version", ["compute 2.1", "compute 2.96", "compute latest"]),
    "placement": ("OpenStack-API-Version", ["placement 1.0", "placement 1.39", "placement latest"]),
}
JUNK_VERSIONS = ["compute 2.999999999999999999999", "compute 3.0", "compute 2.", "compute -2.1", "compute",
                 "placement 1.99999999999999999999", "placement 01.1", "placement latest, compute latest",
                 "", ",,,", "compute 2.96 compute", "2.96", "latest", "\u00e9", "volume 3.0"]
CONTENT_TYPES = ["application/json", "application/json", "application/json", "text/plain", "",
                 "application/openstack-images-v2.1-json-patch", "application/octet-stream",
                 "multipart/form-data; boundary=x", "application/json; charset=latin-1",
                 "application/x-www-form-urlencoded", "junk/junk;;;=", "application/json; charset=\u00e9"]
# Header values the client can send at all: no control characters (those are refused before
# they leave; test_http_oddities sends them over a raw socket).
header_text = st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=40)


def headers(route: Route, users: dict[str, dict[str, str]]) -> st.SearchStrategy[dict[str, str]]:
    name, good = VERSION_HEADERS.get(route.api, ("OpenStack-API-Version", ["compute 2.96"]))
    # Each part is usually right, so that the request's hostility is usually elsewhere and
    # it gets past authentication and version negotiation to the handler.
    auth = weighted((8, st.sampled_from(list(users.values()))),
                    (1, st.builds(lambda t: {"X-Auth-Token": t}, header_text)),
                    (1, st.just({})))
    junk = {
        "X-OpenStack-Nova-API-Version": st.one_of(st.sampled_from(["2.1", "2.96", "latest"]), header_text),
        "X-Auth-Project-Id": header_text,
        "Accept": st.one_of(st.just("application/json"), header_text),
        "X-Subject-Token": header_text,
    }
    extra = weighted((4, st.just({})), (1, st.fixed_dictionaries({}, optional=junk)))
    return st.builds(
        lambda a, version, ctype, extra: {**a, **({name: version} if version is not None else {}),
                                          **({"Content-Type": ctype} if ctype is not None else {}), **extra},
        auth,
        weighted((8, st.sampled_from(good)), (1, st.sampled_from(JUNK_VERSIONS)), (1, header_text),
                 (1, st.none())),
        weighted((6, st.just("application/json")), (1, st.sampled_from(CONTENT_TYPES)), (1, header_text),
                 (1, st.none())),
        extra,
    )


def query_strings(route: Route) -> st.SearchStrategy[str]:
    names = list(query_names(route.api))
    name = st.one_of(st.sampled_from(names), st.sampled_from(names).map(lambda n: n + "1"),
                     st.text(max_size=12))
    value = weighted((3, text_values([])),
                     (1, st.tuples(st.sampled_from(QUERY_SHAPES), text_values([])).map(
                         lambda sv: sv[0].replace("{}", sv[1]))))
    pair = st.tuples(name, value).map(lambda kv: f"{quote(kv[0], safe='')}={quote(kv[1], safe='')}")
    raw = st.sampled_from(["&&==&", "a", "=", "a=%ZZ", "%00=%00", ";;", "a=1&a=2&a=3", "limit=1&limit=x",
                           "?", "#", "a=%ff%fe", "marker", "=x", "x" * 9000])
    return weighted((2, st.just("")), (2, st.lists(pair, min_size=1, max_size=4).map("&".join)), (1, raw))


def _one(route: Route, known: dict[str, list[str]],
         users: dict[str, dict[str, str]]) -> st.SearchStrategy[HostileRequest]:
    path_values = [_encoded_path_value(known.get(p) or known["any"]) for p in route.params]

    def fill(values: list[str]) -> str:
        path = route.template
        for param, value in zip(route.params, values):
            path = path.replace("{" + param + "}", value, 1)
        return path

    body = bodies(route, known) if route.method in ("POST", "PUT", "PATCH") \
        else st.one_of(st.none(), st.none(), st.sampled_from(MALFORMED))
    # Assembled by map, not builds: hypothesis prints a built object argument by argument,
    # and a 70 kB body makes that repr a warning (an error here); ours is cut short.
    parts = st.tuples(st.tuples(*path_values).map(fill), query_strings(route), headers(route, users), body)
    return parts.map(lambda p: HostileRequest(route.method, *p))


def requests(routes: list[Route], known: dict[str, list[str]],
             users: dict[str, dict[str, str]]) -> st.SearchStrategy[HostileRequest]:
    """A request to any of `routes`, each API as likely as the next (placement's many routes
    do not crowd out the image API's few)."""
    by_api: dict[str, list[st.SearchStrategy[HostileRequest]]] = {}
    for route in routes:
        by_api.setdefault(route.api, []).append(_one(route, known, users))
    return st.one_of(*(st.one_of(*strategies) for strategies in by_api.values()))
