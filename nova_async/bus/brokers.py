"""The RabbitMQ nodes a `--transport` names, one URL each, and how they are shown in logs.

A site with one broker gives one URL. A site with a RabbitMQ cluster lists its nodes, and the
bus connects to the first that answers and moves to the next when it loses the one it has
(bus/amqp.py). Two spellings are taken, and may be mixed:

- oslo.messaging's, as Nova's `transport_url` has it: one scheme and virtual host, the nodes
  separated by commas, `rabbit://nova:secret@mq1:5672,nova:secret@mq2:5672/`;
- whole URLs separated by commas, `amqp://nova:secret@mq1:5672/,amqp://nova:secret@mq2:5672/`.

`rabbit://` is `amqp://` (as oslo.messaging reads it). A node given without credentials uses
those of the first node of its URL that has them, so `rabbit://nova:secret@mq1,mq2,mq3/`
works; oslo.messaging would send none for it, which no broker set up for Nova accepts.
Characters such as `@`, `,` and `/` in a password are percent-encoded, as in any URL.

Kept free of aio-pika: the configuration checks a transport without importing it.
"""

from __future__ import annotations

import re

from yarl import URL

SCHEMES = {"amqp": "amqp", "amqps": "amqps", "rabbit": "amqp"}
_NEXT_URL = re.compile(r",(?=[A-Za-z][A-Za-z0-9+.-]*://)")


def broker_urls(transport: str) -> list[str]:
    """One `amqp://` (or `amqps://`) URL per node, in the order given. ValueError says what
    is wrong with `transport`, without its passwords."""
    urls: list[str] = []
    for part in _NEXT_URL.split(transport.strip()):
        scheme, sep, rest = part.partition("://")
        if not sep or scheme.lower() not in SCHEMES:
            raise ValueError(f"{_scheme_shown(part)} is not a RabbitMQ URL (amqp://, amqps:// or rabbit://)")
        netloc, _, tail = rest.partition("/")   # tail: the virtual host and any query
        nodes = [node for node in netloc.split(",") if node]
        if not nodes:
            raise ValueError(f"a {scheme}:// URL names no host")
        credentials = next((node.rpartition("@")[0] for node in nodes if "@" in node), "")
        for node in nodes:
            if "@" not in node and credentials:
                node = f"{credentials}@{node}"
            url = f"{SCHEMES[scheme.lower()]}://{node}/{tail}"
            try:
                parsed = URL(url)
                parsed.port   # noqa: B018 — a port that is not a number raises here
            except ValueError as exc:
                raise ValueError(f"bad RabbitMQ URL {redacted(url)}: {exc}") from None
            if not parsed.host:
                raise ValueError(f"RabbitMQ URL {redacted(url)} names no host")
            urls.append(url)
    return urls


def redacted(url: str) -> str:
    """The URL without its password, for logs and errors."""
    try:
        parsed = URL(url)
        return str(parsed.with_password("***")) if parsed.password else url
    except ValueError:   # not even a URL: show none of it past the scheme
        return _scheme_shown(url)


def shown(urls: list[str]) -> str:
    """Every node's URL without its password, for one log line."""
    return ", ".join(redacted(url) for url in urls)


def _scheme_shown(text: str) -> str:
    scheme, sep, _ = text.partition("://")
    return f"{scheme}://…" if sep else "the transport"
