"""velocity.comp's interface (velocity skinning's pass after the skinning,
:mod:`vkdqs.methods.velocity.passes`): its bindings, texel formats and push constants."""

from __future__ import annotations

from .vulkan_types import Binding, DescriptorType, Format, Stage

#: the Skinner's output (r32f texels, read and written in place)
VELOCITY_VERTICES = 0
#: the mesh's joints and weights (rgba32ui, rgba32f: a texel per 4 influence slots)
VELOCITY_JOINTS_IN = 1
VELOCITY_WEIGHTS_IN = 2
#: each vertex's (floppy, squashy, 0, 0) weights (rgba32f)
VELOCITY_VERTEX_WEIGHTS = 3
#: each pose's joints, VELOCITY_JOINT_TEXELS rgba32f texels a joint
VELOCITY_JOINTS = 4
VELOCITY_JOINT_TEXELS = 6
VELOCITY_BINDINGS = (
    Binding(VELOCITY_VERTICES, DescriptorType.STORAGE_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(VELOCITY_JOINTS_IN, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(VELOCITY_WEIGHTS_IN, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(VELOCITY_VERTEX_WEIGHTS, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
    Binding(VELOCITY_JOINTS, DescriptorType.UNIFORM_TEXEL_BUFFER, Stage.COMPUTE),
)
#: (binding, texel format) of each of its texel buffers (the output's r32f view is the
#: Skinner's: skin.comp's COMPUTE_OUT_FORMAT)
VELOCITY_TEXELS = (
    (VELOCITY_VERTICES, Format.R32_SFLOAT),
    (VELOCITY_JOINTS_IN, Format.R32G32B32A32_UINT),
    (VELOCITY_WEIGHTS_IN, Format.R32G32B32A32_SFLOAT),
    (VELOCITY_VERTEX_WEIGHTS, Format.R32G32B32A32_SFLOAT),
    (VELOCITY_JOINTS, Format.R32G32B32A32_SFLOAT),
)
#: uint vertex_count, positions, joint_base, bone_count; float max_angle
VELOCITY_PUSH_BYTES = 20
#: velocity.comp's ``SLOT_TEXELS``: influence texels a vertex, 1 (4 slots, the default) or 2 (8
#: slots); a constant, so a 4-slot mesh's walk tests one texel's slots, not two
VELOCITY_SLOT_TEXELS_ID = 15
#: velocity.comp's workgroup size (local_size_x)
VELOCITY_LOCAL_SIZE = 64
