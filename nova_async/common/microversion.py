"""OpenStack microversions as every versioned API here reads them: an
`OpenStack-API-Version: <service> <major.minor>` header (one header may name several
services, comma-separated), or `latest`. Each API keeps its own range and its own wording
of a refusal; this module only reads what was asked."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

HEADER = "OpenStack-API-Version"
_FORMAT = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")


class Version(NamedTuple):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


def requested(header_values: Iterable[str], service: str) -> str | None:
    """What the header(s) ask of `service`, as written; None when they do not name it."""
    for part in header_values:
        for item in part.split(","):
            name, _, value = item.strip().partition(" ")
            if name.lower() == service:
                return value.strip()
    return None


def parse(value: str) -> Version | None:
    """`major.minor` as a Version, or None when `value` is not of that form."""
    m = _FORMAT.match(value)
    return Version(int(m.group(1)), int(m.group(2))) if m else None
