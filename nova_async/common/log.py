"""structlog set-up: context variables first, JSON when not on a TTY or under systemd.

Every line carries what the context bound: `role` (per role task), `request_id` (per HTTP
request and per bus message), `instance_uuid` (per instance worker). Lines from the
standard library's loggers (aiohttp, asyncio) go through the same renderer, so a JSON
stream stays JSON for `jq`.

Under systemd, stderr is the journal's stream socket and $JOURNAL_STREAM names it
(`device:inode`). Then each line starts with a syslog priority, `<6>{…}`, which journald
strips and stores as the entry's priority: `journalctl -p warning` works and `-o cat` still
prints plain JSON."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from typing import IO, Any

import msgspec
import structlog

# syslog priorities, by structlog method name
PRIORITY = {"debug": 7, "info": 6, "msg": 6, "warning": 4, "warn": 4, "error": 3, "exception": 3,
            "critical": 2, "fatal": 2}


def is_journal(stream: IO[Any], environ: Mapping[str, str] | None = None) -> bool:
    """True when `stream` is the journal stream systemd connected this process to."""
    dev, _, ino = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "").partition(":")
    if not (dev.isdigit() and ino.isdigit()):
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (int(dev), int(ino))


def choose_format(fmt: str, stream: IO[Any], environ: Mapping[str, str] | None = None) -> str:
    if fmt != "auto":
        return fmt
    if is_journal(stream, environ):
        return "json"
    return "console" if stream.isatty() else "json"


_ENCODER = msgspec.json.Encoder(enc_hook=repr)


def _json(event: dict[str, Any], **_: Any) -> str:
    """A line's JSON: msgspec's encoder, several times faster than the standard library's on
    the line every request writes; what it cannot encode (a key that is not a string, say)
    goes through the standard library's, as structlog would have sent it."""
    try:
        return _ENCODER.encode(event).decode()
    except (TypeError, msgspec.EncodeError):
        return json.dumps(event, default=repr)


def _syslog_priority(_: Any, method: str, line: str) -> str:
    return f"<{PRIORITY.get(method, 6)}>{line}"


def configure(fmt: str = "auto", level: int = logging.INFO) -> None:
    stream = sys.stderr
    fmt = choose_format(fmt, stream)
    renderer: Any = (structlog.dev.ConsoleRenderer(colors=stream.isatty()) if fmt == "console"
                     else structlog.processors.JSONRenderer(serializer=_json))
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    tail: list[Any] = [renderer] + ([_syslog_priority] if is_journal(stream) else [])
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, *tail],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # one write per line (PrintLogger writes the line and its newline apart)
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, *tail]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def get(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)
