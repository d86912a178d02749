"""Allocations over HTTP: a consumer's allocations in every body shape the microversions
define (list before 1.12, keyed by provider after; project/user from 1.8, consumer generation
from 1.28, mappings from 1.34, consumer type from 1.38), `POST /allocations` for several
consumers at once, all or nothing, and `GET /resource_providers/{uuid}/allocations`."""

from __future__ import annotations

import uuid

import pytest

from nova_async.placement import messages as m
from nova_async.placement.client import PlacementClient
from tests.harness import running
from tests.integration.placement.test_http import ABSENT, ANY, fault, play

A = "/placement/allocations"


def _mine(rp: str, **resources: int) -> dict:
    return {"{" + rp + "}": {"resources": resources}}


def _body(version: int, allocs: dict, *, gen: object = ABSENT, ctype: str = "INSTANCE",
          project: str = "proj-a", user: str = "alice") -> dict:
    """A PUT body as a client at 1.`version` would write it."""
    body: dict = {"allocations": allocs}
    if version >= 8:
        body |= {"project_id": project, "user_id": user}
    if version >= 28:
        body["consumer_generation"] = None if gen is ABSENT else gen
    if version >= 38:
        body["consumer_type"] = ctype
    return body


CONSUMER = [
    # before 1.12: a list of {resource_provider, resources}
    dict(name="list body at 1.0", method="PUT", url=A + "/{c1}", version="1.0", status=204,
         data={"allocations": [{"resource_provider": {"uuid": "{rp1}"}, "resources": {"VCPU": 1}}]}),
    dict(name="read at 1.0", url=A + "/{c1}", version="1.0",
         body={"allocations": {"{rp1}": {"generation": ANY, "resources": {"VCPU": 1}}},
               "project_id": ABSENT}),
    dict(name="list body without project at 1.8", method="PUT", url=A + "/{c1}", version="1.8",
         data={"allocations": [{"resource_provider": {"uuid": "{rp1}"}, "resources": {"VCPU": 1}}]},
         status=400),
    dict(name="list body with project at 1.8", method="PUT", url=A + "/{c1}", version="1.8",
         status=204, data={"allocations": [{"resource_provider": {"uuid": "{rp1}"},
                                            "resources": {"VCPU": 2}}],
                           "project_id": "proj-a", "user_id": "alice"}),
    dict(name="a list body at 1.12", method="PUT", url=A + "/{c1}", version="1.12", status=400,
         data={"allocations": [{"resource_provider": {"uuid": "{rp1}"}, "resources": {"VCPU": 1}}],
               "project_id": "proj-a", "user_id": "alice"}),
    dict(name="dict body at 1.12", method="PUT", url=A + "/{c1}", version="1.12", status=204,
         data=_body(12, _mine("rp1", VCPU=3) | _mine("rp2", DISK_GB=10))),
    dict(name="read at 1.12", url=A + "/{c1}", version="1.12",
         body={"allocations": {"{rp1}": {"resources": {"VCPU": 3}},
                               "{rp2}": {"resources": {"DISK_GB": 10}}},
               "project_id": "proj-a", "user_id": "alice", "consumer_generation": ABSENT}),
    dict(name="empty allocations before 1.28", method="PUT", url=A + "/{c1}", version="1.27",
         data=_body(12, {}), status=400),
    # consumer generations
    dict(name="consumer_generation is required at 1.28", method="PUT", url=A + "/{c1}",
         version="1.28", data=_body(12, _mine("rp1", VCPU=1)), status=400),
    dict(name="null generation for an existing consumer", method="PUT", url=A + "/{c1}",
         version="1.28", data=_body(28, _mine("rp1", VCPU=1), gen=None), status=409,
         body=fault(409, code="placement.concurrent_update")),
    dict(name="a stale generation", method="PUT", url=A + "/{c1}", version="1.28",
         data=_body(28, _mine("rp1", VCPU=1), gen=0), status=409,
         body=fault(409, code="placement.concurrent_update")),
    dict(name="the current generation", url=A + "/{c1}", version="1.28",
         body={"consumer_generation": 3}),
    dict(name="write at the current generation", method="PUT", url=A + "/{c1}", version="1.28",
         data=_body(28, _mine("rp1", VCPU=1), gen=3), status=204),
    dict(name="a generation for a consumer that does not exist", method="PUT", url=A + "/{c2}",
         version="1.28", data=_body(28, _mine("rp1", VCPU=1), gen=5), status=409,
         body=fault(409, code="placement.concurrent_update")),
    # mappings and consumer types
    dict(name="mappings before 1.34", method="PUT", url=A + "/{c2}", version="1.33", status=400,
         data=_body(28, _mine("rp1", VCPU=1)) | {"mappings": {"": ["{rp1}"]}}),
    dict(name="mappings at 1.34", method="PUT", url=A + "/{c2}", version="1.34", status=204,
         data=_body(28, _mine("rp1", VCPU=1)) | {"mappings": {"": ["{rp1}"]}}),
    dict(name="consumer_type is required at 1.38", method="PUT", url=A + "/{c3}", version="1.38",
         data=_body(28, _mine("rp1", VCPU=1)), status=400),
    dict(name="a malformed consumer_type", method="PUT", url=A + "/{c3}", status=400,
         data=_body(38, _mine("rp1", VCPU=1), ctype="instance")),
    dict(name="with a consumer_type", method="PUT", url=A + "/{c3}", status=204,
         data=_body(38, _mine("rp1", VCPU=1), ctype="MIGRATION")),
    dict(name="read the type", url=A + "/{c3}",
         body={"consumer_type": "MIGRATION", "consumer_generation": 1, "project_id": "proj-a"}),
    dict(name="untyped consumers read as UNKNOWN", url=A + "/{c2}", body={"consumer_type": "UNKNOWN"}),
    # refusals
    dict(name="more than there is", method="PUT", url=A + "/{c4}", status=409,
         data=_body(38, _mine("rp1", VCPU=7))),
    dict(name="no such inventory", method="PUT", url=A + "/{c4}", status=409,
         data=_body(38, _mine("rp2", MEMORY_MB=1))),
    dict(name="no such provider", method="PUT", url=A + "/{c4}", status=400,
         data=_body(38, _mine("missing", VCPU=1)),
         body=fault(400, code="placement.resource_provider.not_found")),
    dict(name="zero is not an amount", method="PUT", url=A + "/{c4}", status=400,
         data=_body(38, _mine("rp1", VCPU=0))),
    dict(name="a lower-case class", method="PUT", url=A + "/{c4}", status=400,
         data=_body(38, {"{rp1}": {"resources": {"vcpu": 1}}})),
    dict(name="not a uuid", method="PUT", url=A + "/nope", status=400, data=_body(38, {}),
         body=fault(400, detail="Malformed consumer_uuid: nope")),
    # no body, so no JSON: a 415 naming the one media type placement takes, as upstream answers
    dict(name="no body", method="PUT", url=A + "/{c4}", status=415),
    dict(name="nothing was written", url=A + "/{c4}", body={"allocations": {}}),
    # the provider's side
    dict(name="a provider's allocations", url="/placement/resource_providers/{rp1}/allocations",
         version="1.0", body={"resource_provider_generation": ANY, "allocations": {
             "{c1}": {"resources": {"VCPU": 1}}, "{c2}": {"resources": {"VCPU": 1}},
             "{c3}": {"resources": {"VCPU": 1}}}}),
    dict(name="an idle provider", url="/placement/resource_providers/{rp3}/allocations",
         body={"resource_provider_generation": 0, "allocations": {}}),
    dict(name="a missing provider", url="/placement/resource_providers/{missing}/allocations",
         status=404, body=fault(404, code="placement.resource_provider.not_found")),
    # removal
    dict(name="empty allocations remove at 1.28", method="PUT", url=A + "/{c3}", status=204,
         data=_body(38, {}, gen=1)),
    dict(name="removed", url=A + "/{c3}", body={"allocations": {}}),
    dict(name="delete", method="DELETE", url=A + "/{c2}", status=204),
    dict(name="delete again", method="DELETE", url=A + "/{c2}", status=404),
    dict(name="one consumer is left", url="/placement/resource_providers/{rp1}/allocations",
         body={"allocations": {"{c1}": ANY}}),
]


def _entry(allocs: dict, gen: object = None, ctype: str = "INSTANCE", project: str = "proj-a") -> dict:
    return {"allocations": allocs, "project_id": project, "user_id": "alice",
            "consumer_generation": gen, "consumer_type": ctype}


BATCH = [
    dict(name="POST before 1.13", method="POST", url=A, version="1.12", status=404,
         data={"{c1}": {"allocations": _mine("rp1", VCPU=1), "project_id": "p", "user_id": "u"}}),
    dict(name="two consumers at once", method="POST", url=A, status=204,
         data={"{c1}": _entry(_mine("rp1", VCPU=4)),
               "{c2}": _entry(_mine("rp1", VCPU=2) | _mine("rp2", DISK_GB=50), ctype="MIGRATION")}),
    dict(name="the first", url=A + "/{c1}", body={"allocations": {"{rp1}": {"resources": {"VCPU": 4}}},
                                                  "consumer_generation": 1}),
    dict(name="the second", url=A + "/{c2}", body={"consumer_type": "MIGRATION", "allocations": {
        "{rp1}": {"resources": {"VCPU": 2}}, "{rp2}": {"resources": {"DISK_GB": 50}}}}),
    dict(name="at 1.13 without generations", method="POST", url=A, version="1.13", status=204,
         data={"{c3}": {"allocations": _mine("rp2", VCPU=1), "project_id": "proj-a", "user_id": "alice"}}),
    dict(name="together they do not fit: nothing changes", method="POST", url=A, status=409,
         data={"{c1}": _entry(_mine("rp1", VCPU=5), gen=1), "{c4}": _entry(_mine("rp1", VCPU=2))}),
    dict(name="c1 unchanged", url=A + "/{c1}", body={"allocations": {"{rp1}": {"resources": {"VCPU": 4}}},
                                                     "consumer_generation": 1}),
    dict(name="c4 not created", url=A + "/{c4}", body={"allocations": {}}),
    dict(name="a move: c2's claim passes to c4 in one step", method="POST", url=A, status=204,
         data={"{c2}": _entry({}, gen=1, ctype="MIGRATION"),
               "{c4}": _entry(_mine("rp1", VCPU=4) | _mine("rp2", DISK_GB=100))}),
    dict(name="c2 is gone", url=A + "/{c2}", body={"allocations": {}}),
    dict(name="rp1 is full", url="/placement/resource_providers/{rp1}/usages",
         body={"usages": {"VCPU": 8}}),
    dict(name="one stale generation spoils the batch", method="POST", url=A, status=409,
         data={"{c1}": _entry({}, gen=1), "{c4}": _entry({}, gen=7)},
         body=fault(409, code="placement.concurrent_update")),
    dict(name="c1 still there", url=A + "/{c1}", body={"consumer_generation": 1}),
    dict(name="an unknown provider spoils the batch", method="POST", url=A, status=400,
         data={"{c1}": _entry({}, gen=1), "{c5}": _entry(_mine("missing", VCPU=1))}),
    dict(name="an empty batch", method="POST", url=A, status=400, data={}),
    dict(name="a consumer that is not a uuid", method="POST", url=A, status=400,
         data={"nope": _entry({})}),
    dict(name="consumer_type required at 1.38", method="POST", url=A, status=400,
         data={"{c5}": {"allocations": {}, "project_id": "p", "user_id": "u",
                        "consumer_generation": None}}),
    dict(name="mappings accepted at 1.34", method="POST", url=A, version="1.34", status=204,
         data={"{c5}": {"allocations": _mine("rp2", VCPU=1), "project_id": "p", "user_id": "u",
                        "consumer_generation": None, "mappings": {"": ["{rp2}"]}}}),
    # New consumers together (a wave of boots): their sum is what must fit, all or nothing.
    dict(name="new consumers whose sum does not fit", method="POST", url=A, status=409,
         data={"{c6}": _entry(_mine("rp2", VCPU=1)), "{c7}": _entry(_mine("rp2", VCPU=2))}),
    dict(name="neither written", url="/placement/resource_providers/{rp2}/usages",
         body={"usages": {"VCPU": 2, "DISK_GB": 100}}),
    dict(name="c6 not created", url=A + "/{c6}", body={"allocations": {}}),
    dict(name="new consumers that fit together", method="POST", url=A, status=204,
         data={"{c6}": _entry(_mine("rp2", VCPU=1)),
               "{c7}": _entry(_mine("rp2", VCPU=1) | _mine("rp1", MEMORY_MB=512))}),
    dict(name="both written", url="/placement/resource_providers/{rp2}/usages",
         body={"usages": {"VCPU": 4, "DISK_GB": 100}}),
    dict(name="c7 on two providers", url=A + "/{c7}", body={"consumer_generation": 1, "allocations": {
        "{rp1}": {"resources": {"MEMORY_MB": 512}}, "{rp2}": {"resources": {"VCPU": 1}}}}),
]


@pytest.fixture
async def placement(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        names = {k: str(uuid.uuid4()) for k in
                 ("rp1", "rp2", "rp3", "missing", "c1", "c2", "c3", "c4", "c5", "c6", "c7")}
        client = PlacementClient(h.bus)
        await client.ensure_provider(names["rp1"], "host-a", {
            "VCPU": m.InventoryRecord(total=8), "MEMORY_MB": m.InventoryRecord(total=4096)})
        await client.ensure_provider(names["rp2"], "host-b", {
            "VCPU": m.InventoryRecord(total=4), "DISK_GB": m.InventoryRecord(total=100)})
        await client.ensure_provider(names["rp3"], "host-c", {})
        yield h, names


async def test_one_consumer(placement):
    h, names = placement
    await play(h, CONSUMER, names)


async def test_several_consumers(placement):
    h, names = placement
    await play(h, BATCH, names)
