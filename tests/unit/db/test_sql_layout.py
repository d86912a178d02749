"""Where SQL code lives (nova_async/db/migrate.py says why): a function's body and its triggers in
exactly one file of sql/functions/, named after it; migrations from FIRST_WITHOUT_CODE on make
no function and no trigger of their own."""

import re

from nova_async.db.migrate import FIRST_WITHOUT_CODE, SQL_DIR, Phase, function_files, migration_files, phase_of

CREATE = re.compile(r"^\s*CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE|TRIGGER)\s+(\w+)", re.I | re.M)
EXECUTES = re.compile(r"EXECUTE\s+(?:FUNCTION|PROCEDURE)\s+(\w+)\s*\(", re.I)


def _dropped(sql: str, kind: str, name: str) -> bool:
    return re.search(rf"^\s*DROP\s+{kind}\s+(IF\s+EXISTS\s+)?{name}\b", sql, re.I | re.M) is not None


def test_new_migrations_leave_functions_and_triggers_to_sql_functions():
    bad = []
    for number, name in migration_files():
        if number < FIRST_WITHOUT_CODE:
            continue
        sql = (SQL_DIR / name).read_text()
        for _, kind, obj in CREATE.findall(sql):
            if _dropped(sql, kind, obj):  # a helper made and dropped again for a backfill
                continue
            home = obj if kind.upper() != "TRIGGER" else "<the function it executes>"
            bad.append(f"sql/{name} creates {kind.lower()} {obj}: its current definition belongs in "
                       f"sql/functions/{home}.sql, and the migration keeps only what changes tables "
                       "(nova_async/db/migrate.py)")
    assert not bad, "\n".join(bad)


def test_each_function_file_defines_its_function_and_the_triggers_that_run_it():
    files = function_files()
    assert files, "sql/functions/ is empty"
    bad = []
    for path in files:
        sql = path.read_text()
        made = CREATE.findall(sql)
        functions = [obj for _, kind, obj in made if kind.upper() in ("FUNCTION", "PROCEDURE")]
        if functions != [path.stem]:
            bad.append(f"sql/functions/{path.name} defines {functions or 'no function'}, not just {path.stem}")
        if any(not replace for replace, _, _ in made):
            bad.append(f"sql/functions/{path.name}: every CREATE is CREATE OR REPLACE (the file is loaded again "
                       "on every upgrade)")
        run = set(EXECUTES.findall(sql))
        if run - {path.stem}:
            bad.append(f"sql/functions/{path.name} has triggers executing {sorted(run - {path.stem})}: "
                       "a trigger goes in the file of the function it executes")
    assert not bad, "\n".join(bad)


def test_every_migration_says_a_phase_the_migrator_knows():
    """`-- phase: expand|contract` in the header, or none (expand); from 0070 on, said."""
    for number, name in migration_files():
        text = (SQL_DIR / name).read_text()
        phase = phase_of(name, text)   # a phase it does not know raises
        if number >= 70:
            assert re.search(r"^-- phase: (expand|contract)$", text, re.M), f"sql/{name} says no phase"
        assert phase in (Phase.EXPAND, Phase.CONTRACT)
