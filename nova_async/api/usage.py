"""What projects' servers used over a period (os-simple-tenant-usage), counted as Nova counts
it: each server that ran in the period for the hours it ran within it, times its flavor's
vcpus, memory and disk; deleted servers count for the time they were there."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from nova_async.api.state import ApiState
from nova_async.common import errors
from nova_async.db.queries import queries

Q = queries("usage")
_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")


def parse_time(raw: str | None, now: datetime) -> datetime | None:
    """A query's start or end (naive UTC, as Nova reads it); None when it is not one."""
    if raw is None:
        return now
    for fmt in _FORMATS:
        try:
            return datetime.strptime(raw, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


@dataclass
class TenantUsage:
    tenant_id: str
    start: datetime
    stop: datetime
    servers: list[dict[str, Any]] = field(default_factory=list)

    def shown(self, detailed: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tenant_id": self.tenant_id,
            "total_local_gb_usage": sum(s["hours"] * s["local_gb"] for s in self.servers),
            "total_vcpus_usage": sum(s["hours"] * s["vcpus"] for s in self.servers),
            "total_memory_mb_usage": sum(s["hours"] * s["memory_mb"] for s in self.servers),
            "total_hours": sum(s["hours"] for s in self.servers),
            "start": _naive(self.start), "stop": _naive(self.stop)}
        if detailed:
            out["server_usages"] = self.servers
        return out


def _naive(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).replace(tzinfo=None).isoformat()


def _server(row, start: datetime, stop: datetime, now: datetime) -> dict[str, Any]:
    began, ended = row["launched_at"], row["terminated_at"]
    hours = ((min(ended or stop, stop) - max(began, start)).total_seconds()) / 3600
    flavor = row["flavor"]
    return {"instance_id": str(row["uuid"]), "name": row["display_name"], "hours": hours,
            "memory_mb": flavor["memory_mb"], "local_gb": flavor["root_gb"] + flavor.get("ephemeral_gb", 0),
            "vcpus": flavor["vcpus"], "tenant_id": row["project_id"], "flavor": flavor["name"],
            "started_at": _naive(began), "ended_at": _naive(ended) if ended else None,
            "state": "terminated" if ended else row["vm_state"],
            "uptime": int(((ended or now) - began).total_seconds())}


async def tenant_usages(state: ApiState, start: datetime, stop: datetime, now: datetime,
                        project_id: str | None = None, marker: str | None = None,
                        limit: int | None = None) -> list[TenantUsage]:
    """Each project's usage in [start, stop), in the order its first server was made; with
    `marker` and `limit`, over the servers after the marker, at most `limit` of them."""
    rows = sorted(await state.cells.gather(Q.instances_in_period, start, stop, project_id),
                  key=lambda r: (r["created_at"], r["uuid"]))
    if marker is not None:
        at = next((i for i, r in enumerate(rows) if str(r["uuid"]) == marker), None)
        if at is None:
            raise errors.InvalidInput(f"marker [{marker}] not found")
        rows = rows[at + 1:]
    if limit is not None:
        rows = rows[:limit]
    usages: dict[str, TenantUsage] = {}
    for row in rows:
        usage = usages.setdefault(row["project_id"], TenantUsage(row["project_id"], start, stop))
        usage.servers.append(_server(row, start, stop, now))
    return list(usages.values())
