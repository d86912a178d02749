"""Message base classes and the registry that decodes any registered message from JSON.

Each message is a frozen msgspec Struct tagged with its class name; `VERSION` is
"major.minor". A receiver accepts any minor version of the major it knows (new optional
fields have defaults) and refuses another major with a clear error."""

from __future__ import annotations

from typing import Any, ClassVar, Union

import msgspec

from nova_async.common.context import RequestContext

_REGISTRY: dict[str, type["Message"]] = {}
_decoder: msgspec.json.Decoder | None = None


class Message(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    VERSION: ClassVar[str] = "1.0"

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        global _decoder
        _REGISTRY[cls.__name__] = cls
        _decoder = None


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


def encode(msg: Message, context: RequestContext | None) -> bytes:
    return _encoder.encode(Envelope(version=msg.VERSION, context=context,
                                    body=msgspec.Raw(_encoder.encode(msg))))


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


def major(version: str) -> str:
    return version.partition(".")[0]
