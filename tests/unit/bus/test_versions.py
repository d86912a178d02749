"""Message versions across releases: a message converted down for an older receiver (the
fields it does not know removed, or a clear refusal when one of them matters), every
message's declaration of when its fields appeared, and the caps a sender reads."""

import pytest

from nova_async.bus import caps, messages
from nova_async.bus.base import dispatch, unwrap
from nova_async.bus.messages import Message, VersionMismatch
from nova_async.common import errors
from nova_async.compute import messages as compute


class Resize(Message, frozen=True, kw_only=True):
    VERSION = "1.2"
    ADDED_IN = {"keep_disk": "1.1", "reason": "1.2"}

    uuid: str
    keep_disk: bool = False
    reason: str = ""


def test_a_message_goes_down_to_the_receivers_minor_without_what_it_does_not_know():
    msg = Resize(uuid="u", keep_disk=True)
    assert b'"reason"' not in messages.make_compatible(msg, "1.1")
    body = messages.decode(messages.encode(msg, None, "1.1"))
    assert body[0] == msg and body[2] == "1.1"
    plain = messages.decode(messages.encode(Resize(uuid="u"), None, "1.0"))
    assert plain[2] == "1.0"
    assert b"keep_disk" not in messages.encode(Resize(uuid="u"), None, "1.0")
    # a cap at or above the sender's own version: the message as it is
    assert messages.decode(messages.encode(msg, None, "1.5"))[2] == "1.2"


def test_a_message_the_receiver_cannot_be_told_is_refused_before_it_is_sent():
    with pytest.raises(VersionMismatch, match=r"Resize.keep_disk needs version 1.1; the receiver speaks 1.0"):
        messages.encode(Resize(uuid="u", keep_disk=True), None, "1.0")
    with pytest.raises(VersionMismatch, match="another major"):
        messages.encode(Resize(uuid="u"), None, "0.3")


async def test_what_a_newer_sender_converts_down_an_older_receiver_reads():
    """The rebuild option of RebuildInstance 1.1, as a 1.0 host is sent it and reads it."""
    async def handler(msg, ctx):
        assert msg == compute.RebuildInstance(instance_uuid="u")

    unwrap(await dispatch(messages.encode(compute.RebuildInstance(instance_uuid="u"), None, "1.0"), handler, "t"))
    with pytest.raises(errors.Conflict, match="preserve_ephemeral needs version 1.1"):
        messages.encode(compute.RebuildInstance(instance_uuid="u", preserve_ephemeral=True), None, "1.0")


def test_every_message_declares_its_fields_versions_soundly():
    for cls in messages.registered():
        messages.added_fields(cls)   # raises TypeError for a declaration that cannot work
        assert messages.parse(cls.oldest()) <= messages.parse(cls.VERSION)


def test_a_bad_declaration_is_caught():
    class Bad(Message, frozen=True, kw_only=True):
        VERSION = "1.1"
        ADDED_IN = {"uuid": "1.1"}
        uuid: str

    with pytest.raises(TypeError, match="not a field with a default"):
        messages.added_fields(Bad)


class _Records:
    """The services table as VersionCaps reads it."""

    def __init__(self, rows):
        self.rows, self.reads = rows, 0

    async def fetch(self, sql):
        self.reads += 1
        return self.rows


async def test_caps_come_from_the_records_and_an_unknown_one_is_the_oldest_version():
    records = _Records([{"host": "old", "release": "0.0.9", "message_caps": {"RebuildInstance": "1.0"}},
                        {"host": "new", "release": "0.1.0", "message_caps": caps.receivable([compute.RebuildInstance])},
                        {"host": "blank", "release": None, "message_caps": {}}])
    known = caps.VersionCaps(records)
    assert await known.cap("old", compute.RebuildInstance) == "1.0"
    assert await known.cap("new", compute.RebuildInstance) == "1.1"
    assert await known.cap("blank", compute.RebuildInstance) == "1.0"
    assert await known.cap("never-registered", compute.RebuildInstance) == "1.0"
    assert records.reads == 1   # one read serves every host until it is stale
    known.forget()
    await known.cap("new", compute.RebuildInstance)
    assert records.reads == 2
    assert await caps.NO_CAPS.cap("anything", compute.RebuildInstance) == "1.1"


async def test_a_database_that_does_not_answer_does_not_stop_a_send():
    class Gone:
        async def fetch(self, sql):
            raise errors.DatabaseUnavailable("the database is away")

    assert await caps.VersionCaps(Gone()).cap("edge-1", compute.RebuildInstance) == "1.0"
