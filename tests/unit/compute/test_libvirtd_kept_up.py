"""host-setup's loop that keeps libvirtd up where no systemd does (KEEP_LIBVIRTD), run by the
shell host-setup runs it with, around a stand-in `libvirtd` on PATH whose exits the test
chooses: the loop is what is tested here; the real daemon it starts is everywhere else."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

from nova_async.compute.host_setup import KEEP_LIBVIRTD, _keeper_running
from tests.waiting import until


def keep_up(tmp_path: Path, exits: list[int]) -> tuple[int, list[int], str]:
    """Run the loop over a `libvirtd` that exits with `exits` in turn (then 0); its status,
    the exits it saw, and what it said."""
    (tmp_path / "exits").write_text("".join(f"{rc}\n" for rc in exits))
    stand_in = tmp_path / "bin" / "libvirtd"
    stand_in.parent.mkdir()
    stand_in.write_text(f"""#!/bin/sh
rc=$(head -n 1 {tmp_path}/exits); sed -i 1d {tmp_path}/exits
echo "${{rc:-0}}" >> {tmp_path}/ran
exit "${{rc:-0}}"
""")
    stand_in.chmod(0o755)
    env = {**os.environ, "PATH": f"{stand_in.parent}:{os.environ['PATH']}"}
    done = subprocess.run(["sh", "-c", KEEP_LIBVIRTD, "nova-async-libvirtd", "0.1"], env=env,
                          capture_output=True, text=True, timeout=60)
    ran = [int(line) for line in (tmp_path / "ran").read_text().split()]
    return done.returncode, ran, done.stderr


def test_a_libvirtd_that_dies_is_started_again_and_a_clean_stop_is_left_stopped(tmp_path):
    # A segfault (139, as the shell reports a SIGSEGV) and an error exit are each followed by
    # a new start; the clean exit after them ends the loop.
    rc, ran, said = keep_up(tmp_path, [139, 1])
    assert (rc, ran) == (0, [139, 1, 0]), said
    assert said.count("starting it again in 0.1 s") == 2, said
    assert "exited with status 139" in said


def test_a_libvirtd_that_keeps_dying_at_once_is_given_up_on_the_fifth_time(tmp_path):
    rc, ran, said = keep_up(tmp_path, [1] * 9)
    assert (rc, ran) == (1, [1] * 5), said
    assert "five times in a row within a minute; not started again" in said


async def test_a_loop_between_two_starts_is_seen_so_host_setup_starts_no_second_one(tmp_path):
    # A loop whose libvirtd is down for now (the stand-in fails at once, and the loop sleeps
    # before the next start): libvirtd is not running, the loop is. Named uniquely, so that
    # host-setup's own loop on this machine does not count.
    name = f"keeper-test-{uuid.uuid4().hex[:8]}"
    stand_in = tmp_path / "bin" / "libvirtd"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\nexit 1\n")
    stand_in.chmod(0o755)
    env = {**os.environ, "PATH": f"{stand_in.parent}:{os.environ['PATH']}"}
    assert not _keeper_running(name)
    loop = subprocess.Popen(["sh", "-c", KEEP_LIBVIRTD, name, "30"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await until(lambda: _keeper_running(name), what="the loop seen")
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    assert not _keeper_running(name)
