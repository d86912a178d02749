"""Server group policies on a resize or cold migration, as Nova's scheduler applies them to a
move: an anti-affinity member never joins another member's host (up to max_server_per_host
from 2.64) but may be resized where it is; an affinity member has nowhere else to go; and a
reverted move counts the member on its own host again."""

from __future__ import annotations

from collections import Counter

from tests.integration import test_server_lifecycle
from tests.integration.api.test_server_groups import boot, group, host_of
from tests.integration.test_resize import action, flavor, migration_of
from tests.integration.test_server_lifecycle import V, ok, settled, wait_status

cloud = test_server_lifecycle.cloud   # two simulated hosts, sim-1 and sim-2, four m1.small each


async def refused_move(h, sid: str, source: str, filter_name: str) -> None:
    """The move was refused by the group's filter: the server is where it was, as it was."""
    server = await settled(h, sid, h.admin)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", source)
    assert (await migration_of(h, sid))["status"] == "error"
    fault = await h.cell1.fetchval("SELECT message FROM instance_faults WHERE instance_uuid = $1 "
                                   "ORDER BY id DESC LIMIT 1", sid)
    assert filter_name in fault, fault
    actions = (await ok(await h.http.get(f"{V}/servers/{sid}/os-instance-actions", headers=h.alice),
                        200))["instanceActions"]
    assert actions[0]["message"] == "Error"


async def test_an_anti_affinity_member_is_not_migrated_onto_another_members_host(cloud):
    h = cloud
    g = await group(h, "anti-affinity")
    first, second = (await boot(h, g))["id"], (await boot(h, g))["id"]
    source = await host_of(h, first)
    assert {source, await host_of(h, second)} == {"sim-1", "sim-2"}
    await action(h, first, {"migrate": None}, 202, headers=h.admin)
    await refused_move(h, first, source, "ServerGroupAntiAffinityFilter")
    # a resize may stay where it is (allow_resize_to_same_host), the only host the group leaves it
    await action(h, first, {"resize": {"flavorRef": await flavor(h, "m1.medium", 2048, 2, 2)}}, 202)
    server = await settled(h, first, h.admin)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", source), server.get("fault")


async def test_max_server_per_host_lets_a_member_join_and_a_revert_counts_it_back(cloud):
    h = cloud
    g = await group(h, "anti-affinity", max_server_per_host=2)
    first, second = (await boot(h, g))["id"], (await boot(h, g))["id"]
    source, other = await host_of(h, first), await host_of(h, second)
    assert source != other
    await action(h, first, {"migrate": None}, 202, headers=h.admin)
    server = await settled(h, first, h.admin)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", other), server.get("fault")
    await action(h, first, {"revertResize": None}, 202)
    assert (await settled(h, first, h.admin))["OS-EXT-SRV-ATTR:host"] == source
    # back on its host, it counts there: two more members fit, one on each host, and no third
    more = [(await boot(h, g))["id"] for _ in range(2)]
    per_host = Counter([await host_of(h, sid) for sid in (first, second, *more)])
    assert per_host == {"sim-1": 2, "sim-2": 2}
    refused = await boot(h, g, "ERROR")
    assert "ServerGroupAntiAffinityFilter" in refused["fault"]["message"]


async def test_an_affinity_member_cannot_be_migrated_away_from_its_group(cloud):
    h = cloud
    g = await group(h, "affinity")
    first, second = (await boot(h, g))["id"], (await boot(h, g))["id"]
    source = await host_of(h, first)
    assert await host_of(h, second) == source
    await action(h, first, {"migrate": None}, 202, headers=h.admin)
    await refused_move(h, first, source, "ServerGroupAffinityFilter")


async def test_a_confirmed_migration_counts_the_member_on_its_new_host(cloud):
    h = cloud
    g = await group(h, "anti-affinity", max_server_per_host=2)
    first, second = (await boot(h, g))["id"], (await boot(h, g))["id"]
    other = await host_of(h, second)
    await action(h, first, {"migrate": None}, 202, headers=h.admin)
    assert (await settled(h, first, h.admin))["OS-EXT-SRV-ATTR:host"] == other
    await action(h, first, {"confirmResize": None}, 204)
    await settled(h, first, h.admin)
    # both on one host now: the next two members go to the other one, and a fifth nowhere
    more = [(await boot(h, g))["id"] for _ in range(2)]
    assert {await host_of(h, sid) for sid in more} == {"sim-1", "sim-2"} - {other}
    refused = await boot(h, g, "ERROR")
    assert "ServerGroupAntiAffinityFilter" in refused["fault"]["message"]


async def test_a_member_of_a_deleted_group_moves_freely(cloud):
    h = cloud
    g = await group(h, "anti-affinity")
    first, second = (await boot(h, g))["id"], (await boot(h, g))["id"]
    other = await host_of(h, second)
    assert (await h.http.delete(f"{V}/os-server-groups/{g}", headers=h.alice)).status == 204
    await action(h, first, {"migrate": None}, 202, headers=h.admin)
    server = await settled(h, first, h.admin)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", other), server.get("fault")


async def test_an_offloaded_affinity_member_is_unshelved_onto_its_group_s_host(cloud):
    """Nova's scheduler places an unshelve with the member's group: the other members count."""
    h = cloud
    g = await group(h, "affinity")
    first, second = (await boot(h, g))["id"], (await boot(h, g))["id"]
    together = await host_of(h, first)
    assert await host_of(h, second) == together
    await action(h, first, {"shelve": None}, 202)
    await wait_status(h, first, "SHELVED_OFFLOADED", "ERROR", headers=h.admin)
    # the group's host is the fuller one now: without the policy the emptier one would weigh best
    await action(h, first, {"unshelve": None}, 202)
    server = await wait_status(h, first, "ACTIVE", "ERROR", headers=h.admin)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", together), server.get("fault")
