"""The asyncpg pool every role shares, with JSON columns decoded to Python values."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import asyncpg
import msgspec

from nova_async.common import errors


async def _init(conn: asyncpg.Connection) -> None:
    for kind in ("json", "jsonb"):
        await conn.set_type_codec(kind, schema="pg_catalog", encoder=lambda v: msgspec.json.encode(v).decode(),
                                  decoder=msgspec.json.decode, format="text")
    # asyncpg looks up each array type the first time a connection meets it: a round trip
    # whose statement costs PostgreSQL milliseconds to plan, in the middle of a request. One
    # statement naming every array type the queries use does it once, here.
    await conn.prepare(_ARRAY_TYPES)


_ARRAY_TYPES = ("SELECT $1::uuid[], $2::bigint[], $3::int[], $4::bool[], $5::text[], $6::float8[], "
                "$7::jsonb[], $8::timestamptz[]")


async def _keep(conn: asyncpg.Connection) -> None:
    """Release a connection as it is: nothing here keeps session state (LISTEN, session
    advisory locks, SET) on a pooled connection, so asyncpg's reset round trip is waste."""


@contextlib.asynccontextmanager
async def open_pool(dsn: str, *, min_size: int = 2, max_size: int = 20) -> AsyncIterator[asyncpg.Pool]:
    try:
        pool = await asyncpg.create_pool(dsn, min_size=min_size, max_size=max_size, init=_init,
                                         reset=_keep, command_timeout=60)
    except (OSError, asyncpg.PostgresError) as exc:
        raise errors.Unavailable(f"cannot connect to the database: {exc}") from exc
    try:
        yield pool
    finally:
        await pool.close()
