"""os-quota-class-sets: the default class's limits are what a project without its own gets,
boots included; a project's own limits still win; other classes are kept and apply to none."""

from __future__ import annotations

import pytest

from tests.integration.test_server_lifecycle import V, boot_body, ok, sim_cloud


@pytest.fixture
async def cloud(pool, tmp_path):
    async with sim_cloud(pool, tmp_path) as h:
        yield h


def mv(h, version: str) -> dict[str, str]:
    return {**h.admin, "OpenStack-API-Version": f"compute {version}"}


async def test_the_default_class_is_every_projects_default(cloud):
    h = cloud
    shown = (await ok(await h.http.get(V + "/os-quota-class-sets/default", headers=h.admin), 200))["quota_class_set"]
    assert shown["id"] == "default" and shown["instances"] == 10 and "floating_ips" in shown
    assert "server_groups" not in shown    # before 2.50
    newer = (await ok(await h.http.get(V + "/os-quota-class-sets/default", headers=mv(h, "2.57")), 200))[
        "quota_class_set"]
    assert "server_groups" in newer and "floating_ips" not in newer and "injected_files" not in newer

    changed = await ok(await h.http.put(V + "/os-quota-class-sets/default", headers=h.admin,
                                        json={"quota_class_set": {"instances": 1, "metadata_items": 5}}), 200)
    assert changed["quota_class_set"]["instances"] == 1 and "id" not in changed["quota_class_set"]
    assert (await ok(await h.http.get(V + "/os-quota-sets/proj-a/defaults", headers=h.alice), 200))[
        "quota_set"]["instances"] == 1
    assert (await ok(await h.http.get(V + "/os-quota-sets/proj-a", headers=h.alice), 200))[
        "quota_set"]["instances"] == 1

    # A boot of two is refused by the class's limit of one; the project's own limit wins over it.
    over = await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, min_count=2)), 403)
    assert "Quota exceeded" in over["forbidden"]["message"]
    await ok(await h.http.put(V + "/os-quota-sets/proj-a", headers=h.admin, json={"quota_set": {"instances": 5}}), 200)
    await ok(await h.http.post(V + "/servers", headers=h.alice, json=boot_body(h, min_count=2)), 202)

    # Another class is kept and shown, and changes nothing.
    await ok(await h.http.put(V + "/os-quota-class-sets/gold", headers=h.admin,
                              json={"quota_class_set": {"cores": 99}}), 200)
    assert (await ok(await h.http.get(V + "/os-quota-class-sets/gold", headers=h.admin), 200))[
        "quota_class_set"]["cores"] == 99
    assert (await ok(await h.http.get(V + "/os-quota-sets/proj-b", headers=h.admin), 200))["quota_set"]["cores"] == 20

    # The older microversions' resources are kept and shown too, though nothing enforces them.
    old = {"injected_files": 105, "floating_ips": 99, "security_group_rules": 99}
    assert old.items() <= (await ok(await h.http.put(V + "/os-quota-class-sets/gold", headers=h.admin,
                                                     json={"quota_class_set": old}), 200))["quota_class_set"].items()
    assert old.items() <= (await ok(await h.http.get(V + "/os-quota-class-sets/gold", headers=h.admin), 200))[
        "quota_class_set"].items()


async def test_refusals(cloud):
    h = cloud
    await ok(await h.http.get(V + "/os-quota-class-sets/default", headers=h.alice), 403)
    await ok(await h.http.put(V + "/os-quota-class-sets/default", headers=h.alice,
                              json={"quota_class_set": {"instances": 1}}), 403)
    await ok(await h.http.put(V + "/os-quota-class-sets/default", headers=h.admin,
                              json={"quota_class_set": {"instances": -2}}), 400)
    await ok(await h.http.put(V + "/os-quota-class-sets/default", headers=h.admin,
                              json={"quota_class_set": {"server_groups": 1}}), 400)   # before 2.50
    await ok(await h.http.put(V + "/os-quota-class-sets/default", headers=mv(h, "2.50"),
                              json={"quota_class_set": {"floating_ips": 1}}), 400)
