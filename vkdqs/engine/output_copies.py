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
from ..gpu import Buffer, CommandBuffer, record_copies
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
        #: key -> (command buffer, the buffers and size it was recorded with; kept, so an id
        #: in a key is not reused while it is recorded)
        self._recorded: dict[tuple, tuple[CommandBuffer, tuple]] = {}

    def _command(
        self, key: tuple, copies: list, before: tuple[int, int], label: str
    ) -> CommandBuffer:
        """The command buffer recording ``copies`` out of the Skinner's output after its
        shaders wrote it, before ``before``: recorded again only when what it copies changed."""
        state = tuple((src, dst, nbytes) for src, dst, _, _, nbytes in copies)
        found = self._recorded.get(key)
        if found is not None and found[1] == state:
            return found[0]
        skinner = self.skinner
        cmd_buffer = (
            found[0]
            if found is not None
            else skinner.own(CommandBuffer(skinner.device, label=label, fence=False))
        )
        shaders = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT
        record_copies(
            cmd_buffer.begin(),
            copies,
            after=(shaders, vk.VK_ACCESS_SHADER_WRITE_BIT),
            before=before,
        )
        cmd_buffer.end()
        self._recorded[key] = (cmd_buffer, state)
        return cmd_buffer

    def readback(self, host: Buffer, nbytes: int) -> CommandBuffer:
        """The command buffer that copies the first ``nbytes`` of the Skinner's output into
        ``host``, then makes them visible to host reads."""
        out = self.skinner.out_buffer
        assert out is not None
        host_read = (vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        copies = [(out, host, 0, 0, nbytes)]
        return self._command(("readback",), copies, host_read, "skinner readback")

    def command(self, positions: Buffer, normals: Buffer) -> CommandBuffer:
        """The command buffer that copies pose 0's positions and normals out of the Skinner's
        output into ``positions`` and ``normals``, then makes them visible to vertex input."""
        out = self.skinner.out_buffer
        assert out is not None
        size = 12 * self.skinner.vertex_count
        # the output's layout: a batch of one pose's positions, then its normals
        copies = [(out, positions, 0, 0, size), (out, normals, size, 0, size)]
        vertex_input = (
            vk.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT,
            vk.VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT,
        )
        key = (id(positions), id(normals))
        return self._command(key, copies, vertex_input, "skinner copies")


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
