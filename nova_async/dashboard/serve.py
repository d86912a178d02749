"""Serving the dashboard's files: `/dashboard/` and what its page loads, from the package.

Every path resolves inside static/ or is a 404 (no `..`, no symlinks out). The page itself
is never cached, so an upgrade shows at the next load; the modules it imports revalidate
by their ETag. The Content-Security-Policy keeps the page to this origin: scripts, styles,
fetches, WebSockets and frames all come from the process, never a CDN."""

from __future__ import annotations

import hashlib
import mimetypes
from pathlib import Path

from aiohttp import web

STATIC = Path(__file__).parent / "static"
PREFIX = "/dashboard"
# 'self' covers same-origin ws:/wss: too (CSP level 3, as Chromium and Firefox apply it);
# data:/blob: images are the charts and the upload previews the page draws itself.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "SAMEORIGIN"}
TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".html": "text/html",
         ".svg": "image/svg+xml", ".json": "application/json", ".txt": "text/plain", ".png": "image/png"}


def _resolve(tail: str) -> Path | None:
    if not tail or tail.endswith("/"):
        tail += "index.html"
    try:
        path = (STATIC / tail).resolve()
        if not path.is_relative_to(STATIC.resolve()) or not path.is_file():
            return None
    except (ValueError, OSError):   # a NUL byte, a name too long: no such file either
        return None
    return path


async def show_file(request: web.Request) -> web.StreamResponse:
    path = _resolve(request.match_info.get("tail", ""))
    if path is None:
        raise web.HTTPNotFound(text="No such page in the dashboard.\n", headers=HEADERS)
    body = path.read_bytes()
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    cache = "no-cache" if path.suffix == ".html" else "no-cache, max-age=0"
    headers = {**HEADERS, "ETag": etag, "Cache-Control": cache}
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers=headers)
    content_type = TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    charset = "utf-8" if content_type.startswith("text/") or content_type.endswith(("json", "svg+xml")) else None
    return web.Response(body=body, content_type=content_type, charset=charset, headers=headers)


async def to_index(request: web.Request) -> web.StreamResponse:
    raise web.HTTPMovedPermanently(f"{PREFIX}/")


def routes() -> list[web.RouteDef]:
    """The dashboard's routes on the port's root application (public: its files hold no data)."""
    return [web.get(PREFIX, to_index), web.get(PREFIX + "/{tail:.*}", show_file)]


def wants_html(request: web.Request) -> bool:
    """A browser navigating (`Accept: text/html…`), as opposed to a client asking for JSON:
    `GET /` redirects the first to the dashboard and answers the second the version document."""
    accept = request.headers.get("Accept", "")
    return "text/html" in accept and "application/json" not in accept
