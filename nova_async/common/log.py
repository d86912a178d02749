"""structlog set-up: context variables first, JSON when not on a TTY."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(fmt: str = "auto", level: int = logging.INFO) -> None:
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() else "json"
    renderer = (structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()) if fmt == "console"
                else structlog.processors.JSONRenderer())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


def get(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)
