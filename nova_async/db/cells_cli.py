"""`nova-async cell list|create|hosts`: Nova's `nova-manage cell_v2` list_cells, create_cell
and list_hosts, straight in the API database.

A new cell's database is created beside the API database (or where --database points) and
migrated at once. Compute processes join it with `--cell NAME` on their first start; a host
keeps the cell it was first mapped to."""

from __future__ import annotations

import argparse
import uuid as uuidlib
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from nova_async import config
from nova_async.common import errors
from nova_async.db import cells
from nova_async.db.offline import open_database

COMMANDS = ("cell",)
Q = cells.Q


def add_parsers(sub: argparse._SubParsersAction, setting_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    cell = sub.add_parser("cell", help="list and create cells (cells v2, in the API database)",
                          description=__doc__.split("\n\n")[0])
    group = cell.add_subparsers(dest="cell_command", required=True)
    p = group.add_parser("list", help="list cells with their databases, hosts and instances")
    setting_flags(p)
    p = group.add_parser("hosts", help="list compute hosts and the cell each is mapped to")
    setting_flags(p)
    p = group.add_parser("create", help="create a cell and its database",
                         description=__doc__.split("\n\n")[1])
    p.add_argument("name")
    p.add_argument("--cell-database", metavar="URL",
                   help="the cell's PostgreSQL URL (default: <api database>_<name> on the same server)")
    setting_flags(p)


def _shown(dsn_or_name: str) -> str:
    """A database connection as it may be printed: without its password."""
    if "://" not in dsn_or_name:
        return dsn_or_name
    parts = urlsplit(dsn_or_name)
    if parts.password:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
    return urlunsplit(parts)


async def run(args: argparse.Namespace, settings: config.Settings) -> str:
    async with open_database(settings) as (pool, dsn):
        if args.cell_command == "create":
            name = args.name
            if not name.replace("-", "").replace("_", "").isalnum() or len(name) > 63:
                raise errors.InvalidInput("a cell name is letters, digits, '-' and '_' (at most 63)")
            connection = args.cell_database or f"{cells.api_database_name(dsn)}_{name}"
            if await pool.fetchval(Q.add_cell, str(uuidlib.uuid4()), name, connection) is None:
                raise errors.Conflict(f"a cell named {name} exists already")
        async with cells.open_cells(pool, dsn, max_size=1) as found:  # creates and migrates databases
            if args.cell_command == "create":
                made = found.named(args.name)
                return f"created cell {made.name} ({made.uuid})"
        if args.cell_command == "hosts":
            rows = await pool.fetch(Q.host_list)
            return "\n".join(f"{r['host']}\t{r['cell']}" for r in rows) or "no compute host is mapped yet"
        rows = await pool.fetch(Q.cell_summary)
        lines = ["name\tuuid\tdatabase\thosts\tinstances"]
        lines += [f"{r['name']}\t{r['uuid']}\t{_shown(r['database_connection'])}\t{r['hosts']}\t{r['instances']}"
                  for r in rows]
        return "\n".join(lines)
