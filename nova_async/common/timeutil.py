"""Timestamps in the shapes the OpenStack APIs use."""

from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(ts: datetime | None) -> str | None:
    """Nova's `2024-01-01T00:00:00Z` form."""
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_micro(ts: datetime | None) -> str | None:
    """Nova's `2024-01-01T00:00:00.000000` form (instance actions, no zone)."""
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")


def parse_iso(value: str) -> datetime | None:
    """An ISO 8601 time as the APIs accept it (`2015-01-24T17:08Z`, an offset, or none for
    UTC), or None when it is not one."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
