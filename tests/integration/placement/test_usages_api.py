"""`GET /usages`: what a project (or one of its users) holds across every provider — the
figure quota counting reads — summed before 1.38 and grouped by consumer type from 1.38."""

from __future__ import annotations

import uuid

import pytest

from nova_async.placement import messages as m
from nova_async.placement.client import PlacementClient
from tests.harness import running
from tests.integration.placement.test_http import ANY, fault, play

U = "/placement/usages"

USAGES = [
    dict(name="summed at 1.9", url=U + "?project_id=proj-a", version="1.9",
         body={"usages": {"VCPU": 7, "MEMORY_MB": 1536, "DISK_GB": 10}}),
    dict(name="one user", url=U + "?project_id=proj-a&user_id=bob", version="1.9",
         body={"usages": {"VCPU": 4, "MEMORY_MB": 512}}),
    dict(name="a project with nothing", url=U + "?project_id=nobody", version="1.37",
         body={"usages": {}}),
    dict(name="before 1.9 there is no /usages", url=U + "?project_id=proj-a", version="1.8",
         status=404),
    dict(name="project_id is required", url=U, status=400,
         body=fault(400, detail=ANY)),
    dict(name="an unknown parameter", url=U + "?project_id=proj-a&colour=red", status=400),
    dict(name="consumer_type before 1.38", url=U + "?project_id=proj-a&consumer_type=INSTANCE",
         version="1.37", status=400),
    dict(name="grouped by type at 1.38", url=U + "?project_id=proj-a",
         body={"usages": {"INSTANCE": {"consumer_count": 2, "VCPU": 3, "MEMORY_MB": 1536},
                          "MIGRATION": {"consumer_count": 1, "VCPU": 2, "DISK_GB": 10},
                          "unknown": {"consumer_count": 1, "VCPU": 2}}}),
    dict(name="one type", url=U + "?project_id=proj-a&consumer_type=MIGRATION",
         body={"usages": {"MIGRATION": {"consumer_count": 1, "VCPU": 2, "DISK_GB": 10}}}),
    dict(name="all types as one", url=U + "?project_id=proj-a&consumer_type=all",
         body={"usages": {"all": {"consumer_count": 4, "VCPU": 7, "MEMORY_MB": 1536,
                                  "DISK_GB": 10}}}),
    dict(name="the untyped", url=U + "?project_id=proj-a&consumer_type=unknown",
         body={"usages": {"unknown": {"consumer_count": 1, "VCPU": 2}}}),
    dict(name="a type nobody has", url=U + "?project_id=proj-a&consumer_type=BAREMETAL",
         body={"usages": {}}),
    dict(name="user and type", url=U + "?project_id=proj-a&user_id=bob&consumer_type=INSTANCE",
         body={"usages": {"INSTANCE": {"consumer_count": 1, "VCPU": 2, "MEMORY_MB": 512}}}),
    dict(name="a malformed type", url=U + "?project_id=proj-a&consumer_type=in-stance", status=400),
]


@pytest.fixture
async def placement(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        names = {k: str(uuid.uuid4()) for k in ("rp1", "rp2")}
        client = PlacementClient(h.bus)
        await client.ensure_provider(names["rp1"], "host-a", {
            "VCPU": m.InventoryRecord(total=16), "MEMORY_MB": m.InventoryRecord(total=4096)})
        await client.ensure_provider(names["rp2"], "host-b", {
            "VCPU": m.InventoryRecord(total=16), "DISK_GB": m.InventoryRecord(total=100)})

        async def put(body: dict, version: str = "1.38") -> None:
            headers = h.admin | {"OpenStack-API-Version": f"placement {version}"}
            resp = await h.http.put(f"/placement/allocations/{uuid.uuid4()}", json=body, headers=headers)
            assert resp.status == 204, await resp.text()

        def body(project: str, user: str, ctype: str, **per_rp: dict) -> dict:
            return {"allocations": {names[rp]: {"resources": res} for rp, res in per_rp.items()},
                    "project_id": project, "user_id": user, "consumer_generation": None,
                    "consumer_type": ctype}

        await put(body("proj-a", "alice", "INSTANCE", rp1={"VCPU": 1, "MEMORY_MB": 1024}))
        await put(body("proj-a", "bob", "INSTANCE", rp1={"VCPU": 2, "MEMORY_MB": 512}))
        await put(body("proj-a", "alice", "MIGRATION", rp1={"VCPU": 1}, rp2={"VCPU": 1, "DISK_GB": 10}))
        untyped = body("proj-a", "bob", "", rp2={"VCPU": 2})
        del untyped["consumer_type"]
        await put(untyped, version="1.37")
        await put(body("proj-b", "carol", "INSTANCE", rp1={"VCPU": 4}))
        yield h, names


async def test_usages(placement):
    h, names = placement
    await play(h, USAGES, names)
