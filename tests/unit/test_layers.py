"""The architecture, checked: a role reaches another role only through that role's
`client` and `messages` modules, the shared layers (bus, db, common) import no role, and a
role's HTTP handlers (`<role>/handlers/`) are reached only through its `routes.py`."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "nova_async"
# Every package with a role.py is a role: a new one is checked without being listed here.
ROLES = {p.parent.name for p in PACKAGE.glob("*/role.py")}
SHARED = {"bus", "db", "common"}
PUBLIC = {"client", "messages"}


def imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.extend([node.module] + [f"{node.module}.{a.name}" for a in node.names])
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
    return [m for m in found if m.startswith("nova_async.")]


def modules(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


@pytest.mark.parametrize("role", sorted(ROLES))
def test_roles_use_only_each_others_clients_and_messages(role):
    bad = []
    for path in modules(role):
        for name in imports(path):
            parts = name.split(".")
            other = parts[1]
            if other in ROLES and other != role and len(parts) > 2 and parts[2] not in PUBLIC:
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("layer", sorted(SHARED))
def test_shared_layers_import_no_role(layer):
    bad = [f"{p.relative_to(PACKAGE)} imports {n}" for p in modules(layer) for n in imports(p)
           if n.split(".")[1] in ROLES]
    assert not bad, "\n".join(bad)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def _route_handlers(role: str) -> set[str]:
    """The handler modules: those under `<role>/handlers/` whose coroutines the role's
    routes.py maps URLs to. Anything else under handlers/ (`common`, a query-string parser)
    is a helper that handlers may share."""
    package = f"nova_async.{role}.handlers"
    local: dict[str, str] = {}
    tree = ast.parse((PACKAGE / role / "routes.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == package:
            local.update({a.asname or a.name: f"{package}.{a.name}" for a in node.names})
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in local:
            module = importlib.import_module(local[node.value.id])
            if inspect.iscoroutinefunction(getattr(module, node.attr, None)):
                found.add(local[node.value.id])
    return found


@pytest.mark.parametrize("role", sorted(ROLES))
def test_handlers_are_reached_only_through_the_route_table(role):
    """Handlers do not import each other (what two share lives beside handlers/: a domain,
    view or state module), and nothing but the role's routes.py imports from handlers/.
    Every role that serves HTTP has that one layout."""
    serves_http = "def http(" in (PACKAGE / role / "role.py").read_text()
    layout = [(PACKAGE / role / "handlers").is_dir(), (PACKAGE / role / "routes.py").exists()]
    assert layout == [serves_http] * 2, f"{role}: an HTTP role has routes.py and handlers/, others neither"
    if not serves_http:
        return
    handlers = _route_handlers(role)
    assert handlers, f"{role}/routes.py maps no URL to a module under {role}/handlers/"
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        in_handlers = name.startswith(f"nova_async.{role}.handlers.")
        for imported in imports(path):
            target = ".".join(imported.split(".")[:4])
            if not target.startswith(f"nova_async.{role}.handlers.") or target == name:
                continue
            if in_handlers and target in handlers:
                bad.append(f"{path.relative_to(PACKAGE)} (a handler) imports the handler {target}")
            elif not in_handlers and name != f"nova_async.{role}.routes":
                bad.append(f"{path.relative_to(PACKAGE)} imports {imported} from handlers/")
    assert not bad, "\n".join(sorted(set(bad)))


# Batching keeps state (calls queued, sender tasks) that must belong to an owner with a life:
# a pool's or a role's Lines (db/lines.py). At module level only frozen descriptions of a
# statement may be made (coalesce.Coalesced, shared_read.SharedRead); their lines live in the
# pool they are called on.
BATCHING = {"nova_async.db.lines", "nova_async.db.coalesce", "nova_async.db.shared_read",
            "nova_async.scheduler.batch"}


def module_level_batching(source: str) -> list[str]:
    """What the module makes at module level from the batching modules that is not a frozen
    dataclass: `NAME = Callee(...)` as (target, module.Callee)."""
    tree = ast.parse(source)
    imported: dict[str, str] = {}   # local name -> dotted origin
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            imported.update({a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                             for a in node.names})
    bad = []
    for node in _module_statements(tree.body):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or not isinstance(node.value, ast.Call):
            continue
        origin = _dotted(node.value.func, imported)
        if origin is None:
            continue
        module, _, name = origin.rpartition(".")
        if module not in BATCHING:
            continue
        made = getattr(importlib.import_module(module), name, None)
        params = getattr(made, "__dataclass_params__", None)
        if not (isinstance(made, type) and params is not None and params.frozen):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bad.append(f"{', '.join(ast.unparse(t) for t in targets)} = {origin}(...)")
    return bad


def _module_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements run at import: the module's, and those of its if/try/with blocks."""
    found = []
    for node in body:
        found.append(node)
        for block in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and hasattr(node, block):
                found += _module_statements(getattr(node, block))
        for handler in getattr(node, "handlers", []) if isinstance(node, ast.Try) else []:
            found += _module_statements(handler.body)
    return found


def _dotted(func: ast.expr, imported: dict[str, str]) -> str | None:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in imported:
        return None
    return ".".join([imported[func.id], *reversed(parts)])


def test_module_level_batching_objects_are_frozen_descriptions():
    bad = [f"{p.relative_to(PACKAGE)}: {what}" for p in sorted(PACKAGE.rglob("*.py"))
           for what in module_level_batching(p.read_text())]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("source", [
    "from nova_async.db.lines import Lines\nLINES = Lines('x', RuntimeError)\n",
    "from nova_async.db import lines\nLINES: lines.Lines = lines.Lines('x', RuntimeError)\n",
    "import nova_async.scheduler.batch as b\nif True:\n    B = b.Batches()\n",
])
def test_the_batching_check_sees_a_module_level_line(source):
    assert module_level_batching(source)


def test_the_batching_check_lets_frozen_descriptions_be():
    assert not module_level_batching("from nova_async.db.coalesce import Coalesced\nW = Coalesced('q')\n"
                                     "from nova_async.db import shared_read\nR = shared_read.SharedRead('q')\n")


def test_the_roles_are_found():
    assert ROLES >= {"api", "conductor", "scheduler", "placement", "compute", "network", "image", "identity",
                     "dataplane", "volume"}

