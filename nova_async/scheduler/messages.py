"""select_destinations: the conductor asks, the scheduler answers with claimed hosts."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from nova_async.bus.messages import Message
from nova_async.common import errors
from nova_async.placement.messages import Holder


class GroupPolicy(Message, frozen=True, kw_only=True):
    """The server group an instance joins, as the scheduler needs it (policies never change)."""

    uuid: str
    policy: str                      # affinity, anti-affinity, soft-affinity, soft-anti-affinity
    max_server_per_host: int = 1     # anti-affinity's rule (2.64); 1 without one


Count = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]


class Flavor(msgspec.Struct, frozen=True, kw_only=True):
    """An instance's own copy of its flavor (flavors may change or go), as `instances.flavor`
    and a migration's old and new flavor keep it. It is the one place an instance's flavor is
    stored: its request spec is stored without it (`RequestSpec.to_stored`). Readers take it
    through `from_row`, whose checks are the field types below."""

    id: str
    name: str
    vcpus: Positive
    memory_mb: Positive
    root_gb: Count
    ephemeral_gb: Count = 0
    swap: Count = 0
    extra_specs: dict[str, str] = {}

    @classmethod
    def of_flavor(cls, row: Any) -> Flavor:
        """An instance's copy of a flavor as the flavors table holds it now."""
        return cls(id=row["id"], name=row["name"], vcpus=row["vcpus"], memory_mb=row["memory_mb"],
                   root_gb=row["root_gb"], ephemeral_gb=row["ephemeral_gb"], swap=row["swap"],
                   extra_specs={str(k): str(v) for k, v in (row["extra_specs"] or {}).items()})

    @classmethod
    def from_row(cls, data: Any) -> Flavor:
        """The flavor a row keeps (an instance's, a migration's); InvalidInput when it holds
        no usable flavor, which no host could build."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise errors.InvalidInput(f"The instance's flavor is not usable: {exc}") from None


# The RequestSpec fields that restate its flavor: not stored with the spec (the flavor is
# stored beside it), put back from the flavor when the spec is read.
_FLAVOR_FIELDS = ("flavor_id", "vcpus", "memory_mb", "root_gb", "ephemeral_gb", "swap_mb", "extra_specs")


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
    requested_host: str | None = None  # the only host that may take it (a cold migration its admin aimed)
    # ids of the security groups its new ports join (the boot's, resolved by name when accepted);
    # None: the project's default group
    security_groups: list[str] | None = None
    # Boots from a volume (Nova's is_bfv): its root disk is the volume, not this host's disk,
    # so no DISK_GB is claimed for it (the flavor's ephemeral and swap still are).
    is_bfv: bool = False

    @classmethod
    def from_stored(cls, spec: dict[str, Any], flavor: Flavor | dict[str, Any]) -> RequestSpec:
        """The spec `to_stored()` kept, with `flavor` (the row's, or the new one of a resize);
        fields of a flavor still in `spec` (stored before migration 0042) give way to it."""
        flavor = flavor if isinstance(flavor, Flavor) else Flavor.from_row(flavor)
        return msgspec.convert({**spec, **_flavor_fields(flavor)}, cls)

    def to_stored(self) -> dict[str, Any]:
        """What `instances.request_spec` keeps: the spec without its flavor."""
        stored = msgspec.to_builtins(self)
        for field in _FLAVOR_FIELDS:
            stored.pop(field, None)
        return stored

    def resources(self) -> dict[str, int]:
        wanted = {"VCPU": self.vcpus, "MEMORY_MB": self.memory_mb,
                  "DISK_GB": (0 if self.is_bfv else self.root_gb) + self.ephemeral_gb + (self.swap_mb + 1023) // 1024}
        return {rc: amount for rc, amount in wanted.items() if amount > 0}


def _flavor_fields(flavor: Flavor) -> dict[str, Any]:
    return {"flavor_id": flavor.id, "vcpus": flavor.vcpus, "memory_mb": flavor.memory_mb,
            "root_gb": flavor.root_gb, "ephemeral_gb": flavor.ephemeral_gb, "swap_mb": flavor.swap,
            "extra_specs": dict(flavor.extra_specs)}


SELECT_EVENT = "scheduler_select_destinations_and_claim"  # the action event of a decision


class SelectDestinations(Message, frozen=True, kw_only=True):
    instance_uuids: list[str]
    spec: RequestSpec
    # Where the conductor found the instances (None: a resize; the scheduler looks the cell
    # up). The scheduler records its own step there, as every role records its own.
    cell_uuid: str | None = None
    # New at each ask: copies of one ask (a publish retried) are decided once (scheduler/answers.py).
    question_id: str = ""
    # Per instance, who holds it while it is scheduled (the asking conductor's lock): its
    # claims and releases are made only while that holder lives, so a decision that outlives
    # its asker never undoes what the copy that took the instance over did (placement Holder).
    holders: dict[str, Holder] = {}


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
