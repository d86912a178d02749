"""The typed client conductor and API use to reach a compute host.

Every message goes at the version the host's service record says it receives (bus/caps.py),
converted down when the host runs an older release; one the host cannot be told (a new
option it does not know, asked for) fails here, before anything is sent, with a
`version_mismatch` Conflict that names the host."""

from __future__ import annotations

from nova_async.bus import Bus, Message
from nova_async.bus.messages import VERSION_MISMATCH, VersionMismatch
from nova_async.common import errors
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

    async def _cast(self, host: str, msg: Message, context: RequestContext | None) -> None:
        version = await self.bus.caps.cap(host, type(msg))
        try:
            await self.bus.cast(topic(host), msg, context=context, version=version)
        except VersionMismatch as exc:
            raise VersionMismatch(f"compute host {host} runs an older release: {exc.message}") from None

    async def _call(self, host: str, msg: Message, context: RequestContext | None, timeout: float) -> Message | None:
        for attempt in (1, 2):
            version = await self.bus.caps.cap(host, type(msg))
            try:
                return await self.bus.call(topic(host), msg, context=context, timeout=timeout, version=version)
            except VersionMismatch as exc:
                raise VersionMismatch(f"compute host {host} runs an older release: {exc.message}") from None
            except errors.Conflict as exc:
                # The host refused the version its record gave (it restarted at another
                # release since the caps were read): read them again and send once more.
                if exc.code != VERSION_MISMATCH or attempt == 2:
                    raise
                self.bus.caps.forget()
        raise AssertionError("unreachable")

    async def build_and_run(self, host: str, node: str, instance_uuid: str, alternates: list[Destination],
                            context: RequestContext | None = None) -> None:
        await self._cast(host, m.BuildAndRunInstance(instance_uuid=instance_uuid, node=node,
                                                     alternates=alternates), context)

    async def terminate(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self._cast(host, m.TerminateInstance(instance_uuid=instance_uuid), context)

    async def power_action(self, host: str, instance_uuid: str, action: m.PowerOp,
                           reboot_type: m.RebootType = m.RebootType.SOFT,
                           context: RequestContext | None = None) -> None:
        await self._cast(host, m.PowerAction(instance_uuid=instance_uuid, action=action,
                                             reboot_type=reboot_type), context)

    async def rebuild(self, host: str, instance_uuid: str, context: RequestContext | None = None, *,
                      preserve_ephemeral: bool = False) -> None:
        await self._cast(host, m.RebuildInstance(instance_uuid=instance_uuid, preserve_ephemeral=preserve_ephemeral),
                         context)

    async def resize_step(self, host: str, instance_uuid: str, migration_uuid: str, step: m.ResizeStepName,
                          context: RequestContext | None = None) -> None:
        await self._cast(host, m.ResizeStep(instance_uuid=instance_uuid, migration_uuid=migration_uuid,
                                            step=step), context)

    async def snapshot(self, host: str, instance_uuid: str, image_id: str,
                       context: RequestContext | None = None, *, rotation: int | None = None) -> None:
        await self._cast(host, m.SnapshotInstance(instance_uuid=instance_uuid, image_id=image_id,
                                                  rotation=rotation), context)

    async def shelve(self, host: str, instance_uuid: str, image_id: str,
                     context: RequestContext | None = None) -> None:
        await self._cast(host, m.ShelveInstance(instance_uuid=instance_uuid, image_id=image_id), context)

    async def shelve_offload(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self._cast(host, m.ShelveOffloadInstance(instance_uuid=instance_uuid), context)

    async def unshelve(self, host: str, instance_uuid: str, node: str = "",
                       context: RequestContext | None = None) -> None:
        await self._cast(host, m.UnshelveInstance(instance_uuid=instance_uuid, node=node), context)

    async def rescue(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self._cast(host, m.RescueInstance(instance_uuid=instance_uuid), context)

    async def unrescue(self, host: str, instance_uuid: str, context: RequestContext | None = None) -> None:
        await self._cast(host, m.UnrescueInstance(instance_uuid=instance_uuid), context)

    async def console_output(self, host: str, instance_uuid: str, lines: int | None = None,
                             context: RequestContext | None = None) -> str:
        """The tail of the guest's serial console, read on the host that runs it."""
        reply = await self._call(host, m.GetConsoleOutput(instance_uuid=instance_uuid, lines=lines), context,
                                 CONSOLE_TIMEOUT)
        assert isinstance(reply, m.ConsoleOutput)
        return reply.output

    async def console_endpoint(self, host: str, instance_uuid: str, kind: m.ConsoleKind,
                               context: RequestContext | None = None) -> m.ConsoleEndpoint:
        """Where the console proxy connects to the running guest's `kind` console."""
        reply = await self._call(host, m.GetConsoleEndpoint(instance_uuid=instance_uuid, kind=kind), context,
                                 CONSOLE_TIMEOUT)
        assert isinstance(reply, m.ConsoleEndpoint)
        return reply

    async def diagnostics(self, host: str, instance_uuid: str,
                          context: RequestContext | None = None) -> m.Diagnostics:
        """The running guest's statistics, read from its hypervisor."""
        reply = await self._call(host, m.GetDiagnostics(instance_uuid=instance_uuid), context, CONSOLE_TIMEOUT)
        assert isinstance(reply, m.Diagnostics)
        return reply

    async def attach_volume(self, host: str, instance_uuid: str, volume_id: str, attachment_id: str, bdm_id: str,
                            context: RequestContext | None = None) -> None:
        await self._cast(host, m.AttachVolume(instance_uuid=instance_uuid, volume_id=volume_id,
                                              attachment_id=attachment_id, bdm_id=bdm_id), context)

    async def detach_volume(self, host: str, instance_uuid: str, volume_id: str, attachment_id: str,
                            context: RequestContext | None = None) -> None:
        await self._cast(host, m.DetachVolume(instance_uuid=instance_uuid, volume_id=volume_id,
                                              attachment_id=attachment_id), context)

    async def extend_volume(self, host: str, instance_uuid: str, volume_id: str, size_gb: int,
                            context: RequestContext | None = None) -> None:
        await self._cast(host, m.ExtendVolume(instance_uuid=instance_uuid, volume_id=volume_id,
                                              size_gb=size_gb), context)
