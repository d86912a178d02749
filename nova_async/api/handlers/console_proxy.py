"""The console proxy: WebSockets on the API's own port, relayed to a guest's console.

Nova runs nova-serialproxy and nova-novncproxy as services of their own; here they are two
routes of the compute API (`/compute/console/serial`, `/compute/console/vnc`), plus the
noVNC page itself, served from Debian's `novnc` package when it is installed.

A connection goes: token (query `token`) spent in the database → the instance's host asked,
over the bus, where that console listens now (its serial port's unix socket, or the VNC
port libvirt picked) → a stream opened to it → only then the WebSocket upgrade. A bad, spent
or expired token is refused as Nova's proxies (websockify) refuse it, which check the token
only once the WebSocket is open: the handshake completes (101) and the connection is
dropped, with no frame at all (Tempest's bad-token tests read nothing, not even a close
frame's code); a request that is no WebSocket upgrade gets a plain 401. The other refusals
are plain HTTP errors before the upgrade: 409 when the guest is not running, 400 when it
has no such console. From then on bytes go both ways unchanged, in binary frames (noVNC asks
for the `binary` subprotocol; text frames from a client are sent as their UTF-8 bytes)
until either side closes.

The proxy opens the address the compute host answers: a unix socket or a loopback port on
the guest's machine. An API process on another machine than the guest therefore cannot
relay it (Nova's proxies reach compute hosts over the network instead); one that shares the
machine can, whether the compute role runs in its process or another one.

The token is the credential (no X-Auth-Token: a browser cannot send one on a WebSocket),
so these routes are public. A browser page elsewhere must not ride on a user's URL: a
request whose Origin names another host than the one it was sent to is refused (403).
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import structlog
from aiohttp import WSMsgType, web

from nova_async.api import console_tokens
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common import web as w
from nova_async.compute.messages import ConsoleEndpoint, ConsoleKind

log = structlog.get_logger("api.console")

NOVNC_ROOT = Path("/usr/share/novnc")
CHUNK = 64 * 1024
_KINDS = {console_tokens.SERIAL: ConsoleKind.SERIAL, console_tokens.NOVNC: ConsoleKind.VNC}


def _check_origin(request: web.Request) -> None:
    origin = request.headers.get("Origin")
    if origin and urlsplit(origin).netloc.lower() != request.host.lower():
        raise errors.Forbidden("The console is not open to pages of another origin.")


async def _connect(endpoint: ConsoleEndpoint) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        if endpoint.path:
            return await asyncio.open_unix_connection(endpoint.path)
        return await asyncio.open_connection(endpoint.host, endpoint.port)
    except OSError as exc:
        raise errors.Unavailable(f"The guest's console cannot be reached: {exc.strerror or exc}") from None


async def _proxy(request: web.Request, console_type: str) -> web.StreamResponse:
    _check_origin(request)
    state = request.app[STATE]
    token = request.query.get("token", "")
    # The token names no cell: it is spent in whichever holds it (at most one does).
    grants = await state.cells.each(lambda cell: console_tokens.spend(cell.pool, token, console_type))
    grant = next((g for g in grants if g is not None), None)
    if grant is None:
        return await _drop_after_handshake(request, "The console token is invalid, used or expired.")
    if grant.host is None:
        raise errors.Conflict(f"Instance {grant.instance_uuid} is not ready.")
    with structlog.contextvars.bound_contextvars(instance_uuid=grant.instance_uuid):
        endpoint = await state.compute.console_endpoint(grant.host, grant.instance_uuid, _KINDS[console_type])
        reader, writer = await _connect(endpoint)
        try:
            ws = web.WebSocketResponse(protocols=("binary",), max_msg_size=1024 * 1024)
            await ws.prepare(request)
            log.info("console opened", console=console_type)
            await _relay(ws, reader, writer)
            log.info("console closed", console=console_type)
            return ws
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def _drop_after_handshake(request: web.Request, reason: str) -> web.StreamResponse:
    ws = web.WebSocketResponse(protocols=("binary",))
    if not ws.can_prepare(request).ok or request.transport is None:
        raise errors.Unauthorized(reason)
    await ws.prepare(request)
    log.info("console refused", reason=reason)
    # Closing the transport sends what is buffered (the 101) and then FIN; the close frame
    # aiohttp tries once we return goes nowhere.
    request.transport.close()
    return ws


async def _relay(ws: web.WebSocketResponse, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Bytes both ways until either side is done; then the other direction stops too."""
    async def to_guest() -> None:
        async for msg in ws:
            if msg.type is WSMsgType.BINARY:
                writer.write(msg.data)
            elif msg.type is WSMsgType.TEXT:
                writer.write(msg.data.encode())
            else:
                return
            await writer.drain()

    async def to_client() -> None:
        while data := await reader.read(CHUNK):
            await ws.send_bytes(data)

    tasks = [asyncio.create_task(to_guest(), name="console:to-guest"),
             asyncio.create_task(to_client(), name="console:to-client")]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.info("console relay ended", error=str(task.exception()))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await ws.close()


@w.public
async def serial_console(request: web.Request) -> web.StreamResponse:
    return await _proxy(request, console_tokens.SERIAL)


@w.public
async def vnc_console(request: web.Request) -> web.StreamResponse:
    return await _proxy(request, console_tokens.NOVNC)


@w.public
async def novnc_file(request: web.Request) -> web.StreamResponse:
    """A file of the noVNC client (its page, scripts, images), read-only, from the package."""
    relative = PurePosixPath(request.match_info["path"])
    if relative.is_absolute() or any(part in ("..", "") for part in relative.parts) or not relative.parts:
        raise errors.NotFound("The resource could not be found.")
    path = NOVNC_ROOT.joinpath(*relative.parts)
    try:
        found = path.is_file()
    except OSError:  # a name the filesystem refuses to look up (longer than 255 bytes, say)
        found = False
    if not found:
        raise errors.NotFound("The resource could not be found." if NOVNC_ROOT.is_dir() else
                              "The noVNC client is not installed on this host (Debian package novnc).")
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return web.FileResponse(path, headers={"Content-Type": content_type})
