"""Request bodies checked without jsonschema's machinery, for the bodies that pass.

jsonschema builds a validator object for every subschema it descends into: checking a boot
request's body took ~0.3 ms, most of a POST's own work. `compiled(schema, conforms)` turns a
schema into nested closures that answer only "valid or not", for the keywords our schemas
use; a schema with any other keyword gets None, and is checked by jsonschema alone.

`remember(v)` compiles a validator's schema when it is made; `passes(v, body)` is then the
fast answer. A body it refuses is checked again by jsonschema, which says why
(common/web.check, placement/media.validate), so every message a client sees is still
jsonschema's. The verdicts are jsonschema's (draft 2020-12, the one `validator_for` picks
for our schemas): tests/unit/common/test_schema_fast.py compares them over every schema the
service builds.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from typing import Any

import jsonschema

Check = Callable[[Any], bool]

# Each validator's check, by id, with the validator it was made for (an id can be reused once
# that one is gone): jsonschema's validators cannot be hashed.
_MADE: dict[int, tuple[weakref.ref[Any], Check | None]] = {}

# Keywords that only describe (jsonschema asserts nothing for them); `name` is one Glance's
# metadefs schemas carry, unknown to JSON Schema, so ignored by it; `then` and `else` are
# read with their `if` (and mean nothing without one).
_NOTES = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                    "writeOnly", "name", "then", "else"})

# Which of an object's members each subschema applies to depends on all three at once.
_OBJECT_KEYWORDS = ("properties", "patternProperties", "additionalProperties")

_TYPES: dict[str, Check] = {
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "integer": lambda x: not isinstance(x, bool) and (isinstance(x, int)
                                                      or (isinstance(x, float) and x.is_integer())),
    "null": lambda x: x is None,
    "number": lambda x: not isinstance(x, bool) and isinstance(x, (int, float)),
    "object": lambda x: isinstance(x, dict),
    "string": lambda x: isinstance(x, str),
}


class _Unsupported(Exception):
    pass


def remember(v: jsonschema.protocols.Validator) -> None:
    """Compile `v`'s schema for passes(); one of another draft is left to jsonschema."""
    if type(v) is jsonschema.Draft202012Validator:
        _MADE[id(v)] = (weakref.ref(v), compiled(v.schema, v.format_checker.conforms))
        weakref.finalize(v, _MADE.pop, id(v), None)


def passes(v: jsonschema.protocols.Validator, body: Any) -> bool:
    """Whether `body` is valid, when `v` was remembered and its schema compiled. False can
    also mean "ask jsonschema": it says why, or that it is valid after all."""
    made = _MADE.get(id(v))
    return made is not None and made[0]() is v and made[1] is not None and made[1](body)


def compiled(schema: Any, conforms: Callable[[Any, str], bool]) -> Check | None:
    """A check of `schema` (`conforms(instance, format)`: the validator's format checker),
    or None when it uses a keyword not handled here."""
    try:
        return _compile(schema, conforms)
    except _Unsupported:
        return None


def equal(a: Any, b: Any) -> bool:
    """JSON equality as jsonschema's enum and const see it: true is not 1, 1 is 1.0."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _compile(schema: Any, conforms: Callable[[Any, str], bool]) -> Check:
    if schema is True:
        return lambda _: True
    if schema is False:
        return lambda _: False
    if not isinstance(schema, dict):
        raise _Unsupported(schema)
    checks: list[Check] = []
    for keyword, value in schema.items():
        if keyword in _NOTES or keyword in _OBJECT_KEYWORDS:   # the latter read together, below
            continue
        if keyword == "if":
            checks.append(_if(value, schema.get("then", True), schema.get("else", True), conforms))
            continue
        make = _KEYWORDS.get(keyword)
        if make is None:
            raise _Unsupported(keyword)
        checks.append(make(value, conforms))
    if any(k in schema for k in _OBJECT_KEYWORDS):
        checks.append(_object_properties(schema, conforms))
    if len(checks) == 1:
        return checks[0]
    return lambda x: all(check(x) for check in checks)


def _type(value: Any, _conforms: Any) -> Check:
    names = [value] if isinstance(value, str) else list(value)
    if not all(name in _TYPES for name in names):
        raise _Unsupported(value)
    tests = [_TYPES[name] for name in names]
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(test(x) for test in tests)


def _object_properties(schema: dict[str, Any], conforms: Callable[[Any, str], bool]) -> Check:
    named = {name: _compile(sub, conforms) for name, sub in schema.get("properties", {}).items()}
    patterns = [(re.compile(p), _compile(sub, conforms)) for p, sub in schema.get("patternProperties", {}).items()]
    extra = schema.get("additionalProperties", True)
    other = _compile(extra, conforms)
    if not patterns and extra is True:      # the common case: named properties only
        def check(x: Any) -> bool:
            return not isinstance(x, dict) or all(test(x[name]) for name, test in named.items() if name in x)
        return check

    def check_all(x: Any) -> bool:
        if not isinstance(x, dict):
            return True
        for key, item in x.items():
            matched = False
            if key in named:
                matched = True
                if not named[key](item):
                    return False
            for pattern, test in patterns:
                if pattern.search(key):
                    matched = True
                    if not test(item):
                        return False
            if not matched and not other(item):
                return False
        return True
    return check_all


def _required(value: list[str], _conforms: Any) -> Check:
    return lambda x: not isinstance(x, dict) or all(name in x for name in value)


def _enum(value: list[Any], _conforms: Any) -> Check:
    return lambda x: any(equal(x, each) for each in value)


def _const(value: Any, _conforms: Any) -> Check:
    return lambda x: equal(x, value)


def _items(value: Any, conforms: Callable[[Any, str], bool]) -> Check:
    if isinstance(value, list):
        raise _Unsupported("items as a list")
    test = _compile(value, conforms)
    return lambda x: not isinstance(x, list) or all(test(item) for item in x)


def _contains(value: Any, conforms: Callable[[Any, str], bool]) -> Check:
    test = _compile(value, conforms)
    return lambda x: not isinstance(x, list) or any(test(item) for item in x)


def _dependent_required(value: dict[str, list[str]], _conforms: Any) -> Check:
    return lambda x: not isinstance(x, dict) or all(name in x for present, names in value.items() if present in x
                                                    for name in names)


def _if(condition: Any, then: Any, otherwise: Any, conforms: Callable[[Any, str], bool]) -> Check:
    test, yes, no = _compile(condition, conforms), _compile(then, conforms), _compile(otherwise, conforms)
    return lambda x: yes(x) if test(x) else no(x)


def _unique(value: bool, _conforms: Any) -> Check:
    if not value:
        return lambda _: True

    def check(x: Any) -> bool:
        return not isinstance(x, list) or not any(equal(x[i], x[j]) for i in range(len(x))
                                                  for j in range(i + 1, len(x)))
    return check


def _property_names(value: Any, conforms: Callable[[Any, str], bool]) -> Check:
    test = _compile(value, conforms)
    return lambda x: not isinstance(x, dict) or all(test(key) for key in x)


def _pattern(value: str, _conforms: Any) -> Check:
    pattern = re.compile(value)
    return lambda x: not isinstance(x, str) or pattern.search(x) is not None


def _format(value: str, conforms: Callable[[Any, str], bool]) -> Check:
    return lambda x: conforms(x, value)


def _sized(kind: type, at_least: bool) -> Callable[[int, Any], Check]:
    def make(bound: int, _conforms: Any) -> Check:
        if at_least:
            return lambda x: not isinstance(x, kind) or len(x) >= bound
        return lambda x: not isinstance(x, kind) or len(x) <= bound
    return make


def _number(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Check]:
    def make(bound: Any, _conforms: Any) -> Check:
        number = _TYPES["number"]
        return lambda x: not number(x) or compare(x, bound)
    return make


def _subschemas(combine: Callable[[list[bool]], bool]) -> Callable[[list[Any], Any], Check]:
    def make(value: list[Any], conforms: Callable[[Any, str], bool]) -> Check:
        tests = [_compile(sub, conforms) for sub in value]
        return lambda x: combine([test(x) for test in tests])
    return make


def _not(value: Any, conforms: Callable[[Any, str], bool]) -> Check:
    test = _compile(value, conforms)
    return lambda x: not test(x)


_KEYWORDS: dict[str, Callable[[Any, Any], Check]] = {
    "type": _type,
    "required": _required,
    "enum": _enum,
    "const": _const,
    "items": _items,
    "uniqueItems": _unique,
    "contains": _contains,
    "dependentRequired": _dependent_required,
    "propertyNames": _property_names,
    "pattern": _pattern,
    "format": _format,
    "minLength": _sized(str, True),
    "maxLength": _sized(str, False),
    "minItems": _sized(list, True),
    "maxItems": _sized(list, False),
    "minProperties": _sized(dict, True),
    "maxProperties": _sized(dict, False),
    "minimum": _number(lambda x, bound: x >= bound),
    "maximum": _number(lambda x, bound: x <= bound),
    "exclusiveMinimum": _number(lambda x, bound: x > bound),
    "exclusiveMaximum": _number(lambda x, bound: x < bound),
    "allOf": _subschemas(all),
    "anyOf": _subschemas(any),
    "oneOf": _subschemas(lambda verdicts: verdicts.count(True) == 1),
    "not": _not,
}
