"""A virtualenv of upstream OpenStack packages for a bench's peer, made once and kept."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def ensure(venv: Path, packages: Sequence[str], commands: Sequence[str], what: str) -> Path:
    """Create `venv` with `packages` on first use; a later run finds `commands` in its bin/
    and goes on."""
    if all((venv / "bin" / name).exists() for name in commands):
        return venv
    print(f"installing {what} into {venv} (first run only) …", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *packages], check=True)
    return venv
