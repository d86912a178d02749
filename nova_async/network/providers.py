"""Provider networks: what a network is on the host's wires.

Two types exist here. `local` (the default) is a bridge on this host with no physical port;
`flat` is a bridge with one of the host's NICs plugged in, named by a physical network
(settings `[network] physical_networks`, PHYSNET:NIC pairs, plus `external` when
`external_interface` names the external network's NIC). Neutron's tunnel and VLAN types
are refused rather than quietly made local. Only an admin chooses (Neutron's policy
`create_network:provider:*`), and only an admin is shown the attributes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nova_async.common import errors
from nova_async.common.context import RequestContext
from nova_async.config import NetworkSettings

TYPES = ("local", "flat")
ATTRIBUTES = ("provider:network_type", "provider:physical_network", "provider:segmentation_id")
# The physical network of the external network when it is flat (external_interface set).
EXTERNAL_PHYSNET = "external"


@dataclass(frozen=True)
class Provider:
    network_type: str = "local"
    physical_network: str | None = None


def physical_networks(settings: NetworkSettings) -> frozenset[str]:
    """The physical networks a flat network may name on this deployment."""
    names = {pair.partition(":")[0].strip() for pair in settings.physical_networks if pair.strip()}
    if settings.external_interface:
        names.add(EXTERNAL_PHYSNET)
    return frozenset(n for n in names if n)


def from_body(ctx: RequestContext, body: dict[str, Any], known: frozenset[str]) -> Provider:
    """The provider of a network being created, checked as Neutron's ML2 type drivers do."""
    given = [a for a in ATTRIBUTES if a in body]
    if given and not ctx.is_admin:
        raise errors.Forbidden(f"(rule:create_network:{given[0]} is disallowed by policy)")
    network_type = body.get("provider:network_type") or "local"
    physnet = body.get("provider:physical_network")
    if network_type not in TYPES:
        raise errors.InvalidInput(f"Invalid input for operation: network_type value '{network_type}' is not "
                                  f"supported here (only {' and '.join(TYPES)}).")
    if body.get("provider:segmentation_id") is not None:
        raise errors.InvalidInput(f"Invalid input for operation: segmentation_id specified for {network_type} "
                                  "network.")
    if network_type == "local":
        if physnet:
            raise errors.InvalidInput("Invalid input for operation: physical_network specified for local network.")
        return Provider()
    if not physnet:
        raise errors.InvalidInput("Invalid input for operation: physical_network required for flat provider "
                                  "network.")
    if physnet not in known:
        raise errors.InvalidInput(f"Invalid input for operation: physical_network '{physnet}' unknown for flat "
                                  "provider network (settings [network] physical_networks name "
                                  f"{', '.join(sorted(known)) or 'none'}).")
    return Provider("flat", physnet)


def flat_in_use(physnet: str) -> errors.Conflict:
    return errors.Conflict(f"Unable to create the flat network. Physical network {physnet} is in use.",
                           code="flat_network_in_use")
