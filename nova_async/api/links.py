"""The self/bookmark links every compute resource carries."""

from __future__ import annotations

from typing import Any


def links(base: str, collection: str, ident: str) -> list[dict[str, Any]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/{collection}/{ident}"},
            {"rel": "bookmark", "href": f"{base}/compute/{collection}/{ident}"}]


def bookmark(base: str, collection: str, ident: str) -> list[dict[str, Any]]:
    return [{"rel": "bookmark", "href": f"{base}/compute/{collection}/{ident}"}]
