"""Hook plugins installed for one test as pip installs a package: a module beside a
`.dist-info` directory whose entry_points.txt offers it in the group nova_async.hooks, on a
directory the test puts first on sys.path (monkeypatch.syspath_prepend). importlib.metadata
finds it as it finds the example plugins `make test` installs; nothing is patched.

Each plugin's module has a name of its own, so no test sees another's (sys.modules)."""

from __future__ import annotations

import importlib
import secrets
import textwrap
from pathlib import Path
from types import ModuleType

import pytest


def install(monkeypatch: pytest.MonkeyPatch, directory: Path, name: str, source: str) -> str:
    """Install `source` as the hook plugin `name`; the module's name."""
    directory.mkdir(parents=True, exist_ok=True)
    module = f"hookplugin_{name}_{secrets.token_hex(4)}"
    (directory / f"{module}.py").write_text(textwrap.dedent(source))
    info = directory / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[nova_async.hooks]\n{name} = {module}\n")
    monkeypatch.syspath_prepend(str(directory))
    return module


def module(name: str) -> ModuleType:
    """An installed plugin's module, as the service imported it (what it recorded)."""
    return importlib.import_module(name)
