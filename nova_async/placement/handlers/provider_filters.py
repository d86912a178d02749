"""The query string of `GET /resource_providers`, turned into a `ProviderFilter`.

Each filter appeared at its own microversion and grew syntax later (`in:` for "any of", `!`
for "none of", repeated parameters AND-ed); the parsing refuses what the requested version
does not speak yet, with a 400 naming the parameter."""

from __future__ import annotations

import re

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import ascii_int
from nova_async.placement import microversion
from nova_async.placement.handlers.common import check_query, query_uuid
from nova_async.placement.providers import MAX_INT, ProviderFilter
from nova_async.placement.request_groups import parse_member_of, parse_traits

# query parameter -> the minor version it appeared in
ALLOWED = {"name": 0, "uuid": 0, "member_of": 3, "resources": 4, "in_tree": 14, "required": 18}

_NAME = re.compile(r"^[A-Z0-9_]{1,255}$")


def _bad(text: str) -> errors.InvalidInput:
    return errors.InvalidInput(f"Invalid query string parameters: {text}", code="placement.query.bad_value")


def _one_or_many(request: web.Request, name: str, since_minor: int) -> list[str]:
    values = request.query.getall(name, [])
    if len(values) > 1 and not microversion.at_least(request, since_minor):
        raise _bad(f"Multiple {name} parameters are not supported before microversion 1.{since_minor}.")
    return values


def member_of(request: web.Request) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Groups of aggregates the provider must be in one of, and aggregates it must avoid."""
    groups, forbidden = parse_member_of(request.query.getall("member_of", []),
                                        microversion.version(request).minor, "member_of")
    return tuple(tuple(sorted(g)) for g in groups), tuple(sorted(forbidden))


def resources(request: web.Request) -> tuple[tuple[str, int], ...]:
    raw = request.query.get("resources")
    if raw is None:
        return ()
    wanted: dict[str, int] = {}
    for item in raw.split(","):
        rc, sep, amount = item.partition(":")
        number = ascii_int(amount)
        if not sep or not _NAME.match(rc) or number is None or number < 1:
            raise _bad(f"Badly formed resources parameter. Expected resources query string "
                       f"parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {raw}.")
        if number > MAX_INT:  # what an inventory can hold; beyond it the int4 query parameter overflows
            raise _bad(f"Requested amount of {rc} must be an integer from 1 to {MAX_INT}, got {amount}.")
        if rc in wanted:
            raise _bad(f"Resource class {rc} appears more than once in resources.")
        wanted[rc] = number
    return tuple(wanted.items())


def required(request: web.Request) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Groups of traits the provider must have one of, and traits it must not have."""
    groups, forbidden = parse_traits(_one_or_many(request, "required", 39),
                                     microversion.version(request).minor, "required")
    return tuple(tuple(sorted(g)) for g in groups), tuple(sorted(forbidden))


def provider_filter(request: web.Request) -> ProviderFilter:
    check_query(request, ALLOWED)
    groups, not_in = member_of(request)
    traits, no_traits = required(request)
    return ProviderFilter(name=request.query.get("name"), uuid=query_uuid(request, "uuid"),
                          in_tree=query_uuid(request, "in_tree"), member_of=groups,
                          not_member_of=not_in, resources=resources(request),
                          required=traits, forbidden=no_traits)
