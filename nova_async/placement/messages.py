"""What other roles may ask placement over the bus."""

from __future__ import annotations

from nova_async.bus.messages import Message


class InventoryRecord(Message, frozen=True, kw_only=True):
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = 0  # 0 means: total
    step_size: int = 1
    allocation_ratio: float = 1.0


class EnsureProvider(Message, frozen=True, kw_only=True):
    """Create the provider if missing and set its inventories (a compute node reporting in)."""

    REDELIVERABLE = True
    uuid: str
    name: str
    inventories: dict[str, InventoryRecord]


class GetCandidates(Message, frozen=True, kw_only=True):
    REDELIVERABLE = True
    resources: dict[str, int]
    limit: int | None = None


class ProviderSummary(Message, frozen=True, kw_only=True):
    uuid: str
    name: str
    generation: int
    # per resource class: capacity ((total - reserved) * ratio) and current usage
    capacity: dict[str, int]
    used: dict[str, int]
    traits: list[str] = []


class Candidates(Message, frozen=True, kw_only=True):
    providers: list[ProviderSummary]
    # Only when `providers` is empty: per requested class, how many root providers could take
    # that amount of it on their own (tells a user which resource is short).
    providers_with_room: dict[str, int] = {}


class Holder(Message, frozen=True, kw_only=True):
    """Who holds the instance a claim is made for: PostgreSQL backend `pid` holding the session
    advisory lock `key` (a conductor scheduling it, conductor/claims.py). The claim, or its
    release, is written only while that lock is still held: once its holder has died, a
    write still on its way for it is refused, whoever took the instance over since."""

    pid: int
    key: int


class Claim(Message, frozen=True, kw_only=True):
    """Allocate `resources` on `provider_uuid` for `consumer_uuid`, atomically, or refuse."""

    consumer_uuid: str
    provider_uuid: str
    resources: dict[str, int]
    project_id: str
    user_id: str
    holder: Holder | None = None


class ClaimResult(Message, frozen=True, kw_only=True):
    ok: bool
    reason: str = ""
    holder_gone: bool = False   # refused because a holder no longer holds its instance


class DeleteAllocations(Message, frozen=True, kw_only=True):
    REDELIVERABLE = True   # deleting what is gone changes nothing
    consumer_uuid: str
    holder: Holder | None = None


class GetHolding(Message, frozen=True, kw_only=True):
    """Which of `consumer_uuids` hold allocations; answered with Holding."""

    REDELIVERABLE = True
    consumer_uuids: list[str]


class Holding(Message, frozen=True, kw_only=True):
    consumer_uuids: list[str]


class DeleteProvider(Message, frozen=True, kw_only=True):
    """Remove a provider that holds no allocations (its compute service is deleted)."""

    uuid: str


class GetAllocations(Message, frozen=True, kw_only=True):
    REDELIVERABLE = True
    consumer_uuid: str


class Allocations(Message, frozen=True, kw_only=True):
    # provider uuid -> resource class -> amount
    allocations: dict[str, dict[str, int]]


class ConsumerClaim(Message, frozen=True, kw_only=True):
    """One consumer's wanted allocations: provider uuid -> class -> amount; empty removes them."""

    consumer_uuid: str
    allocations: dict[str, dict[str, int]]
    project_id: str
    user_id: str
    consumer_type: str | None = None   # INSTANCE, MIGRATION (placement 1.38)
    holder: Holder | None = None


class ClaimMany(Message, frozen=True, kw_only=True):
    """Several consumers' allocations replaced at once, or none (a resize moves an instance's
    allocation to its migration this way). Answered with a ClaimResult."""

    claims: list[ConsumerClaim]
