"""The fast check of request bodies (common/schema_fast.py) against jsonschema: the same
verdict for every schema the service builds, over bodies made from each schema (near it, on
its bounds, and wrong in every way a client gets it wrong)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import random
from typing import Any

import jsonschema
import pytest

import nova_async
from nova_async.api import microversion
from nova_async.common import schema_fast
from nova_async.common import web as w
from nova_async.common.microversion import Version

UUID = "0f7c3c4e-8b1e-4a53-9d1a-2f6a3c1b2d4e"
STRINGS = ["", " ", "x", " x", "x ", "a b", "1", "0", "-1", "01", "1.5", "true", "True", "on", "NO", "auto",
           "none", UUID, UUID.upper(), "{" + UUID + "}", UUID.replace("-", ""), UUID + "\n", "10.0.0.1",
           "10.0.0.256", "fe80::1", "::1", "192.0.2.1/24", "aGVsbG8=", "not base64!", "AUTO", "MANUAL",
           "é", "\x00", "a" * 60, "a" * 61, "a" * 255, "a" * 256, "2026-11-29T03:00:00Z", "public", "private"]
SCALARS = [None, True, False, 0, 1, -1, 1.0, 1.5, 2, 10, 65535, 65536, 2**40, "", "x"]


def every_validator() -> list[Any]:
    """Every validator the service builds, one per distinct schema: those its modules build
    when imported, and those built for a request's microversion (a cached builder of one
    `version`, asked for each microversion)."""
    for info in pkgutil.walk_packages(nova_async.__path__, "nova_async."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:   # a module for another platform's part, not ours to judge here
            continue
        for builder in vars(module).values():
            if hasattr(builder, "cache_info") and list(inspect.signature(builder).parameters) == ["version"]:
                for minor in range(microversion.MIN.minor, microversion.MAX.minor + 1):
                    builder(Version(2, minor))
    found = (ref() for ref, _ in schema_fast._MADE.values())
    return list({json.dumps(v.schema, sort_keys=True): v for v in found if v is not None}.values())


def near(schema: Any, rng: random.Random, noise: float, depth: int = 0) -> Any:
    """A value made from `schema`: what it asks for, but wrong here and there with
    probability `noise` at each step (0: a body meant to pass, which most do)."""
    if rng.random() < noise or depth > 6 or not isinstance(schema, dict):
        return rng.choice(SCALARS + [[], {}, [1], {"a": 1}])
    for combined in ("oneOf", "anyOf", "allOf"):
        if combined in schema and rng.random() < 0.7:
            return near(rng.choice(schema[combined]), rng, noise, depth + 1)
    if "enum" in schema:
        value = rng.choice(schema["enum"])
        return value if rng.random() >= noise else rng.choice([str(value), [value], 1, True])
    if "const" in schema and rng.random() >= noise:
        return schema["const"]
    if "if" in schema and rng.random() < 0.5:
        return near(rng.choice([schema["if"], schema.get("then", {}), schema.get("else", {})]), rng, noise, depth + 1)
    types = schema.get("type") or rng.choice(["object", "string", "integer", "array", "boolean", "null"])
    kind = rng.choice([types] if isinstance(types, str) else types)
    if rng.random() < noise:
        kind = rng.choice(["object", "string", "integer", "number", "array", "boolean", "null"])
    if kind == "object":
        value: dict[str, Any] = {}
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if rng.random() >= noise / 2:
                value[name] = near(props.get(name, {}), rng, noise, depth + 1)
        for name, sub in props.items():
            if rng.random() < 0.4:
                value[name] = near(sub, rng, noise, depth + 1)
        if rng.random() < noise:
            value[rng.choice(["extra", "x-1", "a" * 256, ""])] = near({}, rng, noise, depth + 1)
        for pattern, sub in schema.get("patternProperties", {}).items():
            if rng.random() < 0.5:
                value[rng.choice(["key", "k1", "", "a" * 256, "é"])] = near(sub, rng, noise, depth + 1)
        return value
    if kind == "array":
        items = [near(schema.get("items", {}), rng, noise, depth + 1)
                 for _ in range(rng.choice([0, 1, 1, 2, 3] + ([51] if noise else [])))]
        if "contains" in schema and rng.random() < 0.6:
            items.append(near(schema["contains"], rng, noise, depth + 1))
        return items
    if kind == "boolean":
        return rng.choice([True, False] + (["true", 1, 0] if noise else []))
    if kind == "null":
        return rng.choice([None] + (["null", 0, False] if noise else []))
    candidates = leaves(schema, kind)
    if not noise:   # one the leaf takes, when the pool has one
        candidates = taken(schema, kind) or candidates
    return rng.choice(candidates)


_TAKEN: dict[tuple[int, str], list[Any]] = {}


def taken(schema: dict[str, Any], kind: str) -> list[Any]:
    key = (id(schema), kind)   # the schemas live as long as the service's validators
    if key not in _TAKEN:
        leaf = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        _TAKEN[key] = [c for c in leaves(schema, kind) if leaf.is_valid(c)]
    return _TAKEN[key]


def leaves(schema: dict[str, Any], kind: str) -> list[Any]:
    if kind == "string":
        bounds = [schema[k] for k in ("minLength", "maxLength") if isinstance(schema.get(k), int)]
        return STRINGS + ["a" * max(0, b + d) for b in bounds for d in (-1, 0, 1)]
    bounds = [schema[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
              if isinstance(schema.get(k), (int, float)) and not isinstance(schema.get(k), bool)]
    return [0, 1, -1, 1.0, 2.5, 7, 2**31, True] + [b + d for b in bounds for d in (-1, 0, 1, 0.5)]


def test_every_schema_is_a_valid_json_schema():
    """Checked here, once, not by the service each time it builds a validator: against the
    metaschema that is ~5 ms a schema, ~0.8 s of CPU at each start of the service."""
    for v in every_validator():
        type(v).check_schema(v.schema)


def test_the_service_s_schemas_are_checked_fast():
    validators = every_validator()
    assert len(validators) > 60
    slow = [v.schema for v in validators if schema_fast._MADE[id(v)][1] is None]
    assert slow == []   # a new keyword: teach schema_fast, or say here why it stays slow


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.15])
def test_every_verdict_is_jsonschema_s(noise):
    rng = random.Random(f"schema_fast {noise}")
    for v in every_validator():
        fast = schema_fast._MADE[id(v)][1]
        for _ in range(40):
            body = near(v.schema, rng, noise)
            assert fast(body) == v.is_valid(body), (v.schema, body)


@pytest.mark.parametrize(("schema", "body", "valid"), [
    ({"enum": [True, "true"]}, 1, False),                    # true is not 1
    ({"enum": [1]}, 1.0, True),                              # but 1 is 1.0
    ({"type": "integer"}, 3.0, True),
    ({"type": "integer"}, True, False),
    ({"type": "number"}, False, False),
    ({"const": [1, {"a": True}]}, [1.0, {"a": True}], True),
    ({"const": [1, {"a": True}]}, [1, {"a": 1}], False),
    ({"uniqueItems": True}, [1, True], True),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"additionalProperties": False, "patternProperties": {"^k": {}}}, {"k1": 1, "x": 2}, False),
    ({"additionalProperties": {"type": "string"}, "properties": {"a": {}}}, {"a": 1, "b": "s"}, True),
    ({"pattern": "^a", "type": ["string", "integer"]}, 5, True),
    ({"format": "uuid"}, UUID.upper(), True),
    ({"format": "uuid"}, "nope", False),
    ({"oneOf": [{"type": "string"}, {"maxLength": 3}]}, "ab", False),
    ({"not": {"type": "null"}}, None, False),
    ({"exclusiveMinimum": 1}, 1, False),
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, False),
    ({"contains": {"const": "token"}}, ["password"], False),
    ({"dependentRequired": {"name": ["domain"]}}, {"name": "u"}, False),
    ({"if": {"type": "string"}, "then": {"const": "unscoped"}, "else": {"type": "object"}}, "x", False),
    ({"if": {"type": "string"}, "then": {"const": "unscoped"}}, 5, True),
    ({"then": False}, 5, True),                              # no `if`: nothing
])
def test_corners_where_python_and_json_disagree(schema, body, valid):
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert v.is_valid(body) is valid
    fast = schema_fast.compiled(schema, v.format_checker.conforms)
    assert fast is not None and fast(body) is valid


@pytest.mark.parametrize("schema", [{"$ref": "#/$defs/x", "$defs": {"x": {}}}, {"items": [{}]},
                                    {"multipleOf": 2}, {"$schema": "http://json-schema.org/draft-04/schema#"}])
def test_what_is_not_handled_is_left_to_jsonschema(schema):
    assert schema_fast.compiled(schema, lambda *_: True) is None


def test_a_refused_body_still_gets_jsonschema_s_reason():
    v = w.validator({"type": "object", "required": ["server"], "properties": {
        "server": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}}})
    w.check(v, {"server": {"name": "abc"}})
    with pytest.raises(nova_async.common.errors.InvalidInput, match="server/name"):
        w.check(v, {"server": {"name": "abcd"}})
