"""Work the API hands to the super conductor."""

from __future__ import annotations

from nova_async.bus.messages import Message
from nova_async.scheduler.messages import Destination


class ScheduleAndBuildInstances(Message, frozen=True, kw_only=True):
    """Schedule the instances (rows already written by the API, BUILD/scheduling) and build them."""

    instance_uuids: list[str]
    cell_uuid: str | None = None  # the cell the API wrote them into (None: look them up)


class RescheduleInstance(Message, frozen=True, kw_only=True):
    """A build failed on `failed_host` (which has already cleaned up, and handed the instance
    back with no host): move its claim to the first alternate that takes it and build there."""

    instance_uuid: str
    failed_host: str
    reason: str
    alternates: list[Destination]


class ResizeInstance(Message, frozen=True, kw_only=True):
    """Find a host for the instance's new flavor (migration `migration_uuid` holds old and new;
    the API set task_state 'resize_prep') and hand the resize to its current host."""

    instance_uuid: str
    migration_uuid: str


class UnshelveRequest(Message, frozen=True, kw_only=True):
    """Unshelve the instance (the API set task_state 'unshelving'): a shelved one on its own
    host, an offloaded one wherever the scheduler finds room for it again. (Not UnshelveInstance:
    that is compute's message, and message names are one registry.)"""

    instance_uuid: str
