"""The bus roles talk over: `call` (request/response with a timeout), `cast` (one-way) and
`publish` (notifications). Messages are typed msgspec Structs that travel as JSON, so the
in-memory transport and a broker transport are interchangeable."""

from nova_async.bus.base import Bus, Handler
from nova_async.bus.messages import Message, Notification

__all__ = ["Bus", "Handler", "Message", "Notification"]
