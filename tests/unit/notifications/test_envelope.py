"""The envelope and the wire: what oslo.messaging's rabbit driver sends for a notification,
and that we read our own (and Nova's) back."""

from __future__ import annotations

import datetime as dt
import json

from nova_async.bus import Notification
from nova_async.bus.amqp import from_oslo_body, oslo_body
from nova_async.notifications.emitter import priority_of, timestamp


def test_oslo_body_is_the_2_0_envelope_around_the_message_as_a_json_string():
    note = Notification(event_type="instance.create.end", payload={"nova_object.data": {"uuid": "u"}},
                        priority="INFO", publisher_id="nova-compute:edge-1", message_id="m-1",
                        timestamp="2026-11-27 09:41:07.123456")
    outer = json.loads(oslo_body(note))
    assert set(outer) == {"oslo.version", "oslo.message"} and outer["oslo.version"] == "2.0"
    inner = json.loads(outer["oslo.message"])
    assert {k: v for k, v in inner.items() if k != "_unique_id"} == note.envelope()
    assert len(inner["_unique_id"]) == 32
    assert from_oslo_body(oslo_body(note)) == note


def test_a_bare_message_as_old_notifiers_sent_it_is_read_too():
    body = json.dumps({"event_type": "x.y", "payload": {}, "priority": "ERROR", "publisher_id": "p",
                       "message_id": "m", "timestamp": "t"}).encode()
    assert from_oslo_body(body) == Notification(event_type="x.y", payload={}, priority="ERROR", publisher_id="p",
                                                message_id="m", timestamp="t")


def test_priority_and_timestamp_as_oslo_sets_them():
    assert priority_of("instance.create.error") == "ERROR" and priority_of("instance.create.end") == "INFO"
    when = dt.datetime(2026, 11, 27, 9, 41, 7, 123456, tzinfo=dt.UTC)
    assert timestamp(when) == "2026-11-27 09:41:07.123456"
