"""openstacksdk's block-storage attachments (create, update, complete, list, delete) against
the volume role, unmodified: the SDK picks the microversion and shapes the bodies itself."""

from __future__ import annotations

import asyncio
import uuid

import openstack
import pytest

from tests.integration.volume.attach_support import add_volume, volume_service, volume_status

# The SDK warns about its own optional parts (InfluxDB metrics) as it loads its config.
pytestmark = [pytest.mark.filterwarnings("ignore::openstack.warnings._RemovedInSDKWarning"),
              pytest.mark.filterwarnings("ignore::openstack.warnings.OpenStackDeprecationWarning")]


@pytest.fixture
async def h(pool, tmp_path):
    async with volume_service(pool, tmp_path) as harness:
        yield harness


def sdk_attach(endpoint: str, volume_id: str, instance_uuid: str) -> list[str]:
    conn = openstack.connect(auth_type="admin_token", auth={"token": "alice:proj-a", "endpoint": endpoint},
                             block_storage_api_version="3")
    seen = []
    bs = conn.block_storage
    att = bs.create_attachment(volume_id, instance=instance_uuid)
    seen.append(att.status)
    att = bs.update_attachment(att, connector={"host": "compute-1", "mountpoint": "/dev/vdb"})
    seen.append(att.status)
    bs.complete_attachment(att)
    seen.append(bs.get_attachment(att.id).status)
    seen.append(str([a.id for a in bs.attachments()] == [att.id]))
    bs.delete_attachment(att)
    return seen


async def test_the_sdk_attaches_and_detaches(h):
    vid, iid = await add_volume(h), str(uuid.uuid4())
    endpoint = str(h.http.make_url("/volume/v3/proj-a"))
    seen = await asyncio.to_thread(sdk_attach, endpoint, vid, iid)
    assert seen == ["reserved", "attaching", "attached", "True"]
    assert await volume_status(h, vid) == "available"
