"""Message base classes and the registry that decodes any registered message from JSON.

Each message is a frozen msgspec Struct tagged with its class name; `VERSION` is
"major.minor", carried in the envelope. A minor version adds optional fields (each with a
default), and says in which minor each appeared in `ADDED_IN`:

    class RebuildInstance(Message, frozen=True, kw_only=True):
        VERSION = "1.1"
        ADDED_IN = {"preserve_ephemeral": "1.1"}
        instance_uuid: str
        preserve_ephemeral: bool = False

A receiver accepts its own minor and older ones (the fields they lack take their defaults)
and refuses a newer minor or another major (bus/base.py `dispatch`, code `version_mismatch`):
msgspec ignores fields it does not know, so an older receiver handed a newer message would
otherwise act on part of it without a word. A sender that knows its receiver speaks an
older minor converts the message down first (`encode(..., version=)` through
`make_compatible`, Nova's obj_make_compatible): the fields that minor does not know are
removed when they hold their default, and a message that needs one of them to say what it
says cannot go at all (`VersionMismatch`). Nested structs are not versioned on their own: a
change to one is a new field of the message that carries it."""

from __future__ import annotations

from typing import Any, ClassVar, Union

import msgspec

from nova_async.common import errors
from nova_async.common.context import RequestContext

_REGISTRY: dict[str, type["Message"]] = {}
_decoder: msgspec.json.Decoder | None = None


VERSION_MISMATCH = "version_mismatch"   # the error code of every refusal over versions


class VersionMismatch(errors.Conflict):
    """A message that cannot be sent at, or handled in, the version at hand."""

    code = VERSION_MISMATCH


def parse(version: str) -> tuple[int, int]:
    """"1.2" -> (1, 2); what is not "major.minor" -> ValueError."""
    major_text, _, minor_text = version.partition(".")
    return int(major_text), int(minor_text or 0)


class Message(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    VERSION: ClassVar[str] = "1.0"
    # field name -> the minor version ("1.1") that added it; fields not named were in x.0.
    ADDED_IN: ClassVar[dict[str, str]] = {}
    # A call that may be handled twice (its handler is idempotent): the receiver acknowledges
    # it once answered, not on arrival, so a receiver that dies with it (a node lost) leaves it
    # to another copy, which answers instead of the caller waiting out its timeout; and its
    # caller asks again when its answer may have been lost with its reply queue (bus/amqp.py).
    REDELIVERABLE: ClassVar[bool] = False

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        global _decoder
        _REGISTRY[cls.__name__] = cls
        _decoder = None

    @classmethod
    def oldest(cls) -> str:
        """The oldest version this release can still send this message at: its major's x.0."""
        return f"{parse(cls.VERSION)[0]}.0"


class Notification(Message, frozen=True, kw_only=True):
    """Something that happened, for whoever listens (instance.create.start, …): Nova's
    versioned notification envelope, its payload a `nova_object.*` dict
    (nova_async/notifications fills them)."""

    event_type: str
    payload: dict[str, Any] = {}
    priority: str = "INFO"      # INFO, or ERROR for an .error event
    publisher_id: str = ""      # "nova-compute:<host>", …
    message_id: str = ""        # a uuid4
    timestamp: str = ""         # oslo.messaging's format: "2026-11-27 09:41:07.123456" (UTC)

    @property
    def data(self) -> dict[str, Any]:
        """The payload's fields (its `nova_object.data`)."""
        data = self.payload.get("nova_object.data")
        return data if isinstance(data, dict) else self.payload

    def envelope(self) -> dict[str, Any]:
        """The notification as oslo.messaging's notifier sends it (and a JSON-lines file keeps it)."""
        return {"message_id": self.message_id, "publisher_id": self.publisher_id,
                "event_type": self.event_type, "priority": self.priority, "payload": self.payload,
                "timestamp": self.timestamp}


class Reply(Message, frozen=True, kw_only=True):
    """An empty answer to a call that returns nothing."""


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    version: str
    context: RequestContext | None = None
    body: msgspec.Raw


class ErrorReply(msgspec.Struct, frozen=True):
    kind: str
    message: str
    code: str


_NULL = msgspec.Raw(b"null")


class ReplyEnvelope(msgspec.Struct, frozen=True, kw_only=True):
    body: msgspec.Raw = _NULL  # JSON null when the handler answered nothing
    error: ErrorReply | None = None


def _message_decoder() -> msgspec.json.Decoder:
    global _decoder
    if _decoder is None:
        concrete = tuple(_REGISTRY.values())
        _decoder = msgspec.json.Decoder(Union[concrete])  # type: ignore[valid-type]
    return _decoder


_encoder = msgspec.json.Encoder()


_added: dict[type[Message], dict[str, tuple[tuple[int, int], Any]]] = {}


def added_fields(cls: type[Message]) -> dict[str, tuple[tuple[int, int], Any]]:
    """`cls.ADDED_IN` checked and parsed: field -> (the version that added it, its default).
    TypeError for a declaration that could not work (a field without a default, a version
    outside the message's own major or newer than it): tests/unit/bus checks every message."""
    found = _added.get(cls)
    if found is None:
        fields = cls.__struct_fields__
        defaults = dict(zip(fields[len(fields) - len(cls.__struct_defaults__):], cls.__struct_defaults__))
        own = parse(cls.VERSION)
        found = {}
        for name, since in cls.ADDED_IN.items():
            if name not in defaults:
                raise TypeError(f"{cls.__name__}.ADDED_IN names {name!r}, which is not a field with a default")
            if parse(since)[0] != own[0] or parse(since) > own:
                raise TypeError(f"{cls.__name__}.{name} added in {since}, not within {cls.VERSION}")
            found[name] = (parse(since), defaults[name])
        _added[cls] = found
    return found


def registered() -> list[type[Message]]:
    return list(_REGISTRY.values())


def make_compatible(msg: Message, version: str) -> bytes:
    """`msg`'s JSON body as a receiver that speaks `version` reads it: the fields added after
    that version removed. VersionMismatch when one of them does not hold its default (the
    message would mean something else without it) or when `version` is another major."""
    cls = type(msg)
    target = parse(version)
    if target[0] != parse(cls.VERSION)[0]:
        raise VersionMismatch(f"{cls.__name__} {cls.VERSION} cannot be sent as version {version}: "
                              "another major version")
    body = msgspec.to_builtins(msg)
    for name, (since, default) in added_fields(cls).items():
        if since <= target:
            continue
        if getattr(msg, name) != default:
            raise VersionMismatch(f"{cls.__name__}.{name} needs version {since[0]}.{since[1]}; "
                                  f"the receiver speaks {version}")
        body.pop(name, None)
    return _encoder.encode(body)


def encode(msg: Message, context: RequestContext | None, version: str | None = None) -> bytes:
    """The envelope for `msg`, at its own VERSION or, given an older `version` of its major
    (the receiver's cap), converted down to it (make_compatible)."""
    if version is None or version == msg.VERSION or parse(version) >= parse(msg.VERSION):
        return _encoder.encode(Envelope(version=msg.VERSION, context=context,
                                        body=msgspec.Raw(_encoder.encode(msg))))
    return _encoder.encode(Envelope(version=version, context=context,
                                    body=msgspec.Raw(make_compatible(msg, version))))


def decode(data: bytes) -> tuple[Message, RequestContext | None, str]:
    env = msgspec.json.decode(data, type=Envelope)
    return _message_decoder().decode(env.body), env.context, env.version


def encode_reply(msg: Message | None = None, error: ErrorReply | None = None) -> bytes:
    body = msgspec.Raw(_encoder.encode(msg)) if msg is not None else _NULL
    return _encoder.encode(ReplyEnvelope(body=body, error=error))


def decode_reply(data: bytes) -> tuple[Message | None, ErrorReply | None]:
    env = msgspec.json.decode(data, type=ReplyEnvelope)
    if bytes(env.body) == b"null":
        return None, env.error
    return _message_decoder().decode(env.body), env.error
