"""The architecture, checked: a role reaches another role only through that role's
`client` and `messages` modules, and the shared layers (bus, db, common) import no role."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "nova_async"
ROLES = {"api", "conductor", "scheduler", "placement", "compute", "network", "image", "identity"}
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
