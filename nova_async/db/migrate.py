"""Bring a database to the schema this release expects: the pending migrations of
`sql/NNNN_name.sql`, then the functions and triggers of `sql/functions/`.

Two kinds of SQL, kept by two rules:

* **Migrations** (`sql/NNNN_name.sql`) are history: tables, columns, indexes, constraints,
  types, and the data that moves with them. Each applies once, in number order, and is
  recorded in schema_migrations with the sha256 of its text. They are append-only: a file that
  has shipped is never edited, since a site that already applied it would never see the edit
  while a fresh database would, and the two would differ. A change is a new file. Every start
  compares each applied file with its recorded checksum and refuses to go on when one was
  edited (MigrationEdited, naming the file); rows recorded before checksums were kept get the
  file's checksum the first time this migrator sees them.

* **Functions and triggers** (`sql/functions/<function>.sql`) are the current truth: one file
  per function, its current body as CREATE OR REPLACE FUNCTION, followed by the CREATE OR
  REPLACE TRIGGERs that execute it. Changing a function means editing its file; nothing
  restates it. The files are loaded after the pending migrations, in file name order, whenever
  a migration was applied or their digest (sha256 over names and texts, kept in
  schema_functions) differs from the one loaded last; otherwise they are left alone, since
  replacing a function drops every session's cached plans and replacing a trigger locks its
  table. A database upgraded from any earlier state therefore ends with the same functions
  and triggers as a fresh one, sites included whose 0032, 0036, 0038 or 0039 ran before those
  files were edited (tests/integration/db/test_migrate.py builds both and compares catalogs).

Migrations up to 0041 created functions and triggers themselves, restating whole bodies
(placement_write_allocations five times). They stay as they are: they are history, a fresh
database still replays them, and the files then replace what they made. From 0042
(FIRST_WITHOUT_CODE) on, a migration creates no function and no trigger
(tests/unit/db/test_sql_layout.py says which file breaks this); the body goes in
sql/functions/ instead, and the migration keeps only what changes tables. How each kind of
change is written:

  * a new function, or a new body: its file in sql/functions/ (new or edited);
  * a trigger on a new table: the migration makes the table, the function's file the trigger;
  * a changed argument list or result type (which CREATE OR REPLACE refuses), or a function or
    trigger that goes away: a migration drops the old one, and its file says the new one (or
    is removed). Migrations run first, so the file finds the way clear;
  * a backfill in a migration runs before the files are loaded, so it sees the functions of
    the release before (on a fresh database, those the earlier migrations made): it writes its
    SQL inline, or makes a helper it drops again in the same file;
  * a LANGUAGE sql function is checked against what exists when it is created: one that calls
    another function of ours comes in a file whose name sorts after that function's.

Merging a branch whose new migration still creates or replaces a function f (or a trigger
that executes f): its statement replaces the one in sql/functions/f.sql (a trigger as CREATE
OR REPLACE TRIGGER, after the function), and the migration keeps the rest, plus a DROP where
the argument list or result type changed. CREATE OR REPLACE TRIGGER needs PostgreSQL 14, as
0038's multiranges already do.

Everything here (the pending migrations, the files, the bookkeeping) is one transaction, under
an advisory lock so that two processes starting at the same time do not race: an upgrade that
fails leaves the database as it found it, never with new tables and old functions."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.db.queries import SQL_DIR

log = structlog.get_logger("db")

_LOCK_KEY = 0x6E6F7661  # "nova": the advisory lock every migrator takes
_FILE = re.compile(r"^(\d{4})_[\w-]+\.sql$")
FUNCTIONS_DIR = SQL_DIR / "functions"
FIRST_WITHOUT_CODE = 42  # migrations from this number on create no function and no trigger


class MigrationError(errors.NovaAsyncError):
    """The migrations in sql/ cannot be applied as they are (a release's mistake, not the
    database's): the service does not start."""

    code = "migration_error"


class MigrationEdited(MigrationError):
    code = "migration_edited"


def migration_files() -> list[tuple[int, str]]:
    found = []
    for path in sorted(SQL_DIR.iterdir()):
        m = _FILE.match(path.name)
        if m:
            found.append((int(m.group(1)), path.name))
    numbers = [n for n, _ in found]
    if len(set(numbers)) != len(numbers):
        raise MigrationError("two migrations share a number in sql/")
    return found


def function_files() -> list[Path]:
    """sql/functions/*.sql in the order they are loaded: by file name."""
    return sorted(FUNCTIONS_DIR.glob("*.sql"), key=lambda p: p.name)


def checksum(text: str) -> str:
    # Line endings are not content: a checkout that rewrites them has not edited the file.
    return hashlib.sha256(text.replace("\r\n", "\n").encode()).hexdigest()


def _functions_digest(files: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for name, text in files:
        h.update(f"{name}\0{checksum(text)}\0".encode())
    return h.hexdigest()


def _read_functions() -> list[tuple[str, str]]:
    return [(p.name, p.read_text()) for p in function_files()]


async def load_functions(conn: asyncpg.Connection, files: list[tuple[str, str]] | None = None) -> None:
    """Create or replace every function and trigger of sql/functions/, in order."""
    for _, text in files if files is not None else _read_functions():
        await conn.execute(text)


async def migrate(conn: asyncpg.Connection) -> list[str]:
    """Bring the schema up to date; returns the names of the migrations applied."""
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        async with conn.transaction():
            applied_now = await _apply_migrations(conn)
            reloaded = await _load_functions_if_changed(conn, force=bool(applied_now))
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    for name in applied_now:
        log.info("migration applied", migration=name)
    if reloaded:
        log.info("functions and triggers loaded", files=reloaded)
    return applied_now


async def _apply_migrations(conn: asyncpg.Connection) -> list[str]:
    # As releases before checksums made it, then the column they lacked (a no-op once there).
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now());"
        "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text")
    recorded = {r["version"]: r for r in await conn.fetch("SELECT version, name, checksum FROM schema_migrations")}
    applied_now = []
    for number, name in migration_files():
        sql = (SQL_DIR / name).read_text()
        digest = checksum(sql)
        row = recorded.get(number)
        if row is None:
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                               number, name, digest)
            applied_now.append(name)
        elif row["checksum"] is None:  # applied by a release that kept no checksums
            await conn.execute("UPDATE schema_migrations SET checksum = $2 WHERE version = $1", number, digest)
        elif row["checksum"] != digest:
            raise MigrationEdited(
                f"sql/{name} was edited after this database applied it (sha256 then {row['checksum'][:12]}…, "
                f"now {digest[:12]}…). Migrations are append-only: put the file back as it was and make the "
                "change in a new migration (a function's body belongs in sql/functions/).")
    return applied_now


async def _load_functions_if_changed(conn: asyncpg.Connection, *, force: bool) -> int:
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_functions ("
        " digest text NOT NULL, loaded_at timestamptz NOT NULL DEFAULT now())")
    files = _read_functions()
    digest = _functions_digest(files)
    if not force and await conn.fetchval("SELECT digest FROM schema_functions") == digest:
        return 0
    await load_functions(conn, files)
    await conn.execute("DELETE FROM schema_functions")
    await conn.execute("INSERT INTO schema_functions (digest) VALUES ($1)", digest)
    return len(files)
