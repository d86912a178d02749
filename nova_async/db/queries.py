"""Named SQL queries, loaded once from `sql/queries/<role>.sql`.

A file holds blocks introduced by `-- name: <query_name>` lines; the text up to the next
such line is the query. Roles ask for `queries("placement").usages` and get the SQL."""

from __future__ import annotations

import functools
import re
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
if not SQL_DIR.is_dir():  # running from a source checkout
    SQL_DIR = Path(__file__).resolve().parents[2] / "sql"

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


class Queries:
    def __init__(self, source: str, origin: str) -> None:
        self._sql: dict[str, str] = {}
        parts = _NAME.split(source)
        for name, body in zip(parts[1::2], parts[2::2]):
            text = body.strip()
            if not text:
                raise ValueError(f"{origin}: query {name} is empty")
            if name in self._sql:
                raise ValueError(f"{origin}: query {name} defined twice")
            self._sql[name] = text
        self._origin = origin

    def __getattr__(self, name: str) -> str:
        try:
            return self._sql[name]
        except KeyError:
            raise AttributeError(f"{self._origin} has no query named {name}") from None

    def names(self) -> list[str]:
        return sorted(self._sql)


@functools.cache
def queries(group: str) -> Queries:
    path = SQL_DIR / "queries" / f"{group}.sql"
    return Queries(path.read_text(), str(path))
