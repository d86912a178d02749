"""The self/bookmark links every compute resource carries, and the `next` link of a full page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode


def links(base: str, collection: str, ident: str) -> list[dict[str, Any]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/{collection}/{ident}"},
            {"rel": "bookmark", "href": f"{base}/compute/{collection}/{ident}"}]


def bookmark(base: str, collection: str, ident: str) -> list[dict[str, Any]]:
    return [{"rel": "bookmark", "href": f"{base}/compute/{collection}/{ident}"}]


def next_page(base: str, collection: str, path: str, query: Mapping[str, str], ids: list[str],
              limit: int) -> dict[str, Any]:
    """`{"<collection>_links": [next]}` when this page of `path` (e.g. "flavors/detail") is
    full (as many items as its limit, explicit or the maximum), else {}, as Nova: the next
    page is the same query with the last item as its marker."""
    if not limit or len(ids) < limit:
        return {}
    params = [(k, v) for k, v in query.items() if k != "marker"] + [("marker", ids[-1])]
    href = f"{base}/compute/v2.1/{path}?{urlencode(params)}"
    return {f"{collection}_links": [{"rel": "next", "href": href}]}
