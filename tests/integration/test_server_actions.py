"""Server power actions as a user drives them: `POST /servers/{id}/action` with reboot,
os-stop, os-start, pause, unpause, suspend and resume, through every role of the cloud
(two simulated libvirt test-driver hosts), polled the way the clients poll; and a compute
restart that finds actions half done."""

from __future__ import annotations

import asyncio
import uuid as uuidlib

import libvirt
import pytest

from nova_async import service
from nova_async.compute.domain_xml import domain_name
from tests.harness import running
from tests.waiting import waiting_for_locks
from tests.integration import test_server_lifecycle
from tests.integration.compute import fakes
from tests.integration.compute.support import add_instance, events
from tests.integration.test_server_lifecycle import MV, V, boot_body, ok, settled, wait_status

cloud = test_server_lifecycle.cloud  # the same whole cloud, two simulated hosts

REBOOT_SOFT = {"reboot": {"type": "SOFT"}}
REBOOT_HARD = {"reboot": {"type": "HARD"}}
STOP, START = {"os-stop": None}, {"os-start": None}
PAUSE, UNPAUSE = {"pause": None}, {"unpause": None}
SUSPEND, RESUME = {"suspend": None}, {"resume": None}

# How to get an ACTIVE server into each state.
INTO = {"ACTIVE": [], "SHUTOFF": [STOP], "PAUSED": [PAUSE], "SUSPENDED": [SUSPEND]}
# status → (vm_state, power_state)
SETTLED = {"ACTIVE": ("active", 1), "SHUTOFF": ("stopped", 4), "PAUSED": ("paused", 3),
           "SUSPENDED": ("suspended", 7)}


async def boot(h) -> tuple[str, str]:
    """An ACTIVE server of alice's, and the host it is on."""
    created = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h)), 202)
    server_id = created["server"]["id"]
    server = await wait_status(h, server_id, "ACTIVE", "ERROR")
    assert server["status"] == "ACTIVE", server.get("fault")
    admin_view = await ok(await h.http.get(f"{V}/servers/{server_id}", headers={**h.admin, **MV}), 200)
    return server_id, admin_view["server"]["OS-EXT-SRV-ATTR:host"]


def act(h, server_id: str, body, headers=None):
    return h.http.post(f"{V}/servers/{server_id}/action", headers=headers or h.alice, json=body)


async def drive(h, server_id: str, body, status: str) -> dict:
    resp = await act(h, server_id, body)
    assert resp.status == 202, await resp.text()
    assert await resp.read() == b""
    server = await settled(h, server_id)
    assert server["status"] == status, (body, server.get("fault"))
    assert (server["OS-EXT-STS:vm_state"], server["OS-EXT-STS:power_state"]) == SETTLED[status]
    return server


async def guest(h, host: str, server_id: str) -> tuple[int, bool] | None:
    """libvirt's own view: (domain state, has a managed-save image), None without a domain."""
    state = await h.roles["compute"].hosts[host].hypervisor.guest_state(domain_name(server_id))
    return None if state is None else (state.state, state.saved)


RUNNING = (libvirt.VIR_DOMAIN_RUNNING, False)
OFF = (libvirt.VIR_DOMAIN_SHUTOFF, False)
GUEST = {"ACTIVE": RUNNING, "SHUTOFF": OFF, "PAUSED": (libvirt.VIR_DOMAIN_PAUSED, False),
         "SUSPENDED": (libvirt.VIR_DOMAIN_SHUTOFF, True)}

# One server taken through every action: (body, status after it, instance action, event).
TOUR = [
    (REBOOT_SOFT, "ACTIVE", "reboot", "compute_reboot_instance"),
    (REBOOT_HARD, "ACTIVE", "reboot", "compute_reboot_instance"),
    (STOP, "SHUTOFF", "stop", "compute_stop_instance"),
    (START, "ACTIVE", "start", "compute_start_instance"),
    (PAUSE, "PAUSED", "pause", "compute_pause_instance"),
    (UNPAUSE, "ACTIVE", "unpause", "compute_unpause_instance"),
    (SUSPEND, "SUSPENDED", "suspend", "compute_suspend_instance"),
    (RESUME, "ACTIVE", "resume", "compute_resume_instance"),
]


async def test_every_action_reaches_its_state_and_is_logged(cloud):
    h = cloud
    server_id, host = await boot(h)
    for body, status, _, _ in TOUR:
        await drive(h, server_id, body, status)
        assert await guest(h, host, server_id) == GUEST[status], body

    listed = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions", headers=h.alice), 200)
    logged = list(reversed(listed["instanceActions"]))  # newest first on the wire
    assert [a["action"] for a in logged] == ["create"] + [name for _, _, name, _ in TOUR]
    for action, (_, _, _, event) in zip(logged[1:], TOUR):
        url = f"{V}/servers/{server_id}/os-instance-actions/{action['request_id']}"
        detail = await ok(await h.http.get(url, headers={**h.alice, **MV}), 200)
        assert [(e["event"], e["result"]) for e in detail["instanceAction"]["events"]] == [(event, "Success")]
        assert action["message"] is None


@pytest.mark.parametrize("start", ["SHUTOFF", "PAUSED", "SUSPENDED"])
async def test_hard_reboot_brings_back_a_server_from(cloud, start):
    h = cloud
    server_id, host = await boot(h)
    for body in INTO[start]:
        await drive(h, server_id, body, start)
    await drive(h, server_id, REBOOT_HARD, "ACTIVE")
    assert await guest(h, host, server_id) == RUNNING  # a saved memory image is not resumed later


# What each state refuses (409); INTO gets there.
REFUSED = {
    "ACTIVE": [START, UNPAUSE, RESUME],
    "SHUTOFF": [STOP, REBOOT_SOFT, PAUSE, UNPAUSE, SUSPEND, RESUME],
    "PAUSED": [REBOOT_SOFT, STOP, START, PAUSE, SUSPEND, RESUME],
    "SUSPENDED": [REBOOT_SOFT, STOP, START, PAUSE, UNPAUSE, SUSPEND],
}


@pytest.mark.parametrize("state", sorted(REFUSED))
async def test_actions_the_state_does_not_allow_are_409(cloud, state):
    h = cloud
    server_id, _ = await boot(h)
    for body in INTO[state]:
        await drive(h, server_id, body, state)
    before = await h.cell1.fetchval("SELECT count(*) FROM instance_actions")
    for body in REFUSED[state]:
        resp = await act(h, server_id, body)
        assert resp.status == 409, (body, await resp.text())
        message = (await resp.json())["conflictingRequest"]["message"]
        assert f"instance {server_id} while it is in vm_state {SETTLED[state][0]}" in message
    assert (await settled(h, server_id))["status"] == state
    assert await h.cell1.fetchval("SELECT count(*) FROM instance_actions") == before


@pytest.mark.parametrize("task_state", ["deleting", "reboot_started", "powering-off", "spawning"])
async def test_nothing_starts_while_a_task_is_under_way(cloud, task_state):
    h = cloud
    server_id, _ = await boot(h)
    # The compute side finishes faster than a test can interleave; hold the task in the row.
    await h.cell1.execute("UPDATE instances SET task_state = $2 WHERE uuid = $1", server_id, task_state)
    for body in (REBOOT_SOFT, REBOOT_HARD, STOP, START, PAUSE, UNPAUSE, SUSPEND, RESUME):
        resp = await act(h, server_id, body)
        assert resp.status == 409, (body, await resp.text())
        assert f"task_state {task_state}" in (await resp.json())["conflictingRequest"]["message"]


async def test_a_locked_server_refuses_its_owner_but_not_an_admin(cloud):
    h = cloud
    server_id, _ = await boot(h)
    await h.cell1.execute("UPDATE instances SET locked = true WHERE uuid = $1", server_id)
    resp = await act(h, server_id, STOP)
    assert resp.status == 409 and "locked" in (await resp.json())["conflictingRequest"]["message"]
    assert (await act(h, server_id, STOP, headers=h.admin)).status == 202
    assert (await settled(h, server_id))["status"] == "SHUTOFF"


async def test_two_concurrent_actions_one_wins(cloud):
    h = cloud
    server_id, _ = await boot(h)
    # Hold the row so all three requests reach their compare-and-swap together; otherwise a
    # quick winner could finish before a slow loser even starts, and both would rightly win.
    async with h.cell1.acquire() as conn, conn.transaction():
        await conn.execute("SELECT 1 FROM instances WHERE uuid = $1 FOR UPDATE", server_id)
        pending = [asyncio.create_task(act(h, server_id, body), name="test:act")
                   for body in (STOP, PAUSE, REBOOT_HARD)]
        await waiting_for_locks(h.cell1, 3, what="three actions waiting on the row lock", timeout=60)
    replies = await asyncio.gather(*pending)
    assert sorted(r.status for r in replies) == [202, 409, 409]
    winner = next(body for body, r in zip((STOP, PAUSE, REBOOT_HARD), replies) if r.status == 202)
    status = {"os-stop": "SHUTOFF", "pause": "PAUSED", "reboot": "ACTIVE"}[next(iter(winner))]
    assert (await settled(h, server_id))["status"] == status
    actions = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions", headers=h.alice), 200)
    assert len(actions["instanceActions"]) == 2  # create and the one that won


# (os-stop, pause, resume… take any value, as Nova, which never reads it: not bad bodies;
# nor is lock's before 2.73.)
BAD_BODIES = [
    {}, [], "reboot", {"reboot": {}}, {"reboot": None}, {"reboot": {"type": "WARM"}},
    {"reboot": {"type": "SOFT", "extra": 1}}, {"reboot": {"type": 1}}, {"resize": {}}, {"createImage": {}},
    {"no-such-action": None}, {"os-stop": None, "os-start": None},
]


async def test_bad_bodies_are_400_and_change_nothing(cloud):
    h = cloud
    server_id, _ = await boot(h)
    for body in BAD_BODIES:
        resp = await act(h, server_id, body)
        assert resp.status == 400, (body, await resp.text())
        assert (await resp.json())["badRequest"]["message"]
    for raw in (b"{nope", b""):
        resp = await h.http.post(f"{V}/servers/{server_id}/action", headers=h.alice, data=raw)
        assert resp.status == 400, raw
    assert "no such action" in (await (await act(h, server_id, {"os-migrateLive!": None})).json()
                                )["badRequest"]["message"]
    server = await settled(h, server_id)
    assert server["status"] == "ACTIVE"
    assert await h.cell1.fetchval("SELECT count(*) FROM instance_actions") == 1


async def test_someone_elses_or_no_server_is_404(cloud):
    h = cloud
    server_id, _ = await boot(h)
    assert (await act(h, server_id, STOP, headers=h.bob)).status == 404
    assert (await act(h, str(uuidlib.uuid4()), STOP)).status == 404
    assert (await act(h, "not-a-uuid", STOP)).status == 404
    assert (await settled(h, server_id))["status"] == "ACTIVE"


@pytest.mark.parametrize("state", ["SHUTOFF", "PAUSED", "SUSPENDED"])
async def test_delete_from(cloud, state):
    h = cloud
    server_id, host = await boot(h)
    for body in INTO[state]:
        await drive(h, server_id, body, state)
    assert await guest(h, host, server_id) == GUEST[state]
    assert (await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)).status == 204
    await wait_status(h, server_id, "GONE")
    assert await guest(h, host, server_id) is None
    assert not (h.deps.state_dir / "instances" / server_id).exists()


async def test_a_guest_gone_behind_our_back_ends_in_error_with_a_fault(cloud):
    h = cloud
    server_id, host = await boot(h)
    await h.roles["compute"].hosts[host].hypervisor.remove(domain_name(server_id))
    resp = await act(h, server_id, STOP)
    assert resp.status == 202
    server = await settled(h, server_id)
    assert (server["status"], server["OS-EXT-STS:power_state"]) == ("ERROR", 0)
    assert "does not exist" in server["fault"]["message"]
    [stop, _create] = (await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions",
                                                 headers=h.alice), 200))["instanceActions"]
    assert stop["message"] == "Error"
    detail = await ok(await h.http.get(f"{V}/servers/{server_id}/os-instance-actions/{stop['request_id']}",
                                       headers={**h.alice, **MV}), 200)
    [event] = detail["instanceAction"]["events"]
    assert (event["event"], event["result"]) == ("compute_stop_instance", "Error")
    assert (await h.http.delete(f"{V}/servers/{server_id}", headers=h.alice)).status == 204
    await wait_status(h, server_id, "GONE")


# --- compute start-up recovery --------------------------------------------------------------

HOST = "power-recovery-host"


@pytest.fixture
def fake_roles(monkeypatch):
    for name, cls in (("image", "FakeImage"), ("network", "FakeNetwork"), ("placement", "FakePlacement")):
        monkeypatch.setitem(service.ROLE_CLASSES, name, f"{fakes.__name__}:{cls}")


def leave_guest(conn: libvirt.virConnect, instance_uuid: str, how: str) -> None:
    dom = conn.defineXML(f"<domain type='test'><name>{domain_name(instance_uuid)}</name>"
                         f"<uuid>{instance_uuid}</uuid><memory>65536</memory>"
                         "<os><type>hvm</type></os></domain>")
    if how != "off":
        dom.create()
    if how == "saved":
        dom.managedSave(0)


# task_state a crash left, the guest as it was left, → (vm_state, power_state, event, result)
INTERRUPTED = [
    ("powering-off", "running", ("stopped", 4, "compute_stop_instance", "Success")),
    ("powering-off", "off", ("stopped", 4, "compute_stop_instance", "Success")),
    ("pausing", "running", ("paused", 3, "compute_pause_instance", "Success")),
    ("suspending", "saved", ("suspended", 7, "compute_suspend_instance", "Success")),
    ("resuming", "saved", ("active", 1, "compute_resume_instance", "Success")),
    ("reboot_started_hard", "off", ("active", 1, "compute_reboot_instance", "Success")),
    ("powering-on", None, ("error", 0, "compute_start_instance", "Error")),
]


@pytest.mark.usefixtures("fake_roles")
async def test_restart_finishes_interrupted_power_actions(pool, tmp_path, cell1):
    conn = libvirt.open("test:///default")
    cases = []
    try:
        for task_state, how, want in INTERRUPTED:
            instance_uuid, _ = await add_instance(cell1, host=HOST, vm_state="active", task_state=task_state)
            request_id = f"req-{uuidlib.uuid4()}"
            await cell1.execute("INSERT INTO instance_actions (instance_uuid, request_id, action, project_id,"
                               " user_id) VALUES ($1, $2, 'power', 'proj', 'user')",
                               instance_uuid, request_id)
            if how:
                leave_guest(conn, instance_uuid, how)
            cases.append((instance_uuid, request_id, want))

        async with running(pool, ["image", "network", "placement", "compute"], tmp_path,
                           compute={"host": HOST}):
            for instance_uuid, request_id, (vm_state, power_state, event, result) in cases:
                row = await cell1.fetchrow("SELECT * FROM instances WHERE uuid = $1", instance_uuid)
                assert (row["vm_state"], row["task_state"], row["power_state"]) == (
                    vm_state, None, power_state)
                assert (await events(cell1, instance_uuid, request_id)) == {event: result}
                finished = await cell1.fetchval(
                    "SELECT finish_time FROM instance_actions WHERE request_id = $1", request_id)
                assert finished is not None
    finally:
        for instance_uuid, _, _ in cases:
            try:
                dom = conn.lookupByName(domain_name(instance_uuid))
            except libvirt.libvirtError:
                continue
            if dom.isActive():
                dom.destroy()
            dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE)
        conn.close()
