"""What the fuzz tests aim at, read from the application itself rather than listed by hand:
every route of the real aiohttp route tables, the JSON schemas each route's handler module
validates bodies with, and the query parameters each API's code reads. A route added
tomorrow is fuzzed tomorrow without touching these tests."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import sys
import types
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from aiohttp import web

from nova_async.api import microversion as compute_versions
from nova_async.placement import microversion as placement_versions

PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")


@dataclasses.dataclass(frozen=True)
class Route:
    api: str            # the role that mounts it ("api", "placement", …), "root" for /metrics
    method: str
    template: str       # the full path, {name} for each parameter
    handler: Callable = dataclasses.field(compare=False, repr=False)

    @property
    def params(self) -> list[str]:
        return PARAM.findall(self.template)

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def enumerate_routes(root: web.Application, api_name_key: web.AppKey) -> list[Route]:
    """Every (method, path) the root application and its mounted sub-applications serve."""
    found: list[Route] = []
    for resource in root.router.resources():
        info = resource.get_info()
        if "app" in info:           # a mounted API: its own routes, under its prefix
            sub: web.Application = info["app"]
            found += [Route(sub[api_name_key], route.method, route.resource.canonical, route.handler)
                      for route in sub.router.routes() if route.resource is not None]
        else:                       # the root's own (/metrics)
            found += [Route("root", route.method, resource.canonical, route.handler) for route in resource]
    return found


# --- bodies: the schemas a handler's module validates with ---------------------------------

def _validators_in(value: Any, depth: int = 0) -> Iterator[dict]:
    """JSON schemas held by a module-level value: a validator, or containers and frozen
    dataclasses (server actions' table) that hold them."""
    if depth > 3:
        return
    if isinstance(value, jsonschema.protocols.Validator):
        yield value.schema
    elif isinstance(value, dict):
        for v in value.values():
            yield from _validators_in(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _validators_in(v, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _validators_in(getattr(value, f.name), depth + 1)


def _built_per_version(module: types.ModuleType) -> Iterator[dict]:
    """Schemas made per microversion by a function `…schema…(version)`: built at the oldest
    and newest version the module's API speaks."""
    versions = ([compute_versions.MIN, compute_versions.MAX] if module.__name__.startswith("nova_async.api")
                else [placement_versions.MIN, placement_versions.MAX]
                if module.__name__.startswith("nova_async.placement") else [])
    for name, fn in vars(module).items():
        if "schema" not in name.lower() or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
            continue
        if list(inspect.signature(fn).parameters) != ["version"]:
            continue
        for version in versions:
            yield from _validators_in(fn(version))


@cache
def _module_schemas(module_name: str) -> tuple[tuple[str, dict], ...]:
    """(global name, schema) for each schema a handler module can reach: its own globals and
    those of the `schemas` modules it imports."""
    module = sys.modules[module_name]
    found: list[tuple[str, dict]] = []
    for name, value in vars(module).items():
        if isinstance(value, types.ModuleType):
            if value.__name__.endswith("schemas") and value.__name__.startswith("nova_async"):
                found += [(f"{name}.{n}", s) for n, v in vars(value).items() for s in _validators_in(v)]
        else:
            found += [(name, s) for s in _validators_in(value)]
    found += [("<per version>", s) for s in _built_per_version(module)]
    return tuple(found)


def body_schemas(route: Route) -> list[dict]:
    """The schemas a route's handler names first, else every schema of its module."""
    everything = _module_schemas(route.handler.__module__)
    named = set(route.handler.__code__.co_names)
    chosen = [s for name, s in everything if name.split(".")[-1] in named]
    return chosen or [s for _, s in everything]


# --- query parameters: the names each API's code reads -------------------------------------

_READERS = {"get", "getall", "getone", "query_int", "query_flag", "query_uuid", "many", "flag",
            "number", "_many", "_changed", "_one_or_many"}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_:.\-]{0,40}$")
# OpenStack's common ones, in case a reader is spelled in a way the scan below misses.
COMMON_QUERY = ("limit", "marker", "sort", "sort_key", "sort_dir", "fields", "name", "status",
                "all_tenants", "all_projects", "project_id", "tenant_id", "user_id", "host",
                "changes-since", "changes-before", "deleted", "detailed", "offset")


@cache
def query_names(api: str) -> tuple[str, ...]:
    """Every string literal an API package passes to a query reader (`request.query.get("x")`,
    `query_int(request, "x")`, `"x" in request.query`, …) or lists as an allowed parameter."""
    package = {"api": "nova_async.api", "root": "nova_async.common"}.get(api, f"nova_async.{api}")
    root = Path(importlib.import_module(package).__file__).parent
    names: set[str] = set(COMMON_QUERY)
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            literals: list[ast.AST] = []
            if isinstance(node, ast.Call):
                func = node.func
                callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if callee in _READERS or callee == "check_query":
                    literals = [*node.args, *(k for a in node.args if isinstance(a, ast.Dict) for k in a.keys)]
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                if "query" in ast.unparse(node.comparators[0]) or ast.unparse(node.comparators[0]) == "q":
                    literals = [node.left]
            elif isinstance(node, ast.Assign) and any("ALLOWED" in ast.unparse(t) for t in node.targets):
                if isinstance(node.value, ast.Dict):
                    literals = list(node.value.keys)
            names.update(n.value for n in literals
                         if isinstance(n, ast.Constant) and isinstance(n.value, str) and _NAME.match(n.value))
    return tuple(sorted(names))
