"""Remote consoles: a URL through which a browser or a WebSocket client reaches a guest.

`POST /servers/{id}/remote-consoles` (2.6+, handlers/remote_consoles.py) takes a protocol and
a type, and answers the URL; before 2.6 the same came from the server actions `os-getVNCConsole`,
`os-getSerialConsole`, `os-getSPICEConsole` and `os-getRDPConsole`, whose type alone names
the protocol. What is served: `serial` (a WebSocket relayed to the guest's serial port)
and `vnc`/`novnc` (the noVNC page, whose WebSocket is relayed to the guest's VNC screen).
The rest of Nova's vocabulary is accepted by the schema and answered as Nova answers a
console type its hosts have not enabled: 400.

Making a URL changes nothing on the host; it stores a single-use token (console_tokens.py).
Nova's checks come first: the server must be visible (404), have a host and not be in the
middle of a delete or migration (409); we also refuse a guest that is not running (409),
whose console could not be opened anyway.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from aiohttp import web

from nova_async.api import console_tokens, lookup
from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.common.states import TaskState, VmState
from nova_async.common import web as w
from nova_async.common.context import RequestContext
from nova_async.common.microversion import Version
from nova_async.db.queries import queries

IQ = queries("instances")

# Where the compute API's app is mounted, and the proxy's paths below it (routes.py).
MOUNT = "/compute"
SERIAL_PATH = "/console/serial"
VNC_PATH = "/console/vnc"
NOVNC_PAGE = "/console/novnc/vnc_lite.html"

# Which types each protocol has, in Nova's vocabulary; mks/webmks arrived in 2.8, spice-direct
# in 2.99 (the schema decides which a request may name).
_TYPES = {"vnc": ("novnc", "xvpvnc"), "spice": ("spice-html5", "spice-direct"), "rdp": ("rdp-html5",),
          "serial": ("serial",), "mks": ("webmks",)}
_SERVED = {("vnc", "novnc"): console_tokens.NOVNC, ("serial", "serial"): console_tokens.SERIAL}
# A console can be opened on a guest in these vm_states (a paused guest keeps its screen).
_OPEN_STATES = frozenset({VmState.ACTIVE, VmState.PAUSED})
_BUSY_TASKS = frozenset({TaskState.DELETING, TaskState.MIGRATING, TaskState.RESIZE_MIGRATING})


def console_url(base_url: str, console_type: str, token: str) -> str:
    if console_type == console_tokens.SERIAL:
        ws_base = "ws" + base_url.removeprefix("http") if base_url.startswith("http") else base_url
        return f"{ws_base}{MOUNT}{SERIAL_PATH}?token={token}"
    # noVNC's page opens ws://<its own host:port>/<path>, path taken from the query.
    path = quote(f"{MOUNT.lstrip('/')}{VNC_PATH}?token={token}", safe="")
    return f"{base_url}{MOUNT}{NOVNC_PAGE}?path={path}"


async def open_console(state: ApiState, ctx: RequestContext, server_id: str, protocol: str, console_type: str) -> str:
    """The checks Nova makes, in its order, then a token and its URL."""
    db, row = await lookup.visible_instance(state, ctx, server_id)
    uuid = str(row["uuid"])
    if row["host"] is None:
        raise errors.Conflict(f"Instance {uuid} is not ready.")
    if row["task_state"] in _BUSY_TASKS:
        raise errors.Conflict(f"Cannot 'get_console' instance {uuid} while it is in task_state "
                              f"{row['task_state']}")
    if console_type not in _TYPES[protocol]:
        raise errors.InvalidInput(f"Invalid console type {console_type}")
    served = _SERVED.get((protocol, console_type))
    if served is None:
        raise errors.InvalidInput(f"Unavailable console type {console_type}.")
    if row["vm_state"] not in _OPEN_STATES:
        raise errors.Conflict(f"Instance {uuid} is not running (vm_state {row['vm_state']}): "
                              "its console cannot be opened.")
    token = await console_tokens.issue(db, uuid, served)
    return console_url(state.base_url, served, token)


# --- before 2.6: server actions (rows of handlers/server_actions.ACTIONS) -------------------

def _type_only(*types: str) -> dict[str, Any]:
    return {"type": "object", "required": ["type"], "additionalProperties": False,
            "properties": {"type": {"enum": list(types)}}}


LEGACY_ACTIONS: dict[str, dict[str, Any]] = {
    "os-getVNCConsole": _type_only("novnc", "xvpvnc"),
    "os-getSerialConsole": _type_only("serial"),
    "os-getSPICEConsole": _type_only("spice-html5"),
    "os-getRDPConsole": _type_only("rdp-html5"),
}
_PROTOCOL_OF = {t: protocol for protocol, types in _TYPES.items() for t in types}


async def legacy_console(state: ApiState, ctx: RequestContext, uuid: str, value: dict[str, str],
                         version: Version) -> web.Response:
    if version >= Version(2, 6):   # replaced by remote-consoles, as in Nova
        raise errors.NotFound("The resource could not be found.")
    console_type = value["type"]
    url = await open_console(state, ctx, uuid, _PROTOCOL_OF[console_type], console_type)
    return w.dump({"console": {"type": console_type, "url": url}})
