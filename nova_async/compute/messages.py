"""Work sent to one compute host (topic `compute.<host>`)."""

from __future__ import annotations

from nova_async.bus.messages import Message
from nova_async.scheduler.messages import Destination


class BuildAndRunInstance(Message, frozen=True, kw_only=True):
    """Build the instance (row holds flavor, image, requested networks) on this host's node.
    Its placement allocation is already claimed against `node`'s provider."""

    instance_uuid: str
    node: str
    alternates: list[Destination] = []


class TerminateInstance(Message, frozen=True, kw_only=True):
    """Destroy the guest and free everything it held. Idempotent."""

    instance_uuid: str
