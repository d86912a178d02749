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
fails leaves the database as it found it, never with new tables and old functions.

**Expand and contract**, for a site upgraded one host at a time while the others keep running
the release before. A migration says its phase in a header line, `-- phase: contract`; without
one it is `expand`:

  * expand: adds (a table, a nullable or defaulted column, an index, a function an old release
    does not call) and is safe under every release that runs meanwhile. Applied first, in
    number order, by every migrator.
  * contract: takes away or tightens what an older release still uses (drops a column, adds a
    NOT NULL). Since every expand runs before any contract, an expand migration never relies
    on a contract one numbered before it. Applied only once every live service (a heartbeat within service_down_time, not
    forced down) runs a release that ships it: its record's schema_level (migration 0070,
    written at registration) is at least the contract's number. `Gate` says which records
    count; the hosts a starting process is about to take over do not (their record is its
    own, from before the restart), so a single box upgrades in place.

`migrate(mode=ALL)` (the service's start, plain `nova-async db migrate`): expand, then contract
when allowed, else hold the contracts back with a warning naming the services behind.
`mode=EXPAND` (`db migrate --expand`): only expand. `mode=CONTRACT` (`db migrate --contract`):
only contract, and ContractBlocked naming the services behind when any is. A release started
on a database that a newer one contracted (a recorded contract migration it does not ship)
refuses to start (SchemaAhead): it may use what was taken away. A newer release's expand
migrations are fine under it; their functions are left as the newer release loaded them.
Only the services' records can hold a contract back: roles without one (api, conductor,
scheduler…) are upgraded first, together, as in Nova."""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import re
from pathlib import Path
from typing import Any

import asyncpg
import structlog

from nova_async.common import errors
from nova_async.db.queries import SQL_DIR, queries

log = structlog.get_logger("db")

_LOCK_KEY = 0x6E6F7661  # "nova": the advisory lock every migrator takes
_FILE = re.compile(r"^(\d{4})_[\w-]+\.sql$")
_PHASE = re.compile(r"^--\s*phase:\s*(\S+)\s*$", re.MULTILINE)
VQ = queries("versions")
FUNCTIONS_DIR = SQL_DIR / "functions"
FIRST_WITHOUT_CODE = 42  # migrations from this number on create no function and no trigger


class MigrationError(errors.NovaAsyncError):
    """The migrations in sql/ cannot be applied as they are (a release's mistake, not the
    database's): the service does not start."""

    code = "migration_error"


class MigrationEdited(MigrationError):
    code = "migration_edited"


class ContractBlocked(MigrationError):
    """A contract migration asked for while services of an older release still run."""

    code = "contract_blocked"


class SchemaAhead(MigrationError):
    """The database was contracted by a newer release: this one cannot use it."""

    code = "schema_ahead"


class Phase(enum.StrEnum):
    EXPAND = "expand"
    CONTRACT = "contract"


class Mode(enum.Enum):
    ALL = "expand, then contract when every live service allows it"
    EXPAND = "expand only"
    CONTRACT = "contract only, refused while a live service is behind"


@dataclasses.dataclass(frozen=True)
class Gate:
    """Whose service records may hold contract migrations back: the live ones (a heartbeat
    within `down_time` seconds) in `services_db` (the API database; None: the one migrated),
    but those of `replacing`, the hosts the process migrating is about to serve itself."""

    down_time: float = 60
    replacing: tuple[str, ...] = ()
    services_db: Any = None


def phase_of(name: str, text: str) -> Phase:
    """The phase a migration's header says (`-- phase: contract`); expand when it says none."""
    found = _PHASE.search(text)
    if found is None:
        return Phase.EXPAND
    try:
        return Phase(found.group(1))
    except ValueError:
        raise MigrationError(f"sql/{name} says phase {found.group(1)!r}; a phase is expand or contract") from None


def shipped_level() -> int:
    """The highest migration this release ships: what its services' records say (0070).
    Listed once per state of sql/: each of a thousand simulated hosts says it as it
    registers, and a listing is ~1 ms of a start's CPU on this VM."""
    return _highest(SQL_DIR, SQL_DIR.stat().st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _highest(directory: Path, _changed_ns: int) -> int:
    return migration_files(directory)[-1][0]


def migration_files(directory: Path | None = None) -> list[tuple[int, str]]:
    """sql/'s migrations (`directory`'s: a test's own), by number."""
    found = []
    for path in sorted((directory or SQL_DIR).iterdir()):
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


async def migrate(conn: asyncpg.Connection, *, mode: Mode = Mode.ALL, gate: Gate = Gate()) -> list[str]:
    """Bring the schema up to date as `mode` says; returns the names of the migrations applied."""
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        async with conn.transaction():
            applied_now, ahead = await _apply_migrations(conn, mode, gate)
            # A newer release's functions stay: they are the ones its expand migrations need.
            reloaded = 0 if ahead else await _load_functions_if_changed(conn, force=bool(applied_now))
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    for name in applied_now:
        log.info("migration applied", migration=name)
    if reloaded:
        log.info("functions and triggers loaded", files=reloaded)
    if ahead:
        log.info("the database has migrations of a newer release (expand only: usable here)", migrations=ahead)
    return applied_now


async def _apply_migrations(conn: asyncpg.Connection, mode: Mode, gate: Gate) -> tuple[list[str], list[str]]:
    """The migrations applied now, and those recorded that this release does not ship."""
    # As releases before checksums made it, then the columns they lacked (no-ops once there).
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now());"
        "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text;"
        "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS phase text")
    recorded = {r["version"]: r for r in
                await conn.fetch("SELECT version, name, checksum, phase FROM schema_migrations")}
    files = migration_files()
    shipped = {number for number, _ in files}
    ahead = sorted((r for n, r in recorded.items() if n not in shipped), key=lambda r: r["version"])
    contracted = [r["name"] for r in ahead if r["phase"] == Phase.CONTRACT]
    if contracted:
        raise SchemaAhead(
            f"this release cannot use this database: a newer release applied contract migration(s) "
            f"{', '.join(contracted)}, which take away what this release uses. Run the release that applied "
            "them on this host (install it, then `nova-async serve` again).")
    pending: list[tuple[int, str, str, Phase]] = []
    for number, name in files:
        sql = (SQL_DIR / name).read_text()
        digest = checksum(sql)
        row = recorded.get(number)
        if row is None:
            pending.append((number, name, sql, phase_of(name, sql)))
        elif row["checksum"] is None:  # applied by a release that kept no checksums
            await conn.execute("UPDATE schema_migrations SET checksum = $2 WHERE version = $1", number, digest)
        elif row["checksum"] != digest:
            raise MigrationEdited(
                f"sql/{name} was edited after this database applied it (sha256 then {row['checksum'][:12]}…, "
                f"now {digest[:12]}…). Migrations are append-only: put the file back as it was and make the "
                "change in a new migration (a function's body belongs in sql/functions/).")
    applied_now = []
    expand = [p for p in pending if p[3] is Phase.EXPAND]
    contract = [p for p in pending if p[3] is Phase.CONTRACT]
    if mode is not Mode.CONTRACT:
        for number, name, sql, phase in expand:
            await _apply(conn, number, name, sql, phase)
            applied_now.append(name)
    elif expand and contract:
        raise ContractBlocked(f"expand migration(s) {', '.join(p[1] for p in expand)} are not applied yet: "
                              "run `nova-async db migrate --expand` first")
    if mode is Mode.EXPAND:
        return applied_now, [r["name"] for r in ahead]
    for number, name, sql, phase in contract:
        services = gate.services_db if gate.services_db is not None else conn
        behind = await services.fetch(VQ.behind, number, gate.down_time, list(gate.replacing))
        if behind:
            who = ", ".join(f"{r['binary_name']} on {r['host']} (release {r['release']})" for r in behind)
            if mode is Mode.CONTRACT:
                raise ContractBlocked(f"sql/{name} is a contract migration, and these services still run a release "
                                      f"without it: {who}. Upgrade them, then run "
                                      "`nova-async db migrate --contract` again.")
            log.warning("contract migrations held back until every service runs this release; then "
                        "`nova-async db migrate --contract` (or any service's start) applies them",
                        held_back=[p[1] for p in contract if p[0] >= number], behind=who)
            break
        await _apply(conn, number, name, sql, phase)
        applied_now.append(name)
    return applied_now, [r["name"] for r in ahead]


async def _apply(conn: asyncpg.Connection, number: int, name: str, sql: str, phase: Phase) -> None:
    try:
        await conn.execute(sql)
    except asyncpg.InsufficientPrivilegeError as exc:
        raise MigrationError(f"sql/{name} cannot be applied with this database user ({exc}): run "
                             f"`nova-async db migrate --{phase}` as the database's owner, then start again") from None
    await conn.execute("INSERT INTO schema_migrations (version, name, checksum, phase) VALUES ($1, $2, $3, $4)",
                       number, name, checksum(sql), str(phase))


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
