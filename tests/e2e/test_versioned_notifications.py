"""Nova's versioned notifications as their consumers get them: an unmodified oslo.messaging
notification listener (examples/notification_listener.py, a process of its own) on the
`nova` exchange of a real RabbitMQ, and the JSON-lines file (`--notifications-file`).

The listener declares the exchange and queue first, then nova-async declares them again (and
the other way round for the second listener): neither side's declaration is refused, and
what is sent while no listener runs waits in the queue, as Nova's notifications do."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp
import pytest

from nova_async.bus import Notification
from nova_async.bus.amqp import AmqpBus
from tests.e2e.conftest import serve
from tests.e2e.driver import NOAUTH_ADMIN, WAIT, Api
from tests.rabbitmq import available, started

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(available() is not None, reason=str(available()))]

LISTENER = Path(__file__).resolve().parents[2] / "examples" / "notification_listener.py"


@pytest.fixture(scope="module")
async def rabbitmq(work_dir):
    async with started(work_dir / "rabbitmq-notifications") as broker:
        yield broker


async def listen(url: str, until: str, *, started: bool = False) -> asyncio.subprocess.Process:
    """The oslo.messaging listener, printing what it receives until `until` comes; with
    `started`, returned once it is consuming."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(LISTENER), url, "--until", until, "--timeout", str(WAIT),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    if started:
        assert proc.stderr is not None
        async with asyncio.timeout(WAIT):
            while b"listening" not in (line := await proc.stderr.readline()):
                assert line, "the listener ended before it listened"
    return proc


async def received(proc: asyncio.subprocess.Process) -> list[dict]:
    """Every notification the listener printed, once it has ended."""
    async with asyncio.timeout(WAIT):
        out, err = await proc.communicate()
    assert proc.returncode == 0, f"listener exit {proc.returncode}: {err.decode()[-2000:]}"
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


async def test_an_oslo_messaging_listener_receives_a_boots_notifications(rabbitmq, database, work_dir):
    # A listener that starts before anything was sent: it declares the exchange and queue, and
    # receives what a nova-async bus publishes afterwards.
    first = await listen(rabbitmq.url, "test.ping", started=True)
    async with AmqpBus(rabbitmq.url) as bus:
        await bus.publish(Notification(event_type="test.ping", payload={"n": 1}, publisher_id="test:here"))
    [ping] = await received(first)
    assert ping["event_type"] == "test.ping" and ping["payload"] == {"n": 1}
    assert ping["publisher_id"] == "test:here" and ping["priority"] == "INFO"

    # A whole service on that broker (whose exchange and queue the listener declared), with the
    # file sink; a server booted while no listener runs.
    notes_file = work_dir / "notifications.jsonl"
    async with serve(work_dir / "notify-control", "--transport", rabbitmq.url, "--database", database,
                     "--auth", "noauth", "--libvirt-uri", "test:///default", "--host", "notify-1",
                     "--notifications-file", str(notes_file)) as served, aiohttp.ClientSession() as session:
        api = Api(session, served.url, NOAUTH_ADMIN)
        base = await api.boot_base("notify", "10.30.0.0/24")
        server_id = await api.boot(base, "notified")
        server = await api.status(server_id, "ACTIVE")

        # Started after the boot: what was sent meanwhile waited in versioned_notifications.info.
        heard = await received(await listen(rabbitmq.url, "instance.create.end"))

    by_type = {n["event_type"]: n for n in heard if n["payload"]["nova_object.data"].get("uuid") in (None, server_id)
               or n["event_type"].startswith("service.")}
    # Every role's service record is announced (in no fixed order): the compute's among them.
    services = {n["payload"]["nova_object.data"]["binary"]: n["payload"]
                for n in heard if n["event_type"] == "service.create"}
    assert "nova-compute" in services, [n["event_type"] for n in heard]
    service = services["nova-compute"]
    assert service["nova_object.name"] == "ServiceStatusPayload" and service["nova_object.version"] == "1.1"
    assert service["nova_object.data"]["host"] == "notify-1"

    assert "instance.create.start" in by_type and "instance.update" in by_type
    end = by_type["instance.create.end"]
    assert end["priority"] == "INFO" and end["publisher_id"] == "nova-compute:notify-1"
    assert end["metadata"]["message_id"] and end["metadata"]["timestamp"]
    payload = end["payload"]
    assert (payload["nova_object.name"], payload["nova_object.version"], payload["nova_object.namespace"]) \
        == ("InstanceCreatePayload", "1.13", "nova")
    data = payload["nova_object.data"]
    assert data["uuid"] == server_id and data["display_name"] == "notified"
    assert data["state"] == "active" and data["power_state"] == "running" and data["task_state"] is None
    assert data["host"] == "notify-1" and data["tenant_id"] == server["tenant_id"]
    assert data["launched_at"] and data["launched_at"].endswith("Z")
    assert data["image_uuid"] == base["imageRef"] and data["fault"] is None
    flavor = data["flavor"]["nova_object.data"]
    assert data["flavor"]["nova_object.name"] == "FlavorPayload"
    assert (flavor["flavorid"], flavor["memory_mb"], flavor["vcpus"]) == (base["flavorRef"], 64, 1)
    [ip] = data["ip_addresses"]
    [shown] = [a["addr"] for addrs in server["addresses"].values() for a in addrs]
    assert ip["nova_object.name"] == "IpPayload" and ip["nova_object.data"]["address"] == shown
    assert ip["nova_object.data"]["version"] == 4 and ip["nova_object.data"]["mac"]

    update = by_type["instance.update"]["payload"]
    assert update["nova_object.name"] == "InstanceUpdatePayload" and update["nova_object.version"] == "2.1"
    assert update["nova_object.data"]["state_update"]["nova_object.name"] == "InstanceStateUpdatePayload"

    # The file has every envelope the service heard, one a line, the same ones.
    lines = [json.loads(line) for line in notes_file.read_text().splitlines()]
    in_file = {n["message_id"]: n for n in lines}
    assert in_file[end["metadata"]["message_id"]]["event_type"] == "instance.create.end"
    assert in_file[end["metadata"]["message_id"]]["payload"] == payload
