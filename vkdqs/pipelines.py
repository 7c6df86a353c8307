"""Thin helpers that create pipeline-related Vulkan objects, each owned by the Device.

Each function makes one object, wraps its ``vkCreate*`` call with context for errors, and
returns a :class:`~vkdqs.device.DeviceObject` whose ``destroy()`` (or ``Device.close()``) ends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import vulkan as vk

from .device import Device, DeviceObject
from .shaders import SpecConstants, spirv
from .vkcall import vk_errors


def shader_module(device: Device, name: str) -> DeviceObject:
    code = spirv(name)
    info = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
    with vk_errors(f"creating shader module {name!r}"):
        handle = vk.vkCreateShaderModule(device.handle, info, None)
    return device.own("shader module", handle, name, vk.vkDestroyShaderModule)


def descriptor_set_layout(
    device: Device, bindings: Sequence[tuple[int, int, int]], *, label: str
) -> DeviceObject:
    """``bindings``: (binding, VkDescriptorType, VkShaderStageFlags), one descriptor each."""
    entries = [
        vk.VkDescriptorSetLayoutBinding(
            binding=b, descriptorType=t, descriptorCount=1, stageFlags=stages
        )
        for b, t, stages in bindings
    ]
    info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(entries), pBindings=entries)
    with vk_errors(f"creating descriptor set layout {label!r}"):
        handle = vk.vkCreateDescriptorSetLayout(device.handle, info, None)
    return device.own("descriptor set layout", handle, label, vk.vkDestroyDescriptorSetLayout)


def descriptor_pool(
    device: Device, bindings: Sequence[tuple[int, int, int]], *, sets: int, label: str
) -> DeviceObject:
    """A pool with room for ``sets`` sets of the given bindings (sets are freed with the pool)."""
    counts: dict[int, int] = {}
    for _, t, _ in bindings:
        counts[t] = counts.get(t, 0) + sets
    sizes = [vk.VkDescriptorPoolSize(type=t, descriptorCount=n) for t, n in counts.items()]
    info = vk.VkDescriptorPoolCreateInfo(maxSets=sets, poolSizeCount=len(sizes), pPoolSizes=sizes)
    with vk_errors(f"creating descriptor pool {label!r}"):
        handle = vk.vkCreateDescriptorPool(device.handle, info, None)
    return device.own("descriptor pool", handle, label, vk.vkDestroyDescriptorPool)


def allocate_descriptor_set(device: Device, pool: DeviceObject, layout: DeviceObject) -> Any:
    info = vk.VkDescriptorSetAllocateInfo(
        descriptorPool=pool.handle, descriptorSetCount=1, pSetLayouts=[layout.handle]
    )
    with vk_errors(f"allocating a descriptor set from {pool.label!r}"):
        return vk.vkAllocateDescriptorSets(device.handle, info)[0]


def pipeline_layout(
    device: Device, set_layouts: Sequence[DeviceObject], push_size: int, stages: int, *, label: str
) -> DeviceObject:
    ranges = [vk.VkPushConstantRange(stageFlags=stages, offset=0, size=push_size)]
    info = vk.VkPipelineLayoutCreateInfo(
        setLayoutCount=len(set_layouts),
        pSetLayouts=[s.handle for s in set_layouts],
        pushConstantRangeCount=1 if push_size else 0,
        pPushConstantRanges=ranges if push_size else None,
    )
    with vk_errors(f"creating pipeline layout {label!r}"):
        handle = vk.vkCreatePipelineLayout(device.handle, info, None)
    return device.own("pipeline layout", handle, label, vk.vkDestroyPipelineLayout)


def compute_pipeline(
    device: Device,
    layout: DeviceObject,
    module: DeviceObject,
    spec: SpecConstants,
    *,
    label: str,
) -> DeviceObject:
    spec_info = spec.info()
    stage = vk.VkPipelineShaderStageCreateInfo(
        stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
        module=module.handle,
        pName="main",
        pSpecializationInfo=spec_info,
    )
    info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout.handle)
    with vk_errors(f"creating compute pipeline {label!r}"):
        handle = vk.vkCreateComputePipelines(device.handle, None, 1, [info], None)[0]
    return device.own("pipeline", handle, label, vk.vkDestroyPipeline)


def attachmentless_render_pass(device: Device, *, label: str) -> DeviceObject:
    """A render pass with no attachments, for draws whose only output is a storage buffer."""
    subpass = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS)
    info = vk.VkRenderPassCreateInfo(subpassCount=1, pSubpasses=[subpass])
    with vk_errors(f"creating render pass {label!r}"):
        handle = vk.vkCreateRenderPass(device.handle, info, None)
    return device.own("render pass", handle, label, vk.vkDestroyRenderPass)


def attachmentless_framebuffer(
    device: Device, render_pass: DeviceObject, *, label: str
) -> DeviceObject:
    info = vk.VkFramebufferCreateInfo(
        renderPass=render_pass.handle, attachmentCount=0, width=1, height=1, layers=1
    )
    with vk_errors(f"creating framebuffer {label!r}"):
        handle = vk.vkCreateFramebuffer(device.handle, info, None)
    return device.own("framebuffer", handle, label, vk.vkDestroyFramebuffer)


def vertex_inputs(attributes: Sequence[tuple[int, int, int]]) -> Any:
    """Vertex input state with one buffer binding per attribute: (location, format, stride)."""
    bindings = [
        vk.VkVertexInputBindingDescription(
            binding=loc, stride=stride, inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX
        )
        for loc, _, stride in attributes
    ]
    attrs = [
        vk.VkVertexInputAttributeDescription(location=loc, binding=loc, format=fmt, offset=0)
        for loc, fmt, _ in attributes
    ]
    return vk.VkPipelineVertexInputStateCreateInfo(
        vertexBindingDescriptionCount=len(bindings),
        pVertexBindingDescriptions=bindings,
        vertexAttributeDescriptionCount=len(attrs),
        pVertexAttributeDescriptions=attrs,
    )


def readback_pipeline(
    device: Device,
    layout: DeviceObject,
    module: DeviceObject,
    spec: SpecConstants,
    render_pass: DeviceObject,
    vertex_input: Any,
    *,
    label: str,
) -> DeviceObject:
    """A vertex-only graphics pipeline drawing points with rasterizer discard."""
    spec_info = spec.info()
    stage = vk.VkPipelineShaderStageCreateInfo(
        stage=vk.VK_SHADER_STAGE_VERTEX_BIT,
        module=module.handle,
        pName="main",
        pSpecializationInfo=spec_info,
    )
    assembly = vk.VkPipelineInputAssemblyStateCreateInfo(
        topology=vk.VK_PRIMITIVE_TOPOLOGY_POINT_LIST
    )
    raster = vk.VkPipelineRasterizationStateCreateInfo(
        rasterizerDiscardEnable=vk.VK_TRUE,
        polygonMode=vk.VK_POLYGON_MODE_FILL,
        cullMode=vk.VK_CULL_MODE_NONE,
        frontFace=vk.VK_FRONT_FACE_COUNTER_CLOCKWISE,
        lineWidth=1.0,
    )
    info = vk.VkGraphicsPipelineCreateInfo(
        stageCount=1,
        pStages=[stage],
        pVertexInputState=vertex_input,
        pInputAssemblyState=assembly,
        pRasterizationState=raster,
        layout=layout.handle,
        renderPass=render_pass.handle,
        subpass=0,
    )
    with vk_errors(f"creating graphics pipeline {label!r}"):
        handle = vk.vkCreateGraphicsPipelines(device.handle, None, 1, [info], None)[0]
    return device.own("pipeline", handle, label, vk.vkDestroyPipeline)


def buffer_view(
    device: Device, buffer: DeviceObject, fmt: int, size: int, *, label: str
) -> DeviceObject:
    info = vk.VkBufferViewCreateInfo(buffer=buffer.handle, format=fmt, offset=0, range=size)
    with vk_errors(f"creating buffer view {label!r}"):
        handle = vk.vkCreateBufferView(device.handle, info, None)
    return device.own("buffer view", handle, label, vk.vkDestroyBufferView)
