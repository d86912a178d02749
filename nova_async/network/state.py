"""What the network API's handlers are given: the pool and the URL clients reach us at."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from nova_async.db.pool import Pool


@dataclass(frozen=True)
class NetworkApi:
    pool: Pool
    base_url: str


STATE = web.AppKey("network_api", NetworkApi)
