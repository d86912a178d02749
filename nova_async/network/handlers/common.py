"""What the Neutron v2.0 handlers share: the query-string conventions (`?name=a&name=b`
means either; `?fields=` trims) and the two body shapes of a create (one resource, or a
bulk list under the collection's name) and of an update."""

from __future__ import annotations

from aiohttp import web

from nova_async.common import errors
from nova_async.common.web import check, query_flag, read_body
from nova_async.network import schemas


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


async def create_items(request: web.Request, key: str, v) -> tuple[list[dict], bool]:
    """The resources a POST asks for, each validated as a single create would be, and whether
    it was a bulk request (`{"networks": [...]}`, answered in the same shape)."""
    body = await read_body(request)
    collection = f"{key}s"
    if isinstance(body, dict) and collection in body:
        if set(body) != {collection}:
            raise errors.InvalidInput(f"Invalid input: a bulk request holds only '{collection}'.")
        items = body[collection]
        if not isinstance(items, list) or not items:
            raise errors.InvalidInput(f"Resources required: '{collection}' must be a non-empty list.")
        for item in items:
            check(v, {key: item})
        return items, True
    check(v, body)
    return [body[key]], False


async def update_body(request: web.Request, key: str, v) -> dict:
    """The attributes a PUT changes; one that may never change is refused as Neutron does."""
    body = await read_body(request)
    if isinstance(body, dict) and isinstance(body.get(key), dict):
        fixed = sorted(set(body[key]) & schemas.READ_ONLY[key])
        if fixed:
            raise errors.InvalidInput(f"Cannot update read-only attribute {fixed[0]}")
    check(v, body)
    return body[key]
