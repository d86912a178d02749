"""Handlers run no SQL: a handler under `<role>/handlers/` goes authorize -> parse -> one
domain call -> render, and the domain modules beside handlers/ hold the queries and the
transactions. So no handler module loads named queries or calls a pool's or connection's
query methods; a handler that needs a new read gets a domain function for it."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "nova_async"
HANDLERS = sorted(PACKAGE.glob("*/handlers/*.py"))
# What asyncpg's Pool and Connection answer queries with, and what opens a transaction
# (not `prepare`: aiohttp's WebSocketResponse has one too).
QUERYING = {"fetch", "fetchrow", "fetchval", "execute", "executemany", "acquire", "transaction",
            "copy_records_to_table", "copy_from_query", "copy_to_table"}


def sql_in(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "nova_async.db.queries":
            found.append(f"line {node.lineno}: imports nova_async.db.queries")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in QUERYING:
            found.append(f"line {node.lineno}: calls .{node.func.attr}()")
    return found


def test_there_are_handlers_to_check():
    assert {p.parent.parent.name for p in HANDLERS} >= {"api", "identity", "placement"}


@pytest.mark.parametrize("path", HANDLERS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_handler_runs_no_sql(path):
    found = sql_in(path.read_text())
    assert not found, f"{path.relative_to(PACKAGE)} runs SQL; move it to a domain module beside handlers/:\n" \
                      + "\n".join(found)


def test_the_check_sees_inline_sql():
    source = ("from nova_async.db.queries import queries\n"
              "async def show(pool):\n"
              "    async with pool.acquire() as conn:\n"
              "        return await conn.fetchrow('SELECT 1')\n")
    assert len(sql_in(source)) == 3
