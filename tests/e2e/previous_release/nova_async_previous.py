"""A test-only build of the release before this one, for tests/e2e/test_rolling_upgrade.py:
this release's code with the message types as they were then. `python -m nova_async_previous
serve …` (this directory on PYTHONPATH) runs it.

What differs: RebuildInstance is at 1.0, without `preserve_ephemeral` (that release made
every disk anew on a rebuild), and the release its service record says is PREVIOUS. Defined
before anything imports the compute role, so its handler table, and so the caps it
publishes, are the old message's; decoding yields the old class too (the registry is keyed
by name). Everything else, the receiver's version check included, is this release's."""

from __future__ import annotations

from nova_async.bus import caps
from nova_async.bus.messages import Message
from nova_async.compute import messages

PREVIOUS = "0.0.9"


class RebuildInstance(Message, frozen=True, kw_only=True):
    """1.0: rebuild the guest from the image the row now names, every disk made anew."""

    instance_uuid: str

    @property
    def preserve_ephemeral(self) -> bool:
        return False   # what the old handler did, in the terms of today's handler


messages.RebuildInstance = RebuildInstance  # type: ignore[misc]
caps.RELEASE = PREVIOUS

if __name__ == "__main__":
    from nova_async.cli import main

    raise SystemExit(main())
