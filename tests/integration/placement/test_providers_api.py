"""Resource providers over HTTP: the list filters (name, uuid, in_tree, member_of, resources,
required) at the microversions that brought each piece of syntax, and PUT (rename, give a
parent, re-parent at 1.37, loops refused). Stories in the gabbi style of test_http.py."""

from __future__ import annotations

import uuid

import pytest

from nova_async.placement import messages as m
from nova_async.placement.client import PlacementClient
from tests.harness import running
from tests.integration.placement.test_http import ABSENT, ANY, fault, play


def _names(*uuids: str) -> dict:
    return {"resource_providers": [{"uuid": "{" + u + "}"} for u in uuids]}


RP = "/placement/resource_providers"

FILTERS = [
    dict(name="everything", url=RP, body=_names("rp1", "rp2", "rp3", "child")),
    # member_of
    dict(name="member_of one aggregate", url=RP + "?member_of={agg1}", body=_names("rp1", "rp3")),
    dict(name="member_of any of two", url=RP + "?member_of=in:{agg1},{agg2}",
         body=_names("rp1", "rp2", "rp3")),
    dict(name="member_of at 1.3 is the first", url=RP + "?member_of={agg2}", version="1.3",
         body=_names("rp2", "rp3")),
    dict(name="member_of before 1.3", url=RP + "?member_of={agg1}", version="1.2", status=400),
    dict(name="member_of of nobody's aggregate", url=RP + "?member_of={missing}", body=_names()),
    dict(name="member_of, two without in:", url=RP + "?member_of={agg1},{agg2}", status=400,
         body=fault(400, code="placement.query.bad_value")),
    dict(name="member_of not a uuid", url=RP + "?member_of=in:nope", status=400),
    dict(name="member_of repeated is AND at 1.24",
         url=RP + "?member_of={agg1}&member_of={agg2}", version="1.24", body=_names("rp3")),
    dict(name="member_of repeated before 1.24", url=RP + "?member_of={agg1}&member_of={agg2}",
         version="1.23", status=400),
    dict(name="member_of forbidden at 1.32", url=RP + "?member_of=!{agg2}", body=_names("rp1", "child")),
    dict(name="member_of forbidden any of", url=RP + "?member_of=!in:{agg1},{agg2}",
         body=_names("child")),
    dict(name="member_of forbidden and required",
         url=RP + "?member_of={agg1}&member_of=!{agg2}", body=_names("rp1")),
    dict(name="member_of forbidden before 1.32", url=RP + "?member_of=!{agg2}", version="1.31",
         status=400),
    # resources
    dict(name="room for 4 VCPU", url=RP + "?resources=VCPU:4", body=_names("rp1")),
    dict(name="room for 1 VCPU and memory", url=RP + "?resources=VCPU:1,MEMORY_MB:1024",
         body=_names("rp1", "rp2")),
    dict(name="rp1 has 6 of 8 VCPU left", url=RP + "?resources=VCPU:7", body=_names()),
    dict(name="max_unit counts", url=RP + "?resources=MEMORY_MB:3000", body=_names("rp2")),
    dict(name="resources before 1.4", url=RP + "?resources=VCPU:1", version="1.3", status=400),
    dict(name="resources badly formed", url=RP + "?resources=VCPU", status=400,
         body=fault(400, code="placement.query.bad_value")),
    dict(name="resources zero", url=RP + "?resources=VCPU:0", status=400),
    dict(name="resources class twice", url=RP + "?resources=VCPU:1,VCPU:2", status=400),
    dict(name="resources of a class nobody has", url=RP + "?resources=CUSTOM_GOLD:1", body=_names()),
    # required
    dict(name="required trait", url=RP + "?required=HW_CPU_X86_AVX2", version="1.18",
         body=_names("rp1", "rp3")),
    dict(name="required two traits", url=RP + "?required=HW_CPU_X86_AVX2,STORAGE_DISK_SSD",
         body=_names("rp3")),
    dict(name="required before 1.18", url=RP + "?required=HW_CPU_X86_AVX2", version="1.17", status=400),
    dict(name="forbidden trait at 1.22", url=RP + "?required=!STORAGE_DISK_SSD",
         body=_names("rp1", "child")),
    dict(name="forbidden trait before 1.22", url=RP + "?required=!STORAGE_DISK_SSD", version="1.21",
         status=400),
    dict(name="required any of at 1.39", url=RP + "?required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD",
         body=_names("rp1", "rp2", "rp3")),
    dict(name="required any of before 1.39", url=RP + "?required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD",
         version="1.38", status=400),
    dict(name="required repeated at 1.39",
         url=RP + "?required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD&required=!HW_CPU_X86_AVX2",
         body=_names("rp2")),
    dict(name="required an unknown trait", url=RP + "?required=CUSTOM_NOPE", status=400,
         body=fault(400, code="placement.query.bad_value")),
    dict(name="required a malformed trait", url=RP + "?required=lower", status=400),
    # everything at once
    dict(name="all filters together",
         url=RP + "?member_of={agg1}&resources=VCPU:1&required=HW_CPU_X86_AVX2&name=host-a",
         body=_names("rp1")),
    dict(name="in_tree with resources", url=RP + "?in_tree={rp2}&resources=VCPU:1", body=_names("rp2")),
]


UPDATING = [
    dict(name="rename", method="PUT", url=RP + "/{rp1}", data={"name": "host-a2"},
         body={"uuid": "{rp1}", "name": "host-a2", "generation": ANY, "parent_provider_uuid": None}),
    dict(name="renamed", url=RP + "?name=host-a2", body=_names("rp1")),
    dict(name="rp3's generation", url=RP + "/{rp3}", body={"generation": 0}),
    # a rename (or a move) is not a change of what the provider holds: upstream keeps the generation
    dict(name="rename at 1.0 has no tree", method="PUT", url=RP + "/{rp3}", version="1.0",
         data={"name": "host-c2"}, body={"name": "host-c2", "generation": 0,
                                         "parent_provider_uuid": ABSENT}),
    dict(name="a parent before 1.14", method="PUT", url=RP + "/{rp3}", version="1.13",
         data={"name": "host-c", "parent_provider_uuid": "{rp1}"}, status=400),
    dict(name="a name taken", method="PUT", url=RP + "/{rp1}", data={"name": "host-b"}, status=409,
         body=fault(409, code="placement.duplicate_name")),
    dict(name="no name", method="PUT", url=RP + "/{rp1}", data={}, status=400),
    dict(name="an unknown field", method="PUT", url=RP + "/{rp1}", data={"name": "x", "colour": 1},
         status=400),
    dict(name="update a missing provider", method="PUT", url=RP + "/{missing}", data={"name": "x"},
         status=404, body=fault(404, code="placement.resource_provider.not_found")),
    dict(name="an unknown parent", method="PUT", url=RP + "/{rp3}",
         data={"name": "host-c", "parent_provider_uuid": "{missing}"}, status=400),
    # a root may be given a parent at 1.14; its subtree follows
    dict(name="child under rp3", method="PUT", url=RP + "/{child}",
         data={"name": "child", "parent_provider_uuid": "{rp3}"}, version="1.14",
         body={"parent_provider_uuid": "{rp3}", "root_provider_uuid": "{rp3}"}),
    dict(name="rp3 under rp1", method="PUT", url=RP + "/{rp3}",
         data={"name": "host-c", "parent_provider_uuid": "{rp1}"}, version="1.14",
         body={"parent_provider_uuid": "{rp1}", "root_provider_uuid": "{rp1}"}),
    dict(name="the grandchild moved too", url=RP + "/{child}",
         body={"parent_provider_uuid": "{rp3}", "root_provider_uuid": "{rp1}"}),
    dict(name="the whole tree", url=RP + "?in_tree={child}", body=_names("rp1", "rp3", "child")),
    dict(name="the same parent again is fine", method="PUT", url=RP + "/{rp3}", version="1.14",
         data={"name": "host-c", "parent_provider_uuid": "{rp1}"}, body={"root_provider_uuid": "{rp1}"}),
    dict(name="re-parent before 1.37", method="PUT", url=RP + "/{rp3}", version="1.36",
         data={"name": "host-c", "parent_provider_uuid": "{rp2}"}, status=400),
    dict(name="un-parent before 1.37", method="PUT", url=RP + "/{rp3}", version="1.36",
         data={"name": "host-c", "parent_provider_uuid": None}, status=400),
    dict(name="a loop: rp1 under its grandchild", method="PUT", url=RP + "/{rp1}",
         data={"name": "host-a2", "parent_provider_uuid": "{child}"}, status=400),
    dict(name="a loop: under itself", method="PUT", url=RP + "/{rp2}",
         data={"name": "host-b", "parent_provider_uuid": "{rp2}"}, status=400),
    dict(name="re-parent at 1.37", method="PUT", url=RP + "/{rp3}", version="1.37",
         data={"name": "host-c", "parent_provider_uuid": "{rp2}"},
         body={"parent_provider_uuid": "{rp2}", "root_provider_uuid": "{rp2}"}),
    dict(name="the grandchild followed", url=RP + "/{child}", body={"root_provider_uuid": "{rp2}"}),
    dict(name="rp1 is alone again", url=RP + "?in_tree={rp1}", body=_names("rp1")),
    dict(name="no PUT leaves the parent alone", method="PUT", url=RP + "/{rp3}",
         data={"name": "host-c3"}, body={"parent_provider_uuid": "{rp2}"}),
    dict(name="un-parent at 1.37", method="PUT", url=RP + "/{rp3}", version="1.37",
         data={"name": "host-c", "parent_provider_uuid": None},
         body={"parent_provider_uuid": None, "root_provider_uuid": "{rp3}"}),
    dict(name="its child came along", url=RP + "/{child}",
         body={"parent_provider_uuid": "{rp3}", "root_provider_uuid": "{rp3}"}),
    # deletion
    dict(name="a parent cannot go", method="DELETE", url=RP + "/{rp3}", status=409,
         body=fault(409, code="placement.resource_provider.cannot_delete_parent")),
    dict(name="a provider with allocations cannot go", method="DELETE", url=RP + "/{rp1}",
         status=409, body=fault(409, code="placement.resource_provider.inuse")),
    dict(name="the child can", method="DELETE", url=RP + "/{child}", status=204),
    dict(name="then the parent", method="DELETE", url=RP + "/{rp3}", status=204),
    dict(name="gone", url=RP + "/{rp3}", status=404),
]


@pytest.fixture
async def placement(pool, tmp_path):
    async with running(pool, ["placement"], tmp_path) as h:
        names = {k: str(uuid.uuid4()) for k in
                 ("rp1", "rp2", "rp3", "child", "missing", "agg1", "agg2", "consumer")}
        client = PlacementClient(h.bus)
        await client.ensure_provider(names["rp1"], "host-a", {
            "VCPU": m.InventoryRecord(total=8),
            "MEMORY_MB": m.InventoryRecord(total=4096, max_unit=2048)})
        await client.ensure_provider(names["rp2"], "host-b", {
            "VCPU": m.InventoryRecord(total=2), "MEMORY_MB": m.InventoryRecord(total=4096)})
        await client.ensure_provider(names["rp3"], "host-c", {})
        await client.ensure_provider(names["child"], "child", {})
        assert (await client.claim(names["consumer"], names["rp1"], {"VCPU": 2}, "proj", "user")).ok
        # aggregates and traits straight in the database: their APIs are another module's
        await pool.execute(
            "INSERT INTO provider_aggregates SELECT rp.id, a.agg::uuid FROM resource_providers rp,"
            " (VALUES ($1, $3), ($2, $4), ($5, $3), ($5, $4)) AS a(rp, agg) WHERE rp.uuid = a.rp::uuid",
            names["rp1"], names["rp2"], names["agg1"], names["agg2"], names["rp3"])
        await pool.execute("INSERT INTO traits (name) VALUES ('HW_CPU_X86_AVX2'), ('STORAGE_DISK_SSD')"
                           " ON CONFLICT DO NOTHING")
        await pool.execute(
            "INSERT INTO provider_traits SELECT rp.id, t.id FROM resource_providers rp, traits t,"
            " (VALUES ($1, 'HW_CPU_X86_AVX2'), ($2, 'STORAGE_DISK_SSD'), ($3, 'HW_CPU_X86_AVX2'),"
            "         ($3, 'STORAGE_DISK_SSD')) AS x(rp, trait)"
            " WHERE rp.uuid = x.rp::uuid AND t.name = x.trait",
            names["rp1"], names["rp2"], names["rp3"])
        yield h, names


async def test_list_filters(placement):
    h, names = placement
    await play(h, FILTERS, names)


async def test_update_and_delete(placement):
    h, names = placement
    await play(h, UPDATING, names)
