"""`GET /servers/{id}/diagnostics`: what the hypervisor says about a running server.

Admin-only, as Nova's default policy has it (a member sees 403 for a server of their own
project, 404 for another project's, as for any server they cannot see). The numbers come
from the instance's compute host over the bus (compute/diagnostics.py); a server without a
host, or whose guest is not running, is a 409.

From 2.48 the answer is Nova's standard shape (state, driver, hypervisor, uptime, memory,
and one entry per vCPU, NIC and disk); before, the libvirt driver's flat keys
(`cpu0_time`, `vda_read`, `<tap>_rx`, `memory`, `memory-<balloon stat>`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from nova_async.api import lookup, microversion, policy
from nova_async.api.state import STATE
from nova_async.common import errors
from nova_async.common.states import TaskState
from nova_async.common import web as w
from nova_async.common.microversion import Version
from nova_async.compute.messages import Diagnostics

STANDARD = Version(2, 48)


def standard(d: Diagnostics) -> dict[str, Any]:
    return {
        "state": d.state, "driver": d.driver, "hypervisor": d.hypervisor, "hypervisor_os": d.hypervisor_os,
        "uptime": d.uptime, "config_drive": d.config_drive,
        "num_cpus": len(d.cpus), "num_nics": len(d.nics), "num_disks": len(d.disks),
        "memory_details": {"maximum": d.memory_max_kib // 1024, "used": d.memory_used_kib // 1024},
        "cpu_details": [{"id": c.id, "time": c.time, "utilisation": c.utilisation} for c in d.cpus],
        "nic_details": [{"mac_address": n.mac_address, "rx_octets": n.rx_octets, "rx_errors": n.rx_errors,
                         "rx_drop": n.rx_drop, "rx_packets": n.rx_packets, "rx_rate": None,
                         "tx_octets": n.tx_octets, "tx_errors": n.tx_errors, "tx_drop": n.tx_drop,
                         "tx_packets": n.tx_packets, "tx_rate": None} for n in d.nics],
        "disk_details": [{"read_bytes": k.read_bytes, "read_requests": k.read_requests,
                          "write_bytes": k.write_bytes, "write_requests": k.write_requests,
                          "errors_count": k.errors_count} for k in d.disks],
    }


def legacy(d: Diagnostics) -> dict[str, Any]:
    out: dict[str, Any] = {f"cpu{c.id}_time": c.time for c in d.cpus}
    for k in d.disks:
        out.update({f"{k.device}_read": k.read_bytes, f"{k.device}_read_req": k.read_requests,
                    f"{k.device}_write": k.write_bytes, f"{k.device}_write_req": k.write_requests,
                    f"{k.device}_errors": k.errors_count})
    out["memory"] = d.memory_max_kib
    out.update({f"memory-{key}": value for key, value in d.memory_stats.items()})
    for n in d.nics:
        out.update({f"{n.device}_rx": n.rx_octets, f"{n.device}_rx_packets": n.rx_packets,
                    f"{n.device}_rx_errors": n.rx_errors, f"{n.device}_rx_drop": n.rx_drop,
                    f"{n.device}_tx": n.tx_octets, f"{n.device}_tx_packets": n.tx_packets,
                    f"{n.device}_tx_errors": n.tx_errors, f"{n.device}_tx_drop": n.tx_drop})
    return out


async def show_diagnostics(request: web.Request) -> web.Response:
    state, ctx = request.app[STATE], w.context(request)
    server_id = request.match_info["server_id"]
    _, row = await lookup.visible_instance(state, ctx, server_id)
    uuid = str(row["uuid"])
    policy.require_admin(request)
    if row["host"] is None or row["task_state"] == TaskState.DELETING:
        raise errors.Conflict(f"Instance {uuid} is not ready.")
    found = await state.compute.diagnostics(row["host"], uuid, ctx)
    return w.dump(standard(found) if microversion.of(request) >= STANDARD else legacy(found))
