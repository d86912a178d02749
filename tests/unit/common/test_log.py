"""Log format choice, and what a real process writes to a journal-like stream."""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys

from nova_async.common.log import choose_format, is_journal

PROGRAM = """
import logging, structlog
from nova_async.common import log
log.configure()
structlog.contextvars.bind_contextvars(role="compute", instance_uuid="u-1")
structlog.get_logger("x").info("instance active", host="h1")
logging.getLogger("aiohttp.server").warning("a library speaks")
"""


def journal_of(stream) -> str:
    st = os.fstat(stream.fileno())
    return f"{st.st_dev}:{st.st_ino}"


def test_json_off_a_tty_console_on_one_and_json_on_the_journal():
    read, write = os.pipe()
    primary, secondary = pty.openpty()
    a, b = socket.socketpair()
    with os.fdopen(write, "w") as piped, os.fdopen(secondary, "w") as tty, b.makefile("w") as journal:
        assert choose_format("auto", piped, {}) == "json"
        assert choose_format("auto", tty, {}) == "console"
        assert choose_format("json", tty, {}) == "json"
        assert is_journal(journal, {"JOURNAL_STREAM": journal_of(journal)})
        assert choose_format("auto", journal, {"JOURNAL_STREAM": journal_of(journal)}) == "json"
        # a JOURNAL_STREAM inherited from a parent names some other stream: ignored
        assert not is_journal(tty, {"JOURNAL_STREAM": journal_of(journal)})
        assert choose_format("auto", tty, {"JOURNAL_STREAM": journal_of(journal)}) == "console"
    os.close(read)
    os.close(primary)
    a.close()
    b.close()


def test_a_process_on_the_journal_writes_prioritised_json_lines():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        env = {**os.environ, "JOURNAL_STREAM": journal_of(theirs)}
        proc = subprocess.run([sys.executable, "-c", PROGRAM], stderr=theirs, env=env, timeout=60)
        assert proc.returncode == 0
        theirs.close()
        lines = ours.makefile("r").read().splitlines()
    assert [line[:3] for line in lines] == ["<6>", "<4>"], lines
    mine, library = (json.loads(line[3:]) for line in lines)
    assert mine["event"] == "instance active" and mine["level"] == "info"
    assert mine["role"] == "compute" and mine["instance_uuid"] == "u-1" and mine["host"] == "h1"
    assert library["event"] == "a library speaks" and library["level"] == "warning"
    assert library["logger"] == "aiohttp.server"
