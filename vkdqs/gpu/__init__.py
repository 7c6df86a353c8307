"""The Vulkan plumbing: a thin layer over the ``vulkan`` binding that skinning and rendering
build on.

One convention: every Vulkan object is a :class:`DeviceObject` subclass made by its constructor,
which takes the :class:`Device` first (``Buffer(device, size, usage, label=...)``); the Device
owns it until ``destroy()``, its owner's ``close()`` or ``Device.close()``. Pipelines, render
passes and framebuffers are built in :mod:`vkdqs.gpu.pipelines` from frozen descriptions that
double as cache keys. Nothing here knows about skinning; the shader interface (bindings,
formats, strides) comes from :mod:`vkdqs.shader_interface`.

Modules: ``calls`` (errors of Vulkan calls), ``device``, ``objects`` (DeviceObject,
ResourceOwner), ``memory`` (usage classes, the allocator, Buffer, BufferView, memory profiles),
``images``, ``commands`` (CommandBuffer, Fence, Semaphore), ``descriptors``, ``queries``
(timestamp QueryPool), ``shaders`` (SPIR-V, ShaderModule), ``pipelines``, ``swapchain``.
"""

# calls first: it imports the `vulkan` binding and turns a missing loader into a CapabilityError.
from . import calls as calls
from .app_buffer import AppBuffer
from .commands import (
    FENCE_TIMEOUT_NS,
    CommandBuffer,
    Fence,
    Semaphore,
    memory_barrier,
    push_constants,
)
from .compute_pass import ComputePass, compute_barrier
from .descriptors import (
    BufferWrite,
    DescriptorPool,
    DescriptorSetLayout,
    ImageWrite,
    TexelWrite,
    write_descriptors,
)
from .device import VALIDATION_LAYER, Device, DeviceInfo, ValidationMessage, available_layers
from .host_texels import HostTexels
from .images import GpuSampler, Image, ImageView, Texture, can_blit_mips, pick_depth_format
from .memory import (
    Buffer,
    BufferView,
    MemoryProfile,
    batched_uploads,
    memory_profiles,
    record_copies,
    texel_buffer,
)
from .objects import DeviceObject, ResourceOwner
from .pipelines import (
    ComputePipeline,
    ComputePipelineDesc,
    Framebuffer,
    GraphicsPipeline,
    GraphicsPipelineDesc,
    PipelineCache,
    PipelineLayout,
    RenderPass,
    RenderPassDesc,
)
from .queries import QueryPool
from .shaders import ShaderModule, SpecConstants, spirv, spirv_dir
from .swapchain import Surface, Swapchain, SwapchainDesc

__all__ = [
    "FENCE_TIMEOUT_NS",
    "VALIDATION_LAYER",
    "AppBuffer",
    "Buffer",
    "BufferView",
    "BufferWrite",
    "CommandBuffer",
    "ComputePass",
    "ComputePipeline",
    "ComputePipelineDesc",
    "DescriptorPool",
    "DescriptorSetLayout",
    "Device",
    "DeviceInfo",
    "DeviceObject",
    "Fence",
    "Framebuffer",
    "GpuSampler",
    "GraphicsPipeline",
    "GraphicsPipelineDesc",
    "HostTexels",
    "Image",
    "ImageView",
    "ImageWrite",
    "MemoryProfile",
    "PipelineCache",
    "PipelineLayout",
    "QueryPool",
    "RenderPass",
    "RenderPassDesc",
    "ResourceOwner",
    "Semaphore",
    "ShaderModule",
    "SpecConstants",
    "Surface",
    "Swapchain",
    "SwapchainDesc",
    "TexelWrite",
    "Texture",
    "ValidationMessage",
    "available_layers",
    "batched_uploads",
    "can_blit_mips",
    "compute_barrier",
    "memory_barrier",
    "memory_profiles",
    "pick_depth_format",
    "push_constants",
    "record_copies",
    "spirv",
    "spirv_dir",
    "texel_buffer",
    "write_descriptors",
]
