"""`make install` staged under DESTDIR: the code in its own virtualenv (and working: the
installed command migrates a fresh private database, so sql/ came along), the systemd
units, and the example config, which an upgrade's install of the files leaves alone.
`systemd-analyze verify` checks the units where it is installed (no systemd needs to run)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNITS = ("nova-async.service", "nova-async-control.service", "nova-async-compute@.service")

pytestmark = pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")


async def run(*argv: str, cwd: Path = REPO, timeout: float = 900) -> str:
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    text = out.decode(errors="replace")
    assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}:\n{text[-4000:]}"
    return text


async def test_make_install_stages_code_units_and_config(work_dir):
    dest = work_dir / "destdir"
    out = await run("make", "--no-print-directory", "install", f"DESTDIR={dest}")
    venv = dest / "opt/nova-async/.venv"
    units = dest / "etc/systemd/system"
    config = dest / "etc/nova-async/nova-async.toml"
    for unit in UNITS:
        assert f"installed {units / unit}" in out
        text = (units / unit).read_text()
        assert "Type=notify" in text and "WatchdogSec=30" in text and "NotifyAccess=main" in text
        assert ("ExecStart=/opt/nova-async/.venv/bin/nova-async serve "
                "--config /etc/nova-async/nova-async.toml") in text
    assert config.stat().st_mode & 0o777 == 0o640
    assert not (REPO / "build").exists(), "make install left a build/ directory in the checkout"

    # The installed command works on its own: a fresh private database, every migration.
    migrated = await run(str(venv / "bin/nova-async"), "db", "migrate",
                         "--state-dir", str(work_dir / "installed"), cwd=work_dir, timeout=300)
    assert "applied" in migrated and "0001_core.sql" in migrated

    if shutil.which("systemd-analyze"):
        # Verified where they point: the staged virtualenv stands in for /opt/nova-async.
        checked = work_dir / "units-to-verify"
        checked.mkdir()
        for unit in UNITS:
            staged = (units / unit).read_text().replace("/opt/nova-async", str(dest / "opt/nova-async"))
            (checked / unit).write_text(staged)
        proc = await asyncio.create_subprocess_exec(
            "systemd-analyze", "verify", *(str(checked / u) for u in UNITS[:2]),
            str(checked / "nova-async-compute@edge-2.service"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        report = (await asyncio.wait_for(proc.communicate(), 120))[0].decode()
        # Unknown or malformed settings are only warnings to systemd: none is accepted here.
        assert proc.returncode == 0 and report.strip() == "", report

    # An upgrade: the config the operator edited stays as it is. (`make install` is
    # install-code, a pip install over the virtualenv, then install-files, which decides.)
    config.write_text('[service]\nlisten = "0.0.0.0:8774"\n')
    out = await run("make", "--no-print-directory", "install-files", f"DESTDIR={dest}")
    assert f"kept {config}" in out
    assert config.read_text() == '[service]\nlisten = "0.0.0.0:8774"\n'
