"""What the Neutron v2.0 handlers share: the query-string conventions (`?name=a&name=b`
means either; `?fields=` trims)."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import query_flag


def many(request: web.Request, name: str) -> list[str] | None:
    values = request.query.getall(name, None)
    return list(values) if values else None


def flag(request: web.Request, name: str) -> bool | None:
    return query_flag(request, name)


def fields(request: web.Request) -> list[str] | None:
    return many(request, "fields")


def number(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.InvalidInput(f"Invalid value '{raw}' for filter {name}: expected a number.") from None
