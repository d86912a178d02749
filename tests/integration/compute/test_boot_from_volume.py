"""Boot from volume (block_device_mapping_v2 with destination volume) through every role:
the API's checks and reservations, the build that makes, attaches and connects the volumes,
and what rebuild, resize and a failed build do with them.

The volume service is a stand-in speaking its bus contract (volume/messages.py) over sparse
files, so that these tests hold however the volume role is built; the rest is real (API,
conductor, scheduler, placement, compute on libvirt's test driver, image, network)."""

from __future__ import annotations

import importlib.util
import uuid

import pytest

from nova_async import service
from nova_async.bus import Message
from nova_async.common.errors import Conflict, NotFound
from nova_async.compute.domain_xml import domain_name
from nova_async.role import Role
from nova_async.volume import messages as vm
from tests.harness import running
from tests.integration.test_server_lifecycle import MV, V, ok, show_server, wait_status
from tests.waiting import until

ROLES = ["identity", "image", "network", "placement", "api", "conductor", "scheduler", "compute", "volume"]
BFV_MV = {"OpenStack-API-Version": "compute 2.67"}


class FakeVolume(Role):
    """The volume role's contract, with Cinder's states, over sparse files."""

    name = topic = "volume"

    def __init__(self, deps) -> None:
        super().__init__(deps)
        self.volumes: dict[str, dict] = {}
        self.attachments: dict[str, dict] = {}
        self.snapshots: set[str] = set()
        self.created: list[str] = []       # by CreateVolume, in order
        self.made_blank: set[str] = set()
        self.fail_blank = False             # connecting a volume made blank fails

    async def run(self) -> None:
        self.ready.set()
        await self.serve(self.topic, self._handle)

    def add(self, project_id: str, size: int = 1, *, bootable: bool = True, status: str = "available",
            image_metadata: dict[str, str] | None = None, image_id: str = "") -> str:
        volume_id = str(uuid.uuid4())
        root = self.settings.state_path / "fake-volumes"
        root.mkdir(parents=True, exist_ok=True)
        path = root / volume_id
        with open(path, "wb") as f:
            f.truncate(size * 1024**3)
        self.volumes[volume_id] = {"project_id": project_id, "size": size, "status": status, "path": str(path),
                                   "bootable": bootable, "image_metadata": image_metadata or {},
                                   "image_id": image_id}
        return volume_id

    def info(self, volume_id: str) -> vm.VolumeInfo:
        v = self.volumes[volume_id]
        return vm.VolumeInfo(id=volume_id, project_id=v["project_id"], size=v["size"], status=v["status"],
                             bootable=v["bootable"], image_id=v["image_id"], image_metadata=v["image_metadata"])

    def _visible(self, volume_id: str, project_id: str, is_admin: bool) -> dict:
        v = self.volumes.get(volume_id)
        if v is None or not (is_admin or v["project_id"] == project_id):
            raise NotFound(f"Volume {volume_id} could not be found.")
        return v

    async def _handle(self, msg: Message, context) -> Message | None:
        if isinstance(msg, vm.GetVolume):
            self._visible(msg.volume_id, msg.project_id, msg.is_admin)
            return self.info(msg.volume_id)
        if isinstance(msg, vm.CreateVolume):
            if msg.source_type == "snapshot" and msg.source_id not in self.snapshots:
                raise NotFound(f"Snapshot {msg.source_id} could not be found.")
            from_image = msg.source_type == "image"
            volume_id = self.add(msg.project_id, msg.size or 1, bootable=from_image,
                                 image_id=msg.source_id if from_image else "",
                                 image_metadata={"image_id": msg.source_id} if from_image else {})
            if msg.source_type == "blank":
                self.made_blank.add(volume_id)
            self.created.append(volume_id)
            return self.info(volume_id)
        if isinstance(msg, vm.ReserveVolume):
            v = self._visible(msg.volume_id, msg.project_id, msg.is_admin)
            if v["status"] != "available":
                raise Conflict(f"volume {msg.volume_id} status must be available, but it is {v['status']}")
            v["status"] = "reserved"
            attachment_id = str(uuid.uuid4())
            self.attachments[attachment_id] = {"volume_id": msg.volume_id, "instance_uuid": msg.instance_uuid}
            return vm.AttachmentInfo(attachment_id=attachment_id, volume=self.info(msg.volume_id))
        if isinstance(msg, vm.ConnectAttachment):
            a = self.attachments[msg.attachment_id]
            if self.fail_blank and a["volume_id"] in self.made_blank:
                raise Conflict("the backend cannot export the volume")
            v = self.volumes[a["volume_id"]]
            v["status"], v["connector"] = "attaching", msg.connector
            return vm.ConnectionInfo(driver_volume_type="file", device_path=v["path"], disk_kind="file",
                                     volume_id=a["volume_id"])
        if isinstance(msg, vm.CompleteAttachment):
            self.volumes[self.attachments[msg.attachment_id]["volume_id"]]["status"] = "in-use"
            return None
        if isinstance(msg, vm.DeleteAttachment):
            a = self.attachments.pop(msg.attachment_id, None)
            if a is not None and a["volume_id"] in self.volumes:
                self.volumes[a["volume_id"]]["status"] = "available"
            return None
        if isinstance(msg, vm.DeleteVolume):
            self.volumes.pop(msg.volume_id, None)
            return None
        if isinstance(msg, vm.VolumesOfInstance):
            return vm.AttachmentList(attachments=[
                vm.AttachmentRecord(attachment_id=aid, volume_id=a["volume_id"], status="attached",
                                    volume_status=self.volumes[a["volume_id"]]["status"])
                for aid, a in self.attachments.items() if a["instance_uuid"] == msg.instance_uuid])
        return None


@pytest.fixture
async def cloud(pool, tmp_path, monkeypatch):
    monkeypatch.setitem(service.ROLE_CLASSES, "volume", f"{__name__}:FakeVolume")
    async with running(pool, ROLES, tmp_path, compute={"simulate_hosts": 2, "sim_vcpus": 4,
                                                       "sim_memory_mb": 4096, "sim_disk_gb": 50}) as h:
        flavor = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1.small", "ram": 512, "vcpus": 1, "disk": 1}}), 200)
        h.flavor = flavor["flavor"]["id"]
        big = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
            "name": "m1.big", "ram": 1024, "vcpus": 2, "disk": 1}}), 200)
        h.big = big["flavor"]["id"]
        image = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
            "name": "demo", "disk_format": "raw", "container_format": "bare"}), 201)
        await ok(await h.http.put(f"/image/v2/images/{image['id']}/file", data=b"\0" * 65536,
                                  headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
        h.image = image["id"]
        net = await ok(await h.http.post("/network/v2.0/networks", headers=h.alice,
                                         json={"network": {"name": "net1"}}), 201)
        h.net = net["network"]["id"]
        await ok(await h.http.post("/network/v2.0/subnets", headers=h.alice, json={"subnet": {
            "network_id": h.net, "cidr": "10.0.0.0/24", "ip_version": 4}}), 201)
        h.volumes = h.roles["volume"]
        h.alice_project = "proj-a"
        yield h


def bfv_body(h, bdms, **extra):
    return {"server": {"name": "vm1", "flavorRef": h.flavor, "networks": [{"uuid": h.net}],
                       "block_device_mapping_v2": bdms, **extra}}


async def boot(h, body, headers=None) -> str:
    resp = await h.http.post(V + "/servers", headers={**(headers or h.alice), **BFV_MV}, json=body)
    return (await ok(resp, 202))["server"]["id"]


async def bdm_rows(h, server_id: str) -> list:
    return await h.cell1.fetch("SELECT * FROM block_device_mappings WHERE instance_uuid = $1 "
                               "ORDER BY boot_index NULLS LAST, created_at", uuid.UUID(server_id))


async def domain_disks(h, server_id: str) -> str:
    compute = h.roles["compute"]
    row = await h.cell1.fetchrow("SELECT host FROM instances WHERE uuid = $1", uuid.UUID(server_id))
    return await compute.hosts[row["host"]].hypervisor.xml_of(domain_name(server_id))


async def test_boot_from_image_to_volume(cloud):
    h = cloud
    sid = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": h.image, "source_type": "image",
                                      "destination_type": "volume", "volume_size": 2,
                                      "delete_on_termination": True}], imageRef=""))
    server = await wait_status(h, sid, "ACTIVE")
    assert server["image"] == ""
    [bdm] = await bdm_rows(h, sid)
    assert bdm["device_name"] == "/dev/vda" and bdm["volume_id"] is not None
    volume = h.volumes.volumes[str(bdm["volume_id"])]
    assert volume["status"] == "in-use" and volume["bootable"] and volume["size"] == 2
    host = (await show_server(h, sid, h.admin))["OS-EXT-SRV-ATTR:host"]
    assert volume["connector"]["host"] == host
    xml = await domain_disks(h, sid)
    assert volume["path"] in xml and f"<serial>{bdm['volume_id']}</serial>" in xml
    # the volume is its root: no local root disk, and no DISK_GB claimed for it (flavor disk 1)
    assert "/disk'" not in xml and '/disk"' not in xml
    alloc = await ok(await h.http.get(f"/placement/allocations/{sid}", headers={
        **h.admin, "OpenStack-API-Version": "placement 1.28"}), 200)
    [resources] = [a["resources"] for a in alloc["allocations"].values()]
    assert "DISK_GB" not in resources


async def test_boot_from_existing_volume_and_its_lifecycle(cloud):
    h = cloud
    vol = h.volumes.add(h.alice_project, 1, image_id=h.image, image_metadata={"image_id": h.image})
    sid = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": vol, "source_type": "volume",
                                      "destination_type": "volume"}]))
    await wait_status(h, sid, "ACTIVE")
    assert h.volumes.volumes[vol]["status"] == "in-use"
    [bdm] = await bdm_rows(h, sid)
    assert str(bdm["volume_id"]) == vol and bdm["attachment_id"] is not None and not bdm["delete_on_termination"]

    # rebuild with the volume's own image recreates the guest around the same volume
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                             json={"rebuild": {"imageRef": h.image}})
    await ok(resp, 202)
    server = await until(lambda: show_server(h, sid), lambda s: s["OS-EXT-STS:task_state"] is None
                         and s["status"] == "ACTIVE", what="rebuilt")
    assert server["image"] == ""
    assert h.volumes.volumes[vol]["path"] in await domain_disks(h, sid)

    # resize keeps it in the domain too
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"resize": {"flavorRef": h.big}}), 202)
    await wait_status(h, sid, "VERIFY_RESIZE")
    assert h.volumes.volumes[vol]["path"] in await domain_disks(h, sid)
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"confirmResize": None}), 204)
    await wait_status(h, sid, "ACTIVE")

    # stop and start: the persistent definition keeps it
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"os-stop": None}), 202)
    await wait_status(h, sid, "SHUTOFF")
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"os-start": None}), 202)
    await wait_status(h, sid, "ACTIVE")
    assert h.volumes.volumes[vol]["path"] in await domain_disks(h, sid)


async def test_rebuild_with_another_image_is_refused(cloud):
    h = cloud
    vol = h.volumes.add(h.alice_project, 1, image_id=h.image)
    sid = await boot(h, bfv_body(h, [{"boot_index": 0, "uuid": vol, "source_type": "volume",
                                      "destination_type": "volume"}]))
    await wait_status(h, sid, "ACTIVE")
    other = await ok(await h.http.post("/image/v2/images", headers=h.alice, json={
        "name": "other", "disk_format": "raw", "container_format": "bare"}), 201)
    await ok(await h.http.put(f"/image/v2/images/{other['id']}/file", data=b"\0" * 4096,
                              headers={**h.alice, "Content-Type": "application/octet-stream"}), 204)
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                             json={"rebuild": {"imageRef": other["id"]}})
    body = await ok(resp, 400)
    assert "different image for a volume-backed server" in body["badRequest"]["message"]
    # no image of it either (yet): a clear 400, not an image that fails later
    resp = await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                             json={"createImage": {"name": "snap"}})
    assert "volume-backed" in (await ok(resp, 400))["badRequest"]["message"]


async def test_boot_from_snapshot_and_blank_with_extra_volumes(cloud):
    h = cloud
    snap = str(uuid.uuid4())
    h.volumes.snapshots.add(snap)
    sid = await boot(h, bfv_body(h, [
        {"boot_index": 0, "uuid": snap, "source_type": "snapshot", "destination_type": "volume",
         "delete_on_termination": True},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
         "tag": "data", "volume_type": "__DEFAULT__"}]))
    await wait_status(h, sid, "ACTIVE")
    root, blank = await bdm_rows(h, sid)
    assert (root["device_name"], blank["device_name"]) == ("/dev/vda", "/dev/vdb")
    assert blank["tag"] == "data" and blank["volume_type"] == "__DEFAULT__"
    for row in (root, blank):
        assert h.volumes.volumes[str(row["volume_id"])]["status"] == "in-use"
    xml = await domain_disks(h, sid)
    assert "<target dev='vdb'" in xml or '<target dev="vdb"' in xml


async def test_image_server_with_a_blank_volume_keeps_its_local_root(cloud):
    h = cloud
    sid = await boot(h, bfv_body(h, [
        {"boot_index": 0, "uuid": h.image, "source_type": "image", "destination_type": "local"},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1}],
        imageRef=h.image))
    server = await wait_status(h, sid, "ACTIVE")
    assert server["image"]["id"] == h.image
    rows = await bdm_rows(h, sid)
    assert [(r["source_type"], r["destination_type"]) for r in rows] == [("image", "local"), ("blank", "volume")]
    assert h.volumes.volumes[str(rows[1]["volume_id"])]["path"] in await domain_disks(h, sid)
    # a rebuild makes the local disk anew and keeps the volume
    await ok(await h.http.post(f"{V}/servers/{sid}/action", headers={**h.alice, **MV},
                               json={"rebuild": {"imageRef": h.image}}), 202)
    await until(lambda: show_server(h, sid), lambda s: s["OS-EXT-STS:task_state"] is None
                and s["status"] == "ACTIVE", what="rebuilt")
    xml = await domain_disks(h, sid)
    assert h.volumes.volumes[str(rows[1]["volume_id"])]["path"] in xml and "/disk'" in xml


@pytest.mark.parametrize("bdms, extra, message", [
    ([{"boot_index": 0, "source_type": "image", "destination_type": "volume"}], {}, "Missing device UUID"),
    ([{"boot_index": 0, "uuid": "IMAGE", "source_type": "image", "destination_type": "volume"}], {},
     "non-zero size"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume"}], {}, "non-zero size"),
    ([{"boot_index": 1, "source_type": "blank", "destination_type": "volume", "volume_size": 1}], {},
     "Boot sequence"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1},
      {"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1}], {},
     "Boot sequence"),
    ([{"boot_index": 0, "uuid": str(uuid.uuid4()), "source_type": "volume", "destination_type": "volume"}], {},
     "failed to get volume"),
    ([{"boot_index": 0, "uuid": "IMAGE", "source_type": "image", "destination_type": "volume",
       "volume_size": "x"}], {}, "not an integer"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
       "volume_type": "fast"}], {"mv": "2.66"}, "volume_type"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
       "tag": "x"}], {"mv": "2.41"}, "tag"),
    ([], {}, "Missing imageRef"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 2**31}], {},
     "out of range"),
    ([{"boot_index": 0, "source_type": "blank", "destination_type": "volume", "volume_size": 1}]
     + [{"source_type": "blank", "destination_type": "volume", "volume_size": 1}] * 22, {}, "at most 22"),
    ([{"boot_index": 0, "uuid": str(uuid.uuid4()), "source_type": "volume", "destination_type": "local"}], {},
     "only supported as the boot image"),
])
async def test_bad_mappings_are_400(cloud, bdms, extra, message):
    h = cloud
    for bdm in bdms:
        if bdm.get("uuid") == "IMAGE":
            bdm["uuid"] = h.image
    headers = {**h.alice, "OpenStack-API-Version": f"compute {extra.get('mv', '2.67')}"}
    resp = await h.http.post(V + "/servers", headers=headers, json=bfv_body(h, bdms))
    body = await ok(resp, 400)
    assert message in body["badRequest"]["message"]


async def test_volume_checks(cloud):
    h = cloud
    in_use = h.volumes.add(h.alice_project, status="in-use")
    bobs = h.volumes.add("proj-b")
    not_bootable = h.volumes.add(h.alice_project, bootable=False)
    free = h.volumes.add(h.alice_project)
    for vol, message in ((in_use, "Invalid volume"), (bobs, "failed to get volume"),
                         (not_bootable, "is not bootable")):
        body = await ok(await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
            {"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"}])), 400)
        assert message in body["badRequest"]["message"]
    body = await ok(await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
        {"boot_index": 0, "uuid": free, "source_type": "volume", "destination_type": "volume"}],
        min_count=2)), 400)
    assert "multiple instances" in body["badRequest"]["message"]
    # a request refused after the reservation (over the cores quota, counted under the lock)
    # gives the volume back
    many_cores = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1.cores", "ram": 512, "vcpus": 64, "disk": 1}}), 200)
    body = bfv_body(h, [{"boot_index": 0, "uuid": free, "source_type": "volume", "destination_type": "volume"}])
    body["server"]["flavorRef"] = many_cores["flavor"]["id"]
    await ok(await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=body), 403)
    assert h.volumes.volumes[free]["status"] == "available" and not h.volumes.attachments


async def test_failed_build_lets_go_of_its_volumes(cloud):
    h = cloud
    h.volumes.fail_blank = True
    vol = h.volumes.add(h.alice_project)
    sid = await boot(h, bfv_body(h, [
        {"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
         "delete_on_termination": True}]))
    await wait_status(h, sid, "ERROR")
    assert h.volumes.volumes[vol]["status"] == "available"
    assert not h.volumes.attachments
    # the blank one made for it went with it, and was made once although two hosts tried
    assert list(h.volumes.volumes) == [vol] and len(h.volumes.created) == 1


async def test_no_valid_host_gives_the_volume_back(cloud):
    h = cloud
    huge = await ok(await h.http.post(V + "/flavors", headers=h.admin, json={"flavor": {
        "name": "m1.huge", "ram": 8192, "vcpus": 1, "disk": 1}}), 200)
    vol = h.volumes.add(h.alice_project)
    body = bfv_body(h, [{"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"}])
    body["server"]["flavorRef"] = huge["flavor"]["id"]
    sid = await boot(h, body)
    await wait_status(h, sid, "ERROR")
    assert h.volumes.volumes[vol]["status"] == "available" and not h.volumes.attachments
    resp = await h.http.delete(f"{V}/servers/{sid}", headers=h.alice)
    await ok(resp, 204)
    await wait_status(h, sid, "GONE")


@pytest.mark.skipif(importlib.util.find_spec("nova_async.compute.volumes") is None,
                    reason="terminate lets go of volumes in compute/volumes.py (branch i22-c)")
async def test_delete_keeps_volumes_not_marked_for_deletion(cloud):
    """(volumes_attached and terminate are branch i22-c's: this runs once both are merged)"""
    h = cloud
    vol = h.volumes.add(h.alice_project)
    sid = await boot(h, bfv_body(h, [
        {"boot_index": 0, "uuid": vol, "source_type": "volume", "destination_type": "volume"},
        {"boot_index": -1, "source_type": "blank", "destination_type": "volume", "volume_size": 1,
         "delete_on_termination": True}]))
    server = await wait_status(h, sid, "ACTIVE")
    [made] = h.volumes.created
    assert sorted(server["os-extended-volumes:volumes_attached"], key=lambda v: v["id"]) == sorted(
        [{"id": vol, "delete_on_termination": False}, {"id": made, "delete_on_termination": True}],
        key=lambda v: v["id"])
    await ok(await h.http.delete(f"{V}/servers/{sid}", headers=h.alice), 204)
    await wait_status(h, sid, "GONE")
    assert h.volumes.volumes[vol]["status"] == "available"
    assert made not in h.volumes.volumes


async def test_what_openstack_server_create_sends_with_swap(cloud):
    """`openstack server create --image … --swap 512`: image → local, and blank → local swap."""
    h = cloud
    sid = await boot(h, bfv_body(h, [
        {"uuid": h.image, "boot_index": 0, "source_type": "image", "destination_type": "local",
         "delete_on_termination": True},
        {"boot_index": -1, "source_type": "blank", "destination_type": "local", "guest_format": "swap",
         "volume_size": 512, "delete_on_termination": True}], imageRef=h.image))
    server = await wait_status(h, sid, "ACTIVE")
    assert server["image"]["id"] == h.image
    rows = await bdm_rows(h, sid)
    assert [(r["source_type"], r["destination_type"], r["device_name"]) for r in rows] == [
        ("image", "local", "/dev/vda"), ("blank", "local", None)]


async def test_multi_create_gives_each_instance_its_own_volume(cloud):
    h = cloud
    resp = await h.http.post(V + "/servers", headers={**h.alice, **BFV_MV}, json=bfv_body(h, [
        {"boot_index": 0, "uuid": h.image, "source_type": "image", "destination_type": "volume",
         "volume_size": 1}], min_count=2, return_reservation_id=True))
    reservation = (await ok(resp, 202))["reservation_id"]
    listed = await ok(await h.http.get(f"{V}/servers?reservation_id={reservation}", headers=h.alice), 200)
    ids = [s["id"] for s in listed["servers"]]
    assert len(ids) == 2
    volumes = set()
    for sid in ids:
        await wait_status(h, sid, "ACTIVE")
        [bdm] = await bdm_rows(h, sid)
        volumes.add(str(bdm["volume_id"]))
    assert len(volumes) == 2 and all(h.volumes.volumes[v]["status"] == "in-use" for v in volumes)
