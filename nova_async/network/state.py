"""What the network API's handlers are given: the pool, the cells, the URL clients reach us at, and the
physical networks a flat provider network may name."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from nova_async.db.cells import Cells
from nova_async.db.pool import Pool


@dataclass(frozen=True)
class NetworkApi:
    pool: Pool
    cells: Cells            # where instances live: their addresses follow floating IPs
    base_url: str
    physical_networks: frozenset[str] = frozenset()


STATE = web.AppKey("network_api", NetworkApi)
