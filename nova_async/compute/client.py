"""The typed client conductor and API use to reach a compute host."""

from __future__ import annotations

from nova_async.bus import Bus
from nova_async.common.context import RequestContext
from nova_async.compute import messages as m
from nova_async.scheduler.messages import Destination

# A console read is a file read on the host; an answer slower than this means it is down.
CONSOLE_TIMEOUT = 30.0


def topic(host: str) -> str:
    return f"compute.{host}"


class ComputeClient:
    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def build_and_run(self, host: str, node: str, instance_uuid: str, alternates: list[Destination],
                            context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.BuildAndRunInstance(instance_uuid=instance_uuid, node=node,
                                                               alternates=alternates), context=context)

    async def terminate(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.TerminateInstance(instance_uuid=instance_uuid), context=context)

    async def power_action(self, host: str, instance_uuid: str, action: m.PowerOp,
                           reboot_type: m.RebootType = m.RebootType.SOFT,
                           context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.PowerAction(instance_uuid=instance_uuid, action=action,
                                                       reboot_type=reboot_type), context=context)

    async def rebuild(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.RebuildInstance(instance_uuid=instance_uuid), context=context)

    async def resize_step(self, host: str, instance_uuid: str, migration_uuid: str, step: m.ResizeStepName,
                          context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.ResizeStep(instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                                                      step=step), context=context)

    async def snapshot(self, host: str, instance_uuid: str, image_id: str,
                       context: RequestContext | None = None, *, rotation: int | None = None) -> None:
        await self.bus.cast(topic(host), m.SnapshotInstance(instance_uuid=instance_uuid, image_id=image_id,
                                                            rotation=rotation), context=context)

    async def shelve(self, host: str, instance_uuid: str, image_id: str,
                     context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.ShelveInstance(instance_uuid=instance_uuid, image_id=image_id),
                            context=context)

    async def shelve_offload(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.ShelveOffloadInstance(instance_uuid=instance_uuid), context=context)

    async def unshelve(self, host: str, instance_uuid: str, node: str = "",
                       context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.UnshelveInstance(instance_uuid=instance_uuid, node=node), context=context)

    async def rescue(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.RescueInstance(instance_uuid=instance_uuid), context=context)

    async def unrescue(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.UnrescueInstance(instance_uuid=instance_uuid), context=context)

    async def console_output(self, host: str, instance_uuid: str, lines: int | None = None,
                             context: RequestContext | None = None) -> str:
        """The tail of the guest's serial console, read on the host that runs it."""
        reply = await self.bus.call(topic(host), m.GetConsoleOutput(instance_uuid=instance_uuid, lines=lines),
                                    context=context, timeout=CONSOLE_TIMEOUT)
        assert isinstance(reply, m.ConsoleOutput)
        return reply.output

    async def console_endpoint(self, host: str, instance_uuid: str, kind: m.ConsoleKind,
                               context: RequestContext | None = None) -> m.ConsoleEndpoint:
        """Where the console proxy connects to the running guest's `kind` console."""
        reply = await self.bus.call(topic(host), m.GetConsoleEndpoint(instance_uuid=instance_uuid, kind=kind),
                                    context=context, timeout=CONSOLE_TIMEOUT)
        assert isinstance(reply, m.ConsoleEndpoint)
        return reply

    async def diagnostics(self, host: str, instance_uuid: str,
                          context: RequestContext | None = None) -> m.Diagnostics:
        """The running guest's statistics, read from its hypervisor."""
        reply = await self.bus.call(topic(host), m.GetDiagnostics(instance_uuid=instance_uuid),
                                    context=context, timeout=CONSOLE_TIMEOUT)
        assert isinstance(reply, m.Diagnostics)
        return reply

    async def attach_volume(self, host: str, instance_uuid: str, volume_id: str, attachment_id: str, bdm_id: str,
                            context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.AttachVolume(instance_uuid=instance_uuid, volume_id=volume_id,
                                                        attachment_id=attachment_id, bdm_id=bdm_id),
                            context=context)

    async def detach_volume(self, host: str, instance_uuid: str, volume_id: str, attachment_id: str,
                            context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.DetachVolume(instance_uuid=instance_uuid, volume_id=volume_id,
                                                        attachment_id=attachment_id), context=context)

    async def extend_volume(self, host: str, instance_uuid: str, volume_id: str, size_gb: int,
                            context: RequestContext | None = None) -> None:
        await self.bus.cast(topic(host), m.ExtendVolume(instance_uuid=instance_uuid, volume_id=volume_id,
                                                        size_gb=size_gb), context=context)
