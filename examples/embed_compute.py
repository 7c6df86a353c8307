"""Point of interest: vkdqs skinning inside an app written with the plain ``vulkan`` binding.

The app owns everything Vulkan: its instance, device and queue, its vertex buffers, render pass,
graphics pipeline (its own shaders, examples/shaders/lit.*), command buffers and fences. vkdqs
adopts the device (``Device.adopt``) and, every frame, records the skinning of the pose into the
app's command buffer (``Skinner.record``), writing positions and normals into the app's vertex
buffers, which the app's pipeline then draws. vkdqs submits nothing: the app does, with two
frames in flight.

    python examples/embed_compute.py [--offscreen]   (always offscreen: writes embed-compute.png)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import vulkan as vk

import vkdqs
from vkdqs import dq, procedural
from vkdqs.gpu import AppBuffer
from vkdqs.images import write_png

WIDTH, HEIGHT, FRAMES, IN_FLIGHT, BONES = 320, 240, 8, 2, 16
SHADERS = Path(__file__).resolve().parent / "shaders"
COLOR, DEPTH = vk.VK_FORMAT_R8G8B8A8_UNORM, vk.VK_FORMAT_D32_SFLOAT


class App:
    """The app's Vulkan: an instance, a device, one graphics+compute queue, memory."""

    def __init__(self) -> None:
        info = vk.VkApplicationInfo(apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=info), None)
        self.physical = vk.vkEnumeratePhysicalDevices(self.instance)[0]
        want = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        self.family = next(i for i, f in enumerate(families) if f.queueFlags & want == want)
        queue_info = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0]
        )
        self.device = vk.vkCreateDevice(
            self.physical,
            vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[queue_info]),
            None,
        )
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.memory_types = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.objects: list = []  # (destroy function, handle), destroyed in reverse

    def submit(self, infos: list, fence) -> None:
        """How vkdqs's own work (uploads, Skinner.skin) reaches the app's queue."""
        vk.vkQueueSubmit(self.queue, len(infos), infos, fence)

    def keep(self, destroy, handle):
        self.objects.append((destroy, handle))
        return handle

    def memory(self, requirements, flags: int):
        """Memory for ``requirements`` with ``flags`` (or any type, for DEVICE_LOCAL)."""
        types = self.memory_types.memoryTypes
        for strict in (True, False):
            for i in range(self.memory_types.memoryTypeCount):
                has = types[i].propertyFlags & flags == flags
                if requirements.memoryTypeBits & (1 << i) and (has or not strict):
                    info = vk.VkMemoryAllocateInfo(
                        allocationSize=requirements.size, memoryTypeIndex=i
                    )
                    return self.keep(vk.vkFreeMemory, vk.vkAllocateMemory(self.device, info, None))
        raise RuntimeError("no memory type")

    def buffer(self, size: int, usage: int, flags: int):
        info = vk.VkBufferCreateInfo(
            size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE
        )
        buffer = vk.vkCreateBuffer(self.device, info, None)
        memory = self.memory(vk.vkGetBufferMemoryRequirements(self.device, buffer), flags)
        vk.vkBindBufferMemory(self.device, buffer, memory, 0)
        return self.keep(vk.vkDestroyBuffer, buffer), memory

    def image(self, fmt: int, usage: int, aspect: int):
        info = vk.VkImageCreateInfo(
            imageType=vk.VK_IMAGE_TYPE_2D,
            format=fmt,
            extent=vk.VkExtent3D(WIDTH, HEIGHT, 1),
            mipLevels=1,
            arrayLayers=1,
            samples=vk.VK_SAMPLE_COUNT_1_BIT,
            tiling=vk.VK_IMAGE_TILING_OPTIMAL,
            usage=usage,
            initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
        )
        image = vk.vkCreateImage(self.device, info, None)
        req = vk.vkGetImageMemoryRequirements(self.device, image)
        vk.vkBindImageMemory(
            self.device, image, self.memory(req, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT), 0
        )
        self.keep(vk.vkDestroyImage, image)
        view = vk.VkImageViewCreateInfo(
            image=image,
            viewType=vk.VK_IMAGE_VIEW_TYPE_2D,
            format=fmt,
            subresourceRange=vk.VkImageSubresourceRange(aspect, 0, 1, 0, 1),
        )
        return image, self.keep(
            vk.vkDestroyImageView, vk.vkCreateImageView(self.device, view, None)
        )

    def read(self, memory, size: int) -> bytes:
        raw = vk.vkMapMemory(self.device, memory, 0, size, 0)
        data = bytes(raw[:size])
        vk.vkUnmapMemory(self.device, memory)
        return data

    def destroy(self) -> None:
        vk.vkDeviceWaitIdle(self.device)
        for destroy, handle in reversed(self.objects):
            destroy(self.device, handle, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)


def render_pass(app: App):
    attachments = [
        vk.VkAttachmentDescription(
            format=COLOR,
            samples=vk.VK_SAMPLE_COUNT_1_BIT,
            loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR,
            storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE,
            stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
            stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
            initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
            finalLayout=vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
        ),
        vk.VkAttachmentDescription(
            format=DEPTH,
            samples=vk.VK_SAMPLE_COUNT_1_BIT,
            loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR,
            storeOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
            stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
            stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
            initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
            finalLayout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
        ),
    ]
    color = vk.VkAttachmentReference(0, vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
    depth = vk.VkAttachmentReference(1, vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
    subpass = vk.VkSubpassDescription(
        pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS,
        colorAttachmentCount=1,
        pColorAttachments=[color],
        pDepthStencilAttachment=depth,
    )
    # the last frame's copy out of the colour image, and its depth writes, before this frame's
    attachment_stages = (
        vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT
        | vk.VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT
        | vk.VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT
    )
    dependencies = [
        vk.VkSubpassDependency(
            srcSubpass=vk.VK_SUBPASS_EXTERNAL,
            dstSubpass=0,
            srcStageMask=attachment_stages | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            dstStageMask=attachment_stages,
            srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT
            | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT
            | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT
            | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
        ),
        vk.VkSubpassDependency(
            srcSubpass=0,
            dstSubpass=vk.VK_SUBPASS_EXTERNAL,
            srcStageMask=vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            dstStageMask=vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
            srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT,
        ),
    ]
    info = vk.VkRenderPassCreateInfo(
        attachmentCount=2,
        pAttachments=attachments,
        subpassCount=1,
        pSubpasses=[subpass],
        dependencyCount=len(dependencies),
        pDependencies=dependencies,
    )
    return app.keep(vk.vkDestroyRenderPass, vk.vkCreateRenderPass(app.device, info, None))


def pipeline(
    app: App,
    render_pass,
    vertex_code: bytes | None = None,
    inputs: tuple[tuple[int, int, int], ...] = (
        (0, vk.VK_FORMAT_R32G32B32_SFLOAT, 12),
        (1, vk.VK_FORMAT_R32G32B32_SFLOAT, 12),
    ),
    set_layouts: tuple = (),
    spec: dict[int, int] | None = None,
):
    """The app's graphics pipeline: its own lit.vert (or ``vertex_code``) and lit.frag;
    ``inputs``: (location, format, stride) per vertex buffer binding, in binding order (the
    default: vec3 positions and normals); ``spec``: the vertex shader's uint32 constants."""
    stages, modules = [], []
    vertex = vertex_code or (SHADERS / "lit.vert.spv").read_bytes()
    specialization = None
    if spec:
        entries = [vk.VkSpecializationMapEntry(i, 4 * k, 4) for k, i in enumerate(spec)]
        values = np.array(list(spec.values()), np.uint32)  # alive until the pipeline exists
        specialization = vk.VkSpecializationInfo(
            mapEntryCount=len(entries),
            pMapEntries=entries,
            dataSize=values.nbytes,
            pData=vk.ffi.from_buffer(values),
        )
    for code, stage, constants in (
        (vertex, vk.VK_SHADER_STAGE_VERTEX_BIT, specialization),
        ((SHADERS / "lit.frag.spv").read_bytes(), vk.VK_SHADER_STAGE_FRAGMENT_BIT, None),
    ):
        module = vk.vkCreateShaderModule(
            app.device, vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None
        )
        modules.append(module)
        stages.append(
            vk.VkPipelineShaderStageCreateInfo(
                stage=stage, module=module, pName="main", pSpecializationInfo=constants
            )
        )
    push = vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_VERTEX_BIT, offset=0, size=64)
    layout = app.keep(
        vk.vkDestroyPipelineLayout,
        vk.vkCreatePipelineLayout(
            app.device,
            vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=len(set_layouts),
                pSetLayouts=list(set_layouts) or None,
                pushConstantRangeCount=1,
                pPushConstantRanges=[push],
            ),
            None,
        ),
    )
    bindings = [
        vk.VkVertexInputBindingDescription(b, stride, vk.VK_VERTEX_INPUT_RATE_VERTEX)
        for b, (_, _, stride) in enumerate(inputs)
    ]
    attributes = [
        vk.VkVertexInputAttributeDescription(location, b, fmt, 0)
        for b, (location, fmt, _) in enumerate(inputs)
    ]
    vertex_input = vk.VkPipelineVertexInputStateCreateInfo(
        vertexBindingDescriptionCount=len(bindings),
        pVertexBindingDescriptions=bindings,
        vertexAttributeDescriptionCount=len(attributes),
        pVertexAttributeDescriptions=attributes,
    )
    viewport = vk.VkViewport(0, 0, WIDTH, HEIGHT, 0.0, 1.0)
    scissor = vk.VkRect2D(vk.VkOffset2D(0, 0), vk.VkExtent2D(WIDTH, HEIGHT))
    blend = vk.VkPipelineColorBlendAttachmentState(colorWriteMask=0xF)
    info = vk.VkGraphicsPipelineCreateInfo(
        stageCount=2,
        pStages=stages,
        pVertexInputState=vertex_input,
        pInputAssemblyState=vk.VkPipelineInputAssemblyStateCreateInfo(
            topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST
        ),
        pViewportState=vk.VkPipelineViewportStateCreateInfo(
            viewportCount=1, pViewports=[viewport], scissorCount=1, pScissors=[scissor]
        ),
        pRasterizationState=vk.VkPipelineRasterizationStateCreateInfo(
            polygonMode=vk.VK_POLYGON_MODE_FILL, cullMode=vk.VK_CULL_MODE_NONE, lineWidth=1.0
        ),
        pMultisampleState=vk.VkPipelineMultisampleStateCreateInfo(
            rasterizationSamples=vk.VK_SAMPLE_COUNT_1_BIT
        ),
        pDepthStencilState=vk.VkPipelineDepthStencilStateCreateInfo(
            depthTestEnable=vk.VK_TRUE,
            depthWriteEnable=vk.VK_TRUE,
            depthCompareOp=vk.VK_COMPARE_OP_LESS,
        ),
        pColorBlendState=vk.VkPipelineColorBlendStateCreateInfo(
            attachmentCount=1, pAttachments=[blend]
        ),
        layout=layout,
        renderPass=render_pass,
        subpass=0,
    )
    handle = vk.vkCreateGraphicsPipelines(app.device, None, 1, [info], None)[0]
    for module in modules:
        vk.vkDestroyShaderModule(app.device, module, None)
    return app.keep(vk.vkDestroyPipeline, handle), layout


def character() -> vkdqs.SkinnedMesh:
    """The app's skinned mesh (any (N, 3) positions and normals, (N, K) joints and weights)."""
    return procedural.tube(6_000, bone_count=BONES, influences=4, length=8.0, radius=0.6)


def framing(boxes: np.ndarray) -> vkdqs.Camera:
    """A camera that frames every frame's box ((F, 2, 3))."""
    camera = vkdqs.Camera(yaw=0.3, pitch=0.2)
    camera.frame(boxes[:, 0].min(0), boxes[:, 1].max(0), aspect=WIDTH / HEIGHT)
    return camera


def pose(frame: int) -> np.ndarray:
    """The animation: the tube's bone chain bending further each frame."""
    return dq.from_matrices(procedural.bone_chain_pose(BONES, 15.0 * frame, length=8.0))


class Frames:
    """The app's offscreen frame loop: colour and depth images, render pass, framebuffer,
    IN_FLIGHT command buffers and fences, and a host buffer that the last frame's image (and
    ``extra_bytes`` of buffers) is copied into."""

    def __init__(self, app: App, extra_bytes: int = 0) -> None:
        self.app = app
        host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        self.size = WIDTH * HEIGHT * 4 + extra_bytes
        self.readback, self.readback_memory = app.buffer(
            self.size, vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT, host
        )
        self.color, color_view = app.image(
            COLOR,
            vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
            vk.VK_IMAGE_ASPECT_COLOR_BIT,
        )
        _, depth_view = app.image(
            DEPTH, vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, vk.VK_IMAGE_ASPECT_DEPTH_BIT
        )
        self.render_pass = render_pass(app)
        info = vk.VkFramebufferCreateInfo(
            renderPass=self.render_pass,
            attachmentCount=2,
            pAttachments=[color_view, depth_view],
            width=WIDTH,
            height=HEIGHT,
            layers=1,
        )
        self.framebuffer = app.keep(
            vk.vkDestroyFramebuffer, vk.vkCreateFramebuffer(app.device, info, None)
        )
        pool_info = vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, queueFamilyIndex=app.family
        )
        pool = app.keep(
            vk.vkDestroyCommandPool, vk.vkCreateCommandPool(app.device, pool_info, None)
        )
        self.commands = vk.vkAllocateCommandBuffers(
            app.device,
            vk.VkCommandBufferAllocateInfo(
                commandPool=pool,
                level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                commandBufferCount=IN_FLIGHT,
            ),
        )
        signaled = vk.VkFenceCreateInfo(flags=vk.VK_FENCE_CREATE_SIGNALED_BIT)
        self.fences = [
            app.keep(vk.vkDestroyFence, vk.vkCreateFence(app.device, signaled, None))
            for _ in range(IN_FLIGHT)
        ]
        self.clear = [
            vk.VkClearValue(color=vk.VkClearColorValue(float32=[0.9, 0.9, 0.9, 1.0])),
            vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(1.0, 0)),
        ]

    def begin(self, frame: int):
        """Frame ``frame``'s command buffer, recording, once its slot's last use completed."""
        slot = frame % IN_FLIGHT
        device = self.app.device
        vk.vkWaitForFences(device, 1, [self.fences[slot]], vk.VK_TRUE, 10**10)
        vk.vkResetFences(device, 1, [self.fences[slot]])
        cmd = self.commands[slot]
        vk.vkResetCommandBuffer(cmd, 0)
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo())
        return cmd

    def begin_pass(self, cmd) -> None:
        begin = vk.VkRenderPassBeginInfo(
            renderPass=self.render_pass,
            framebuffer=self.framebuffer,
            renderArea=vk.VkRect2D(vk.VkOffset2D(0, 0), vk.VkExtent2D(WIDTH, HEIGHT)),
            clearValueCount=2,
            pClearValues=self.clear,
        )
        vk.vkCmdBeginRenderPass(cmd, begin, vk.VK_SUBPASS_CONTENTS_INLINE)

    def end(self, cmd, frame: int, copies: tuple = ()) -> None:
        """End the pass and submit; the last frame copies its image, then each (buffer,
        bytes) of ``copies``, into the host buffer."""
        vk.vkCmdEndRenderPass(cmd)
        if frame == FRAMES - 1:
            region = vk.VkBufferImageCopy(
                imageSubresource=vk.VkImageSubresourceLayers(vk.VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1),
                imageExtent=vk.VkExtent3D(WIDTH, HEIGHT, 1),
            )
            layout = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
            vk.vkCmdCopyImageToBuffer(cmd, self.color, layout, self.readback, 1, [region])
            offset = WIDTH * HEIGHT * 4
            for buffer, nbytes in copies:
                region = vk.VkBufferCopy(0, offset, nbytes)
                vk.vkCmdCopyBuffer(cmd, buffer, self.readback, 1, [region])
                offset += nbytes
            host_read = vk.VkMemoryBarrier(
                srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT,
            )
            transfer, host = vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT
            vk.vkCmdPipelineBarrier(cmd, transfer, host, 0, 1, [host_read], 0, None, 0, None)
        vk.vkEndCommandBuffer(cmd)
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cmd])
        self.app.submit([submit], self.fences[frame % IN_FLIGHT])

    def finish(self) -> tuple[np.ndarray, bytes]:
        """Wait for every frame; the last one's (H, W, 4) image and the copied bytes."""
        vk.vkWaitForFences(self.app.device, IN_FLIGHT, self.fences, vk.VK_TRUE, 10**10)
        data = self.app.read(self.readback_memory, self.size)
        image = np.frombuffer(data, np.uint8, WIDTH * HEIGHT * 4).reshape(HEIGHT, WIDTH, 4)
        return image, data[WIDTH * HEIGHT * 4 :]


def index_buffer(app: App, indices: np.ndarray):
    """The mesh's triangles in a host-visible index buffer of the app's."""
    host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
    data = indices.astype(np.uint32).tobytes()
    buffer, memory = app.buffer(len(data), vk.VK_BUFFER_USAGE_INDEX_BUFFER_BIT, host)
    raw = vk.vkMapMemory(app.device, memory, 0, len(data), 0)
    raw[: len(data)] = data
    vk.vkUnmapMemory(app.device, memory)
    return buffer


def main() -> int:
    app = App()
    mesh = character()
    n, indices = mesh.vertex_count, mesh.indices
    device = vkdqs.Device.adopt(
        instance=app.instance,
        physical_device=app.physical,
        device=app.device,
        queue_family_index=app.family,
        queue=app.queue,
        submit=app.submit,
    )
    local = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
    usage = (
        vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
        | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
    )
    positions, _ = app.buffer(12 * n, usage, local)  # the app's vertex buffers, in VRAM
    normals, _ = app.buffer(12 * n, usage, local)
    indexes = index_buffer(app, indices)
    frames = Frames(app, extra_bytes=12 * n)  # the last frame's positions come back too
    graphics, layout = pipeline(app, frames.render_pass)
    app_positions = AppBuffer(device, positions, size=12 * n, usage=usage, label="app positions")
    app_normals = AppBuffer(device, normals, size=12 * n, usage=usage, label="app normals")
    skinner = vkdqs.Skinner(device, mesh, bone_count=BONES)
    skinner.frames_in_flight = IN_FLIGHT
    # vkdqs's exact boxes of the frames (Skinner.bounds submits through app.submit) frame the view
    camera = framing(np.stack([skinner.bounds(pose(f)) for f in range(FRAMES)]))
    vp = np.ascontiguousarray(camera.view_projection(WIDTH / HEIGHT).T, np.float32)
    for frame in range(FRAMES):
        cmd = frames.begin(frame)
        # vkdqs records the skinning into the app's vertex buffers, then a barrier to vertex input
        skinner.record(cmd, pose(frame), positions=(app_positions, 0), normals=(app_normals, 0))
        frames.begin_pass(cmd)
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, graphics)
        vk.vkCmdBindVertexBuffers(cmd, 0, 2, [positions, normals], [0, 0])
        vk.vkCmdBindIndexBuffer(cmd, indexes, 0, vk.VK_INDEX_TYPE_UINT32)
        stage = vk.VK_SHADER_STAGE_VERTEX_BIT
        vk.vkCmdPushConstants(cmd, layout, stage, 0, 64, vk.ffi.from_buffer(vp))
        vk.vkCmdDrawIndexed(cmd, len(indices), 1, 0, 0, 0)
        frames.end(cmd, frame, copies=((positions, 12 * n),))
    image, data = frames.finish()
    drawn = np.frombuffer(data, np.float32, 3 * n).reshape(n, 3)
    want, _ = skinner.skin(pose(FRAMES - 1))  # vkdqs's own result for the same pose
    diff = np.abs(drawn - want).max()
    print(f"max |app's vertex buffer - Skinner.skin| = {diff:.1e} ({n} vertices)")
    out = write_png("embed-compute.png", image[:, :, :3])
    print(f"wrote {out.name} after {FRAMES} frames")
    skinner.close()
    device.close()  # vkdqs's objects; the app's device is the app's to destroy
    app.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
