"""Allocation candidates: which providers could take a request right now.

One SQL statement does the work (sql/queries/placement_candidates.sql `root_candidates`): it
keeps the root providers where every requested amount fits (free capacity, min_unit, max_unit,
step_size), picks the answer's providers among them, and describes only those, with the
summary texts placement keeps per provider (every class's capacity and usage, the traits),
decoded here. Candidates are advice, not reservations: the claim re-checks under lock.

This is the scheduler's in-process question, where a candidate is a single root provider that
satisfies the whole request (its claim names one provider). The HTTP API's search over nested
trees and request groups lives in tree_candidates."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from nova_async.common import errors
from nova_async.common.web import ascii_int
from nova_async.db.pool import Pool
from nova_async.db.queries import queries

Q = queries("placement")
QC = queries("placement_candidates")

_CLASS = re.compile(r"^[A-Z0-9_]{1,255}$")
# provider_summaries' texts (sql/functions/placement_summary_*.sql): `"VCPU":{"capacity":64,"used":3},...` and
# `,"traits":["A","B"]`, the pieces of a candidates answer, kept current by triggers
_SUMMARY = msgspec.json.Decoder(dict[str, dict[str, int]])
_TRAITS = msgspec.json.Decoder(list[str])
_TRAITS_KEY = ',"traits":'
MAX_AMOUNT = 2**31 - 1


@dataclass(frozen=True)
class Candidate:
    uuid: str
    name: str
    generation: int
    capacity: dict[str, int]
    used: dict[str, int]
    traits: tuple[str, ...] = ()


def parse_resources(text: str) -> dict[str, int]:
    """`VCPU:1,MEMORY_MB:512` → {"VCPU": 1, "MEMORY_MB": 512}, or InvalidInput saying why."""
    wanted: dict[str, int] = {}
    for part in text.split(","):
        rc, sep, amount = part.strip().partition(":")
        number = ascii_int(amount.strip())
        if not sep or not _CLASS.match(rc) or number is None:
            raise errors.InvalidInput(
                "Badly formed resources parameter. Expected resources query string parameter in "
                f"form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {text}.", code="placement.query.bad_value")
        if rc in wanted:
            raise errors.InvalidInput(f"Resource class {rc} appears more than once in resources.",
                                      code="placement.query.duplicate_key")
        wanted[rc] = number
    check_resources(wanted)
    return wanted


def check_resources(resources: dict[str, int]) -> None:
    if not resources:
        raise errors.InvalidInput("At least one resource must be requested.",
                                  code="placement.query.bad_value")
    for rc, amount in resources.items():
        if not _CLASS.match(rc):
            raise errors.InvalidInput(f"Invalid resource class name {rc!r}.",
                                      code="placement.query.bad_value")
        if not 1 <= amount <= MAX_AMOUNT:
            raise errors.InvalidInput(f"Requested amount of {rc} must be an integer from 1 to "
                                      f"{MAX_AMOUNT}, got {amount}.", code="placement.query.bad_value")


async def find(pool: Pool, resources: dict[str, int], limit: int | None = None, *,
               required: Iterable[str] = (), forbidden: Iterable[str] = (),
               member_of: Iterable[str] = (), randomize: bool = False) -> list[Candidate]:
    """Root providers that can take `resources` alone (the scheduler claims on one host), that
    have every `required` trait, none of the `forbidden` ones, and, when `member_of` names
    aggregates, are in at least one of them; with `randomize`, a random `limit` of them (so
    concurrent requests spread, as Nova's randomize_allocation_candidates). The HTTP API's
    richer search over trees and request groups is tree_candidates.find."""
    check_resources(resources)
    classes = list(resources)
    rows = await pool.fetch(QC.root_candidates, classes, [resources[rc] for rc in classes], limit,
                            sorted(required), sorted(forbidden), sorted(member_of), randomize)
    candidates = []
    for r in rows:
        inventory = _SUMMARY.decode(b"{%s}" % r["resources"].encode())
        candidates.append(Candidate(
            uuid=str(r["uuid"]), name=r["name"], generation=r["generation"],
            capacity={rc: amounts["capacity"] for rc, amounts in inventory.items()},
            used={rc: amounts["used"] for rc, amounts in inventory.items()},
            traits=tuple(_TRAITS.decode(r["traits"][len(_TRAITS_KEY):]))))
    return candidates


async def providers_with_room(pool: Pool, resources: dict[str, int]) -> dict[str, int]:
    """Per requested class, how many root providers could take that amount of it alone."""
    classes = list(resources)
    rows = await pool.fetch(Q.providers_with_room, classes, [resources[rc] for rc in classes])
    return {r["resource_class"]: r["providers"] for r in rows}
