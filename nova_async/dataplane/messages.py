"""What other roles may ask a host's data plane over the bus."""

from __future__ import annotations

from nova_async.bus.messages import Message


class PortsReady(Message, frozen=True, kw_only=True):
    """Answer once the host serves these ports as the database has them now: after a clean
    reconciler pass that started after the question (DHCP host entries, and every other
    part's rules, in place before the guest's first packet)."""

    port_ids: list[str]
