#!/usr/bin/env python3
"""Print Nova's versioned notifications as an unmodified oslo.messaging listener receives them.

    python examples/notification_listener.py amqp://guest:guest@127.0.0.1:5672/ [--until EVENT_TYPE] [--timeout S]

Listens on the `nova` exchange, topic `versioned_notifications` (what Nova's own consumers,
Ceilometer and Watcher, listen to), with oslo.messaging's default options, and prints one JSON
object a line: priority, event_type, publisher_id, metadata (message_id, timestamp) and payload.
With --until it exits 0 after the first notification of that event_type (1 when --timeout
passes first). --rabbit-quorum-queue sets oslo.messaging's option of that name, as the
brokers of a site with `[service] rabbit_quorum_queue = true` need. Needs `pip install
oslo.messaging` (it is in nova-async's `test` extras)."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import warnings

warnings.simplefilter("ignore")  # oslo's eventlet deprecation notices are not what this prints

import oslo_messaging  # noqa: E402
from oslo_config import cfg  # noqa: E402


class Printer:
    """A notification endpoint: oslo.messaging calls the method named after the priority."""

    def __init__(self, until: str | None, done: threading.Event) -> None:
        self.until, self.done = until, done
        # The threading executor calls endpoints from a pool of threads: one whole line at a
        # time, or two notifications' text could interleave on stdout.
        self._lock = threading.Lock()

    def _print(self, priority, ctxt, publisher_id, event_type, payload, metadata):
        line = json.dumps({"priority": priority, "event_type": event_type, "publisher_id": publisher_id,
                           "metadata": metadata, "payload": payload})
        with self._lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        if event_type == self.until:
            self.done.set()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self._print("INFO", ctxt, publisher_id, event_type, payload, metadata)

    def error(self, ctxt, publisher_id, event_type, payload, metadata):
        self._print("ERROR", ctxt, publisher_id, event_type, payload, metadata)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport_url", help="oslo.messaging transport URL: rabbit://… or amqp://…")
    parser.add_argument("--until", metavar="EVENT_TYPE", help="exit after the first notification of this type")
    parser.add_argument("--timeout", type=float, default=None, help="seconds to wait for --until (default: forever)")
    parser.add_argument("--rabbit-quorum-queue", action="store_true",
                        help="quorum queues and a durable exchange, as nova-async's rabbit_quorum_queue declares them")
    args = parser.parse_args()
    url = args.transport_url
    if url.startswith("amqp://"):   # nova-async's --transport URL names the same broker
        url = "rabbit://" + url[len("amqp://"):]
    cfg.CONF([], project="notification-listener")
    transport = oslo_messaging.get_notification_transport(cfg.CONF, url=url)
    if args.rabbit_quorum_queue:   # the driver has registered its options by now, and reads them when it connects
        cfg.CONF.set_override("rabbit_quorum_queue", True, group="oslo_messaging_rabbit")
    targets = [oslo_messaging.Target(exchange="nova", topic="versioned_notifications")]
    done = threading.Event()
    listener = oslo_messaging.get_notification_listener(transport, targets, [Printer(args.until, done)],
                                                        executor="threading")
    listener.start()
    print(json.dumps({"listening": "nova/versioned_notifications"}), file=sys.stderr, flush=True)
    try:
        got = done.wait(args.timeout) if args.until else done.wait()
    except KeyboardInterrupt:
        got = True
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
    return 0 if got else 1


if __name__ == "__main__":
    sys.exit(main())
