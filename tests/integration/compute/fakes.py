"""Stand-ins for the image, network, placement and volume roles, speaking their bus contracts only.

Compute's tests must not depend on how (or whether yet) those roles are built. Each fake is
a Role consuming its topic on the harness's bus, answering from its contract's messages and
recording what it was asked, so a test can check that compute freed ports and allocations.
Swapped in through the supervisor's role table (see conftest.py)."""

from __future__ import annotations

import hashlib
import json
import uuid

from nova_async.bus import Message
from nova_async.common.context import RequestContext
from nova_async.common.errors import Conflict, NotFound, Unavailable
from nova_async.image import messages as im
from nova_async.network import messages as nm
from nova_async.volume import messages as vm
from nova_async.role import Role

MISSING_IMAGE = "00000000-0000-4000-8000-00000000dead"
IMAGE_ID = "3b4a9b0e-8f35-4c3e-9b7e-0c1f1e2d3a4b"
BROKEN_NETWORK = "net-gives-bad-mac"  # its ports come back with a MAC no guest can have


class _Fake(Role):
    topic = ""

    def __init__(self, deps) -> None:
        super().__init__(deps)
        self.calls: list[Message] = []

    async def run(self) -> None:
        self.ready.set()
        await self.serve(self.topic, self._handle)

    async def _handle(self, msg: Message, context: RequestContext | None) -> Message | None:
        self.calls.append(msg)
        return await self.answer(msg)

    async def answer(self, msg: Message) -> Message | None:
        return None

    def asked(self, kind: type[Message], **fields) -> list[Message]:
        return [m for m in self.calls if isinstance(m, kind)
                and all(getattr(m, k) == v for k, v in fields.items())]


class FakeImage(_Fake):
    name = topic = "image"

    async def run(self) -> None:
        images = self.settings.state_path / "fake-images"
        images.mkdir(parents=True, exist_ok=True)
        self.path = images / "tiny.raw"
        self.path.write_bytes(b"\x00" * 512 * 1024)
        await super().run()

    async def answer(self, msg: Message) -> Message | None:
        assert isinstance(msg, im.GetImage)
        if msg.image_id == MISSING_IMAGE:
            raise NotFound(f"Image {msg.image_id} could not be found.")
        return im.ImageInfo(id=msg.image_id, name="tiny", status="active", size=512 * 1024,
                            disk_format="raw", container_format="bare", min_disk=0, min_ram=0,
                            properties={}, path=str(self.path))


def mac_for(instance_uuid: str) -> str:
    digest = hashlib.sha256(instance_uuid.encode()).digest()
    return "fa:16:3e:" + ":".join(f"{b:02x}" for b in digest[:3])


class FakeNetwork(_Fake):
    name = topic = "network"

    def __init__(self, deps) -> None:
        super().__init__(deps)
        self.refuse_deallocate: set[str] = set()  # instance uuids whose ports "cannot" be freed

    async def answer(self, msg: Message) -> Message | None:
        if isinstance(msg, nm.DeallocatePorts) and msg.instance_uuid in self.refuse_deallocate:
            raise Unavailable("the network service is having a bad day")
        if isinstance(msg, nm.AllocatePorts):
            port = str(uuid.uuid5(uuid.NAMESPACE_URL, msg.instance_uuid))  # idempotent, as promised
            broken = any(r.network_id == BROKEN_NETWORK for r in msg.requested)
            return nm.PortList(vifs=[nm.Vif(
                port_id=port, network_id="net-1", network_name="private",
                mac_address="not-a-mac" if broken else mac_for(msg.instance_uuid),
                ips=[nm.IpInfo(address="10.0.0.5", version=4, subnet_id="sub-1", cidr="10.0.0.0/24",
                               gateway="10.0.0.1")],
                bridge="br-test", tap=f"tap{port[:11]}")])
        return None


class FakePlacement(_Fake):
    name = topic = "placement"


class FakeVolume(_Fake):
    """The volume role's bus contract (volume/messages.py) over sparse files in the state
    directory: volumes a test adds (`add`), reserved, connected, completed, detached and
    deleted as the real role promises, with the states it promises. Its state is kept in a
    file beside them, so that it outlives a restart of the roles (recovery tests)."""

    name = topic = "volume"

    @property
    def _state_file(self):
        return self.settings.state_path / "fake-volumes" / "state.json"

    async def run(self) -> None:
        if self._state_file.exists():
            saved = json.loads(self._state_file.read_text())
            self.volumes, self.attachments = saved["volumes"], saved["attachments"]
        await super().run()

    def save(self) -> None:
        self._state_file.parent.mkdir(parents=True, exist_ok=True)
        self._state_file.write_text(json.dumps({"volumes": self.volumes, "attachments": self.attachments}))

    async def _handle(self, msg: Message, context: RequestContext | None) -> Message | None:
        try:
            return await super()._handle(msg, context)
        finally:
            self.save()

    def __init__(self, deps) -> None:
        super().__init__(deps)
        self.volumes: dict[str, dict] = {}       # id → {"project_id", "size", "status", "path"}
        self.attachments: dict[str, dict] = {}   # id → {"volume_id", "instance_uuid", "status", "connection"}
        self.refuse_connect: set[str] = set()    # volume ids whose connection "fails"

    def add(self, project_id: str, size: int = 1) -> str:
        volume_id = str(uuid.uuid4())
        root = self.settings.state_path / "fake-volumes"
        root.mkdir(parents=True, exist_ok=True)
        path = root / volume_id
        with open(path, "wb") as f:
            f.truncate(size * 1024 ** 3)
        self.volumes[volume_id] = {"project_id": project_id, "size": size, "status": "available", "path": str(path)}
        self.save()
        return volume_id

    def _info(self, volume_id: str) -> vm.VolumeInfo:
        v = self.volumes[volume_id]
        return vm.VolumeInfo(id=volume_id, project_id=v["project_id"], size=v["size"], status=v["status"])

    def _attachment(self, attachment_id: str) -> dict:
        if attachment_id not in self.attachments:
            raise NotFound(f"Attachment {attachment_id} could not be found.")
        return self.attachments[attachment_id]

    async def answer(self, msg: Message) -> Message | None:
        if isinstance(msg, vm.GetVolume):
            v = self.volumes.get(msg.volume_id)
            if v is None or not (msg.is_admin or v["project_id"] == msg.project_id):
                raise NotFound(f"Volume {msg.volume_id} could not be found.")
            return self._info(msg.volume_id)
        if isinstance(msg, vm.ReserveVolume):
            v = self.volumes.get(msg.volume_id)
            if v is None or not (msg.is_admin or v["project_id"] == msg.project_id):
                raise NotFound(f"Volume {msg.volume_id} could not be found.")
            if v["status"] != "available":
                raise Conflict(f"Volume {msg.volume_id} status must be available, but it is {v['status']}.")
            v["status"] = "reserved"
            attachment_id = str(uuid.uuid4())
            self.attachments[attachment_id] = {"volume_id": msg.volume_id, "instance_uuid": msg.instance_uuid,
                                               "status": "reserved", "connection": {}}
            return vm.AttachmentInfo(attachment_id=attachment_id, volume=self._info(msg.volume_id))
        if isinstance(msg, vm.ConnectAttachment):
            a = self._attachment(msg.attachment_id)
            if a["volume_id"] in self.refuse_connect:
                raise Unavailable("the volume's backend is having a bad day")
            v = self.volumes[a["volume_id"]]
            v["status"], a["status"] = "attaching", "attaching"
            info = vm.ConnectionInfo(driver_volume_type="file", device_path=v["path"], disk_kind="file",
                                     volume_id=a["volume_id"])
            a["connection"] = info.as_cinder()
            return info
        if isinstance(msg, vm.CompleteAttachment):
            a = self._attachment(msg.attachment_id)
            a["status"] = "attached"
            self.volumes[a["volume_id"]]["status"] = "in-use"
            return None
        if isinstance(msg, vm.BeginDetach):
            a = self._attachment(msg.attachment_id)
            v = self.volumes[a["volume_id"]]
            if v["status"] != "in-use":
                raise Conflict(f"Volume {a['volume_id']} status must be in-use, but it is {v['status']}.")
            v["status"] = "detaching"
            return None
        if isinstance(msg, vm.RollDetachingBack):
            a = self._attachment(msg.attachment_id)
            self.volumes[a["volume_id"]]["status"] = "in-use"
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
                vm.AttachmentRecord(attachment_id=aid, volume_id=a["volume_id"], status=a["status"],
                                    volume_status=self.volumes[a["volume_id"]]["status"],
                                    connection_info=a["connection"])
                for aid, a in self.attachments.items() if a["instance_uuid"] == msg.instance_uuid])
        return None
