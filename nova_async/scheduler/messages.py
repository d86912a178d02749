"""select_destinations: the conductor asks, the scheduler answers with claimed hosts."""

from __future__ import annotations

from typing import Any

import msgspec

from nova_async.bus.messages import Message


class GroupPolicy(Message, frozen=True, kw_only=True):
    """The server group an instance joins, as the scheduler needs it (policies never change)."""

    uuid: str
    policy: str                      # affinity, anti-affinity, soft-affinity, soft-anti-affinity
    max_server_per_host: int = 1     # anti-affinity's rule (2.64); 1 without one


class RequestSpec(Message, frozen=True, kw_only=True):
    """What an instance needs from a host (built by the API, read by scheduler and compute)."""

    project_id: str
    user_id: str
    flavor_id: str
    vcpus: int
    memory_mb: int
    root_gb: int
    ephemeral_gb: int = 0
    swap_mb: int = 0
    image_id: str = ""
    availability_zone: str | None = None
    scheduler_hints: dict[str, list[str]] = {}
    extra_specs: dict[str, str] = {}   # the flavor's
    image_properties: dict[str, str] = {}
    group: GroupPolicy | None = None
    cell: str | None = None            # uuid of the only cell whose hosts may take it (a resize)

    def for_flavor(self, flavor: dict[str, Any]) -> RequestSpec:
        """The same request with another flavor (a resize); `flavor` as instances.flavor keeps it."""
        return msgspec.structs.replace(
            self, flavor_id=str(flavor["id"]), vcpus=flavor["vcpus"], memory_mb=flavor["memory_mb"],
            root_gb=flavor["root_gb"], ephemeral_gb=flavor.get("ephemeral_gb") or 0,
            swap_mb=flavor.get("swap") or 0,
            extra_specs={str(k): str(v) for k, v in (flavor.get("extra_specs") or {}).items()})

    def resources(self) -> dict[str, int]:
        wanted = {"VCPU": self.vcpus, "MEMORY_MB": self.memory_mb,
                  "DISK_GB": self.root_gb + self.ephemeral_gb + (self.swap_mb + 1023) // 1024}
        return {rc: amount for rc, amount in wanted.items() if amount > 0}


SELECT_EVENT = "scheduler_select_destinations_and_claim"  # the action event of a decision


class SelectDestinations(Message, frozen=True, kw_only=True):
    instance_uuids: list[str]
    spec: RequestSpec
    # Where the conductor found the instances (None: a resize; the scheduler looks the cell
    # up). The scheduler records its own step there, as every role records its own.
    cell_uuid: str | None = None


class Destination(Message, frozen=True, kw_only=True):
    host: str
    node: str
    provider_uuid: str


class Selection(Message, frozen=True, kw_only=True):
    """The host claimed for one instance, plus unclaimed alternates for a reschedule."""

    instance_uuid: str
    chosen: Destination
    alternates: list[Destination] = []


class Selections(Message, frozen=True, kw_only=True):
    selections: list[Selection]
