"""GPU copies of a Skinner's output into vertex buffers that draw it (:class:`OutputCopies`).

The renderer draws a method without vertex shaders (classic Delta Mush) by "compute, then
draw": its Skinner skins the pose, and one pose's positions and normals ((N, 3) float32 each,
the output's layout) are copied with ``vkCmdCopyBuffer`` into the instance's vertex buffers
of a frame slot, in the Skinner's own submission, which it waits for. Nothing is read back but
the pose's 24-byte box, and no vertex goes through the host (:meth:`Skinner.skin_into`).

Where the output lives in device-local memory the host cannot map (a discrete GPU), results
read back are copied in the same submission into a host-cached ``readback`` buffer
(:meth:`OutputCopies.readback`), which the host reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import shader_interface as si
from ..gpu import Buffer, CommandBuffer, memory_barrier
from ..gpu.calls import vk

if TYPE_CHECKING:
    from .skinner import Skinner

__all__ = ["OutputCopies", "computed_inputs"]


class OutputCopies:
    """One recorded command buffer per destination pair (a frame slot's positions and
    normals), submitted after the Skinner's own in the same submission. Owned by the Skinner
    (closed with it); recorded again when the Skinner makes a new output buffer."""

    def __init__(self, skinner: Skinner) -> None:
        self.skinner = skinner
        #: (id positions, id normals) -> (command buffer, the buffers it was recorded with:
        #: output, positions, normals; kept, so an id is not reused while it is recorded)
        self._recorded: dict[tuple[int, int], tuple[CommandBuffer, Buffer, Buffer, Buffer]] = {}
        #: the readback copy: (command buffer, output, host buffer, bytes) as last recorded
        self._readback: tuple[CommandBuffer, Buffer, Buffer, int] | None = None

    def readback(self, host: Buffer, nbytes: int) -> CommandBuffer:
        """The command buffer that copies the first ``nbytes`` of the Skinner's output (after a
        shader -> transfer barrier) into ``host``, then makes them visible to host reads."""
        skinner = self.skinner
        out = skinner.out_buffer
        assert out is not None
        found = self._readback
        if found is not None and found[1:] == (out, host, nbytes):
            return found[0]
        cmd_buffer = (
            found[0]
            if found is not None
            else skinner.own(CommandBuffer(skinner.device, label="skinner readback", fence=False))
        )
        cmd = cmd_buffer.begin()
        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_TRANSFER_READ_BIT,
        )
        vk.vkCmdCopyBuffer(cmd, out.handle, host.handle, 1, [vk.VkBufferCopy(0, 0, nbytes)])
        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            vk.VK_ACCESS_HOST_READ_BIT,
        )
        cmd_buffer.end()
        self._readback = (cmd_buffer, out, host, nbytes)
        return cmd_buffer

    def command(self, positions: Buffer, normals: Buffer) -> CommandBuffer:
        """The command buffer that copies pose 0's positions and normals out of the Skinner's
        output (after a compute -> transfer barrier) into ``positions`` and ``normals``, then
        makes them visible to vertex input."""
        skinner = self.skinner
        out = skinner.out_buffer
        assert out is not None
        key = (id(positions), id(normals))
        found = self._recorded.get(key)
        if found is not None and found[1:] == (out, positions, normals):
            return found[0]
        cmd_buffer = (
            found[0]
            if found is not None
            else skinner.own(CommandBuffer(skinner.device, label="skinner copies", fence=False))
        )
        cmd = cmd_buffer.begin()
        size = 12 * skinner.vertex_count
        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_TRANSFER_READ_BIT,
        )
        if size:  # the output's layout: a batch of one pose's positions, then its normals
            vk.vkCmdCopyBuffer(cmd, out.handle, positions.handle, 1, [vk.VkBufferCopy(0, 0, size)])
            vk.vkCmdCopyBuffer(cmd, out.handle, normals.handle, 1, [vk.VkBufferCopy(size, 0, size)])
        memory_barrier(
            cmd,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            vk.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT,
            vk.VK_ACCESS_TRANSFER_WRITE_BIT,
            vk.VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT,
        )
        cmd_buffer.end()
        self._recorded[key] = (cmd_buffer, out, positions, normals)
        return cmd_buffer


def computed_inputs(
    inputs: tuple[tuple[int, int], ...], constant: tuple[int, ...]
) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...], tuple[tuple[int, int], ...]]:
    """(vertex inputs, constant inputs, strides) of an instance drawn by "compute, then draw":
    positions and normals are tightly packed R32G32B32 rows (the Skinner's output, copied),
    the unskinned variant's unread joints and weights one constant row."""
    rows = {m.location for m in si.MESH_INPUTS if m.name in ("positions", "normals")}
    unread = tuple(m.location for m in si.MESH_INPUTS if m.influence and not m.eight_only)
    f32x3 = int(si.Format.R32G32B32_SFLOAT)
    out = tuple((loc, f32x3 if loc in rows else fmt) for loc, fmt in inputs)
    return out, (*unread, *constant), tuple((loc, 12) for loc in sorted(rows))
