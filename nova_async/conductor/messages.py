"""Work the API hands to the super conductor."""

from __future__ import annotations

from nova_async.bus.messages import Message


class ScheduleAndBuildInstances(Message, frozen=True, kw_only=True):
    """Schedule the instances (rows already written by the API, BUILD/scheduling) and build them."""

    instance_uuids: list[str]
