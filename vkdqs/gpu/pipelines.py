"""Every pipeline, render pass and framebuffer vkdqs makes, each built from a small frozen
description that is also its cache key.

* :class:`RenderPassDesc` -> :class:`RenderPass` (colour + depth (+ MSAA resolve), or none);
* :class:`Framebuffer` over a render pass and attachment views;
* :class:`GraphicsPipelineDesc` / :class:`ComputePipelineDesc` -> :class:`GraphicsPipeline` /
  :class:`ComputePipeline`, cached per owner by :class:`PipelineCache`.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import vulkan as vk

from ..shader_interface import Stage, row_bytes, sample_bit
from .calls import vk_errors
from .descriptors import DescriptorSetLayout
from .device import Device
from .objects import DeviceObject
from .shaders import ShaderModule, SpecConstants

if TYPE_CHECKING:
    from .objects import ResourceOwner


class PipelineLayout(DeviceObject):
    """Set layouts plus one push-constant range of ``push_bytes`` for ``stages``."""

    kind = "pipeline layout"

    def __init__(
        self,
        device: Device,
        set_layouts: Sequence[DescriptorSetLayout],
        push_bytes: int,
        stages: int,
        *,
        label: str,
    ) -> None:
        vk_device = device.handle
        ranges = [vk.VkPushConstantRange(stageFlags=int(stages), offset=0, size=push_bytes)]
        info = vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=len(set_layouts),
            pSetLayouts=[s.handle for s in set_layouts],
            pushConstantRangeCount=1 if push_bytes else 0,
            pPushConstantRanges=ranges if push_bytes else None,
        )
        with vk_errors(f"creating pipeline layout {label!r}"):
            handle = vk.vkCreatePipelineLayout(vk_device, info, None)
        self.stages = int(stages)
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyPipelineLayout(vk_device, handle, None)
        )


# -- render passes and framebuffers -----------------------------------------------------------


@dataclass(frozen=True)
class RenderPassDesc:
    """Colour (+ a resolve attachment when ``samples > 1``) and depth, the colour ending in
    ``final_layout``; ``color_format=None`` makes a pass with no attachments (draws whose only
    output is a storage buffer)."""

    color_format: int | None = None
    depth_format: int | None = None
    samples: int = 1
    final_layout: int = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL


def _attachment(fmt: int, samples: int, load: int, store: int, final: int) -> Any:
    return vk.VkAttachmentDescription(
        format=fmt,
        samples=sample_bit(samples),
        loadOp=load,
        storeOp=store,
        stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
        initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
        finalLayout=final,
    )


def _attachments(desc: RenderPassDesc) -> list[Any]:
    """Colour, depth and (MSAA) the single-sample resolve target, in framebuffer order."""
    assert desc.color_format is not None and desc.depth_format is not None
    msaa = desc.samples > 1
    clear, dont_care = vk.VK_ATTACHMENT_LOAD_OP_CLEAR, vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE
    store, discard = vk.VK_ATTACHMENT_STORE_OP_STORE, vk.VK_ATTACHMENT_STORE_OP_DONT_CARE
    color_final = vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL if msaa else desc.final_layout
    out = [
        _attachment(
            desc.color_format, desc.samples, clear, discard if msaa else store, color_final
        ),
        _attachment(
            desc.depth_format,
            desc.samples,
            clear,
            discard,
            vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        ),
    ]
    if msaa:
        out.append(_attachment(desc.color_format, 1, dont_care, store, desc.final_layout))
    return out


def _dependencies() -> list[Any]:
    """The attachments may still be written by the previous frame, or read by its copy/present;
    the colour is copied out (or presented) after the pass."""
    stages = (
        vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT
        | vk.VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT
        | vk.VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT
    )
    access = (
        vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT
    )
    into = vk.VkSubpassDependency(
        srcSubpass=vk.VK_SUBPASS_EXTERNAL,
        dstSubpass=0,
        srcStageMask=stages | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
        dstStageMask=stages,
        srcAccessMask=access,
        dstAccessMask=access,
    )
    out = vk.VkSubpassDependency(
        srcSubpass=0,
        dstSubpass=vk.VK_SUBPASS_EXTERNAL,
        srcStageMask=vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
        dstStageMask=vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
        srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT,
    )
    return [into, out]


def _render_pass_info(desc: RenderPassDesc) -> tuple[Any, Any]:
    """The create info, and the subpass it copies by value: the subpass's own pointers stay
    valid only while that struct lives, so keep it until the create call returns."""
    graphics = vk.VK_PIPELINE_BIND_POINT_GRAPHICS
    if desc.color_format is None:
        subpass = vk.VkSubpassDescription(pipelineBindPoint=graphics)
        return vk.VkRenderPassCreateInfo(subpassCount=1, pSubpasses=[subpass]), subpass
    attachments = _attachments(desc)
    color_layout = vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL
    resolve = [vk.VkAttachmentReference(2, color_layout)] if desc.samples > 1 else None
    subpass = vk.VkSubpassDescription(
        pipelineBindPoint=graphics,
        colorAttachmentCount=1,
        pColorAttachments=[vk.VkAttachmentReference(0, color_layout)],
        pResolveAttachments=resolve,
        pDepthStencilAttachment=vk.VkAttachmentReference(
            1, vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL
        ),
    )
    dependencies = _dependencies()
    info = vk.VkRenderPassCreateInfo(
        attachmentCount=len(attachments),
        pAttachments=attachments,
        subpassCount=1,
        pSubpasses=[subpass],
        dependencyCount=len(dependencies),
        pDependencies=dependencies,
    )
    return info, subpass


class RenderPass(DeviceObject):
    """A render pass made from a :class:`RenderPassDesc` (kept as ``.desc``)."""

    kind = "render pass"

    def __init__(self, device: Device, desc: RenderPassDesc, *, label: str) -> None:
        vk_device = device.handle
        info, _subpass = _render_pass_info(desc)
        with vk_errors(f"creating render pass {label!r}"):
            handle = vk.vkCreateRenderPass(vk_device, info, None)
        self.desc = desc
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyRenderPass(vk_device, handle, None)
        )


class Framebuffer(DeviceObject):
    """Attachment views (in :func:`_attachments` order) bound to a render pass; none for an
    attachmentless pass."""

    kind = "framebuffer"

    def __init__(
        self,
        device: Device,
        render_pass: RenderPass,
        views: Sequence[Any],
        width: int,
        height: int,
        *,
        label: str,
    ) -> None:
        vk_device = device.handle
        info = vk.VkFramebufferCreateInfo(
            renderPass=render_pass.handle,
            attachmentCount=len(views),
            pAttachments=list(views) or None,
            width=width,
            height=height,
            layers=1,
        )
        with vk_errors(f"creating framebuffer {label!r}"):
            handle = vk.vkCreateFramebuffer(vk_device, info, None)
        self.extent = (width, height)
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyFramebuffer(vk_device, handle, None)
        )


# -- pipelines ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComputePipelineDesc:
    """A compute shader (a SPIR-V module name, or a name and its SPIR-V as ``code``) and its
    specialization constants."""

    shader: str
    spec: tuple[tuple[int, int], ...] = ()
    dispatch_base: bool = False  # may run with vkCmdDispatchBase (a base workgroup)
    code: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class GraphicsPipelineDesc:
    """Everything a vkdqs graphics pipeline varies by. ``vertex_inputs`` are (location,
    VkFormat) pairs, one vertex buffer each with the stride of its format's rows
    (``shader_interface.row_bytes``); viewport and scissor are dynamic.
    ``fragment_shader=None`` with ``rasterizer_discard`` draws vertex-only."""

    vertex_shader: str
    fragment_shader: str | None
    vertex_inputs: tuple[tuple[int, int], ...]
    spec: tuple[tuple[int, int], ...] = ()
    topology: int = vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST
    rasterizer_discard: bool = False
    wireframe: bool = False
    cull_back: bool = True
    clockwise: bool = False  # front faces wind clockwise (a mirroring model matrix)
    samples: int = 1
    depth_test: bool = True
    blend: bool = False  # straight-alpha "over" blending (the label overlay)
    #: the fragment shader's specialization constants (``spec`` is the vertex shader's)
    fragment_spec: tuple[tuple[int, int], ...] = ()
    #: locations of ``vertex_inputs`` fed by one row for every vertex (binding stride 0): the
    #: renderer's constant white/UV row for meshes without colours or texture coordinates
    constant_inputs: tuple[int, ...] = ()
    #: (location, stride) pairs overriding the stride of those locations' rows: a computed
    #: instance's tightly packed (N, 3) float32 positions and normals (stride 12)
    strides: tuple[tuple[int, int], ...] = ()


def _stage(stage: int, module: ShaderModule, spec_info: Any) -> Any:
    """A shader stage; ``spec_info`` (a VkSpecializationInfo or None) must outlive the
    pipeline creation call: the stage only points at it."""
    return vk.VkPipelineShaderStageCreateInfo(
        stage=stage, module=module.handle, pName="main", pSpecializationInfo=spec_info
    )


def _vertex_input_state(
    inputs: tuple[tuple[int, int], ...],
    constant: tuple[int, ...] = (),
    strides: tuple[tuple[int, int], ...] = (),
) -> Any:
    rate = vk.VK_VERTEX_INPUT_RATE_VERTEX
    given = dict(strides)
    bindings = [
        vk.VkVertexInputBindingDescription(
            binding=i,
            stride=0 if loc in constant else given.get(loc, row_bytes(fmt)),
            inputRate=rate,
        )
        for i, (loc, fmt) in enumerate(inputs)
    ]
    attrs = [
        vk.VkVertexInputAttributeDescription(location=loc, binding=i, format=int(fmt), offset=0)
        for i, (loc, fmt) in enumerate(inputs)
    ]
    return vk.VkPipelineVertexInputStateCreateInfo(
        vertexBindingDescriptionCount=len(bindings),
        pVertexBindingDescriptions=bindings,
        vertexAttributeDescriptionCount=len(attrs),
        pVertexAttributeDescriptions=attrs,
    )


def _raster_state(desc: GraphicsPipelineDesc) -> Any:
    cull = desc.cull_back and not desc.wireframe and not desc.rasterizer_discard
    return vk.VkPipelineRasterizationStateCreateInfo(
        rasterizerDiscardEnable=vk.VK_TRUE if desc.rasterizer_discard else vk.VK_FALSE,
        polygonMode=vk.VK_POLYGON_MODE_LINE if desc.wireframe else vk.VK_POLYGON_MODE_FILL,
        cullMode=vk.VK_CULL_MODE_BACK_BIT if cull else vk.VK_CULL_MODE_NONE,
        frontFace=vk.VK_FRONT_FACE_CLOCKWISE
        if desc.clockwise
        else vk.VK_FRONT_FACE_COUNTER_CLOCKWISE,
        lineWidth=1.0,
    )


def _output_states(desc: GraphicsPipelineDesc) -> dict[str, Any]:
    """Viewport, multisample, depth, blend and dynamic state of a pipeline that draws pixels."""
    rgba = (
        vk.VK_COLOR_COMPONENT_R_BIT
        | vk.VK_COLOR_COMPONENT_G_BIT
        | vk.VK_COLOR_COMPONENT_B_BIT
        | vk.VK_COLOR_COMPONENT_A_BIT
    )
    if desc.blend:
        blend = vk.VkPipelineColorBlendAttachmentState(
            blendEnable=vk.VK_TRUE,
            srcColorBlendFactor=vk.VK_BLEND_FACTOR_SRC_ALPHA,
            dstColorBlendFactor=vk.VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA,
            colorBlendOp=vk.VK_BLEND_OP_ADD,
            srcAlphaBlendFactor=vk.VK_BLEND_FACTOR_ONE,
            dstAlphaBlendFactor=vk.VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA,
            alphaBlendOp=vk.VK_BLEND_OP_ADD,
            colorWriteMask=rgba,
        )
    else:
        blend = vk.VkPipelineColorBlendAttachmentState(blendEnable=vk.VK_FALSE, colorWriteMask=rgba)
    dynamic = [vk.VK_DYNAMIC_STATE_VIEWPORT, vk.VK_DYNAMIC_STATE_SCISSOR]
    depth = vk.VK_TRUE if desc.depth_test else vk.VK_FALSE
    return dict(
        pViewportState=vk.VkPipelineViewportStateCreateInfo(viewportCount=1, scissorCount=1),
        pMultisampleState=vk.VkPipelineMultisampleStateCreateInfo(
            rasterizationSamples=sample_bit(desc.samples)
        ),
        pDepthStencilState=vk.VkPipelineDepthStencilStateCreateInfo(
            depthTestEnable=depth, depthWriteEnable=depth, depthCompareOp=vk.VK_COMPARE_OP_LESS
        ),
        pColorBlendState=vk.VkPipelineColorBlendStateCreateInfo(
            attachmentCount=1, pAttachments=[blend]
        ),
        pDynamicState=vk.VkPipelineDynamicStateCreateInfo(
            dynamicStateCount=len(dynamic), pDynamicStates=dynamic
        ),
    )


class GraphicsPipeline(DeviceObject):
    """A graphics pipeline for ``render_pass`` from a :class:`GraphicsPipelineDesc`."""

    kind = "pipeline"

    def __init__(
        self,
        device: Device,
        desc: GraphicsPipelineDesc,
        layout: PipelineLayout,
        render_pass: RenderPass,
        *,
        label: str,
    ) -> None:
        vk_device = device.handle
        spec = SpecConstants(dict(desc.spec))
        fragment_spec = SpecConstants(dict(desc.fragment_spec))
        modules = [ShaderModule(device, desc.vertex_shader)]
        if desc.fragment_shader is not None:
            modules.append(ShaderModule(device, desc.fragment_shader))
        try:
            spec_info = spec.info()
            stages = [_stage(Stage.VERTEX, modules[0], spec_info)]
            if desc.fragment_shader is not None:
                fragment_info = fragment_spec.info() if desc.fragment_spec else None
                stages.append(_stage(Stage.FRAGMENT, modules[1], fragment_info))
            outputs = {} if desc.rasterizer_discard else _output_states(desc)
            info = vk.VkGraphicsPipelineCreateInfo(
                stageCount=len(stages),
                pStages=stages,
                pVertexInputState=_vertex_input_state(
                    desc.vertex_inputs, desc.constant_inputs, desc.strides
                ),
                pInputAssemblyState=vk.VkPipelineInputAssemblyStateCreateInfo(
                    topology=desc.topology
                ),
                pRasterizationState=_raster_state(desc),
                layout=layout.handle,
                renderPass=render_pass.handle,
                subpass=0,
                **outputs,
            )
            with vk_errors(f"creating graphics pipeline {label!r}"):
                handle = vk.vkCreateGraphicsPipelines(vk_device, None, 1, [info], None)[0]
        finally:
            for module in modules:
                module.destroy()
        self.desc = desc
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyPipeline(vk_device, handle, None)
        )


#: ``VK_PIPELINE_CREATE_DISPATCH_BASE_BIT`` (Vulkan 1.1; the ``vulkan`` binding's alias is None)
_DISPATCH_BASE_BIT = 0x10


class ComputePipeline(DeviceObject):
    """A compute pipeline from a :class:`ComputePipelineDesc`."""

    kind = "pipeline"

    def __init__(
        self, device: Device, desc: ComputePipelineDesc, layout: PipelineLayout, *, label: str
    ) -> None:
        vk_device = device.handle
        spec = SpecConstants(dict(desc.spec))
        module = ShaderModule(device, desc.shader, desc.code)
        try:
            spec_info = spec.info()
            stage = _stage(Stage.COMPUTE, module, spec_info)
            flags = _DISPATCH_BASE_BIT if desc.dispatch_base else 0
            info = vk.VkComputePipelineCreateInfo(flags=flags, stage=stage, layout=layout.handle)
            with vk_errors(f"creating compute pipeline {label!r}"):
                handle = vk.vkCreateComputePipelines(vk_device, None, 1, [info], None)[0]
        finally:
            module.destroy()
        self.desc = desc
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyPipeline(vk_device, handle, None)
        )


class PipelineCache:
    """An owner's pipelines by (description, layout, render pass): each made on first use and
    kept (and destroyed) by the owner."""

    def __init__(self, owner: ResourceOwner) -> None:
        # weak: the owner holds the cache, and a cycle would keep a dropped owner (and its
        # Vulkan objects) alive until the next cycle collection
        self._owner_ref = weakref.ref(owner)
        self._pipelines: dict[tuple, DeviceObject] = {}

    @property
    def _owner(self) -> ResourceOwner:
        owner = self._owner_ref()
        assert owner is not None
        return owner

    def graphics(
        self, desc: GraphicsPipelineDesc, layout: PipelineLayout, render_pass: RenderPass
    ) -> GraphicsPipeline:
        """The graphics pipeline of ``desc`` with ``layout`` in ``render_pass``: the cached
        one, or one made now and owned by the cache's owner."""
        key = (desc, layout._key, render_pass._key)
        pipe = self._pipelines.get(key)
        if pipe is None:
            label = f"{desc.vertex_shader} x{dict(desc.spec).get(0, '')}"
            owner = self._owner
            pipe = owner.own(GraphicsPipeline(owner.device, desc, layout, render_pass, label=label))
            self._pipelines[key] = pipe
        return pipe  # type: ignore[return-value]

    def compute(self, desc: ComputePipelineDesc, layout: PipelineLayout) -> ComputePipeline:
        """The compute pipeline of ``desc`` with ``layout``: the cached one, or one made now
        and owned by the cache's owner."""
        key = (desc, layout._key)
        pipe = self._pipelines.get(key)
        if pipe is None:
            owner = self._owner
            pipe = owner.own(ComputePipeline(owner.device, desc, layout, label=desc.shader))
            self._pipelines[key] = pipe
        return pipe  # type: ignore[return-value]

    def clear(self) -> None:
        """Forget every pipeline without destroying it: the owner's ``close()`` destroys them,
        then calls this."""
        self._pipelines.clear()
