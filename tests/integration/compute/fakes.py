"""Stand-ins for the image, network and placement roles, speaking their bus contracts only.

Compute's tests must not depend on how (or whether yet) those roles are built. Each fake is
a Role consuming its topic on the harness's bus, answering from its contract's messages and
recording what it was asked, so a test can check that compute freed ports and allocations.
Swapped in through the supervisor's role table (see conftest.py)."""

from __future__ import annotations

import hashlib
import uuid

from nova_async.bus import Message
from nova_async.common.context import RequestContext
from nova_async.common.errors import NotFound, Unavailable
from nova_async.image import messages as im
from nova_async.network import messages as nm
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
