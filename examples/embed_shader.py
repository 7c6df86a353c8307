"""Point of interest: vkdqs's DQS vertex shader in an app's own graphics pipeline.

The same app as embed_compute.py (plain ``vulkan`` binding, its own device, buffers, render
pass, command buffers and fences), but no vkdqs Device at all: the app builds its pipeline from
the SPIR-V and interface ``vkdqs.shaders`` gives (descriptor bindings, std140 blocks, vertex
inputs, specialization constants, push constants), uploads the mesh rows and each frame's bones
that ``vkdqs.shaders`` packs, and the vertex shader skins while the app draws.

    python examples/embed_shader.py [--offscreen]   (always offscreen: writes embed-shader.png)
"""

from __future__ import annotations

import sys

import numpy as np
import vulkan as vk
from embed_compute import (
    BONES,
    FRAMES,
    HEIGHT,
    IN_FLIGHT,
    WIDTH,
    App,
    Frames,
    character,
    framing,
    index_buffer,
    pipeline,
    pose,
)

from vkdqs import reference, shaders
from vkdqs.images import write_png

HOST = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
#: the interface's descriptor types (``VK_DESCRIPTOR_TYPE_`` suffixes) as the app binds them; a
#: dynamic uniform buffer is a plain uniform buffer to the shader, and this app gives each frame
#: slot a descriptor set of its own instead of dynamic offsets
TYPES = {
    "UNIFORM_BUFFER": vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
    "UNIFORM_BUFFER_DYNAMIC": vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
    "UNIFORM_TEXEL_BUFFER": vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
}
SCALARS = {"float": "<f4", "int": "<i4", "uint": "<u4"}


def block_dtype(entry: dict) -> np.dtype:
    """A std140 block of the interface (its ``members``) as a numpy dtype."""
    return np.dtype(
        {
            "names": [m["name"] for m in entry["members"]],
            "formats": [(SCALARS[m["type"]], tuple(m["shape"])) for m in entry["members"]],
            "offsets": [m["offset"] for m in entry["members"]],
            "itemsize": entry["size"],
        }
    )


def reference_boxes() -> np.ndarray:
    """Every frame's box, from the float64 reference (no vkdqs Device in this app)."""
    mesh = character()
    args = (mesh.positions, mesh.normals, mesh.joints, mesh.weights)
    skinned = [reference.skin_dqs(*args, pose(f))[0] for f in range(FRAMES)]
    return np.stack([(p.min(0), p.max(0)) for p in skinned])


def upload(app: App, data: bytes, usage: int):
    buffer, memory = app.buffer(len(data), usage, HOST)
    raw = vk.vkMapMemory(app.device, memory, 0, len(data), 0)
    raw[: len(data)] = data
    vk.vkUnmapMemory(app.device, memory)
    return buffer, memory


def main() -> int:
    app = App()
    mesh = character()
    face = shaders.interface("dqs", "render")  # what skin_dqs.vert declares
    rows = shaders.pack_vertices(mesh)  # the mesh's rows in the formats face names
    vertex_buffers, inputs = [], []
    formats = {v["input"]: v for v in face["vertex_inputs"]}
    for v in face["vertex_inputs"]:
        data = np.ascontiguousarray(rows[v["input"]])
        buffer, _ = upload(app, data.tobytes(), vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT)
        vertex_buffers.append(buffer)
        fmt = getattr(vk, f"VK_FORMAT_{formats[v['input']]['format']}")
        inputs.append((v["location"], fmt, data.strides[0]))
    # set 0 as the interface lists it
    bindings = [
        vk.VkDescriptorSetLayoutBinding(
            binding=d["binding"],
            descriptorType=TYPES[d["type"]],
            descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_VERTEX_BIT,
        )
        for d in face["descriptors"]
    ]
    set_layout = app.keep(
        vk.vkDestroyDescriptorSetLayout,
        vk.vkCreateDescriptorSetLayout(
            app.device,
            vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(bindings), pBindings=bindings),
            None,
        ),
    )
    sizes = [vk.VkDescriptorPoolSize(b.descriptorType, IN_FLIGHT) for b in bindings]
    pool = app.keep(
        vk.vkDestroyDescriptorPool,
        vk.vkCreateDescriptorPool(
            app.device,
            vk.VkDescriptorPoolCreateInfo(
                maxSets=IN_FLIGHT, poolSizeCount=len(sizes), pPoolSizes=sizes
            ),
            None,
        ),
    )
    sets = vk.vkAllocateDescriptorSets(
        app.device,
        vk.VkDescriptorSetAllocateInfo(
            descriptorPool=pool, descriptorSetCount=IN_FLIGHT, pSetLayouts=[set_layout] * IN_FLIGHT
        ),
    )
    by_name = {d.get("what", "").split(":")[0]: d for d in face["descriptors"]}
    instance = np.zeros((), block_dtype(by_name["instance"]))
    instance["model"] = np.eye(4)  # column-major, as GLSL reads it
    instance["normal_matrix"] = np.eye(4)
    instance_buffer, _ = upload(app, instance.tobytes(), vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT)
    weights = np.zeros((), block_dtype(by_name["morph_weights"]))  # no morph target active
    weights_buffer, _ = upload(app, weights.tobytes(), vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT)
    deltas, _ = upload(app, bytes(16), vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT)  # one texel
    deltas_view = app.keep(
        vk.vkDestroyBufferView,
        vk.vkCreateBufferView(
            app.device,
            vk.VkBufferViewCreateInfo(
                buffer=deltas, format=vk.VK_FORMAT_R32G32B32A32_SFLOAT, offset=0, range=16
            ),
            None,
        ),
    )
    bone_bytes = BONES * face["bones"]["stride"]
    bone_slots = [
        upload(app, bytes(bone_bytes), vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT)
        for _ in range(IN_FLIGHT)
    ]
    for slot, dset in enumerate(sets):
        buffers = {
            "bones": (bone_slots[slot][0], bone_bytes),
            "instance": (instance_buffer, instance.nbytes),
            "morph_weights": (weights_buffer, weights.nbytes),
        }
        writes = []
        for name, (buffer, size) in buffers.items():
            info = vk.VkDescriptorBufferInfo(buffer=buffer, offset=0, range=size)
            writes.append(
                vk.VkWriteDescriptorSet(
                    dstSet=dset,
                    dstBinding=by_name[name]["binding"],
                    descriptorCount=1,
                    descriptorType=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                    pBufferInfo=[info],
                )
            )
        writes.append(
            vk.VkWriteDescriptorSet(
                dstSet=dset,
                dstBinding=by_name["morph_deltas"]["binding"],
                descriptorCount=1,
                descriptorType=vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                pTexelBufferView=[deltas_view],
            )
        )
        vk.vkUpdateDescriptorSets(app.device, len(writes), writes, 0, None)
    spec = {s["id"]: s["default"] for s in face["specialization"]}
    spec[next(s["id"] for s in face["specialization"] if s["name"] == "MAX_BONES")] = BONES
    frames = Frames(app)
    graphics, layout = pipeline(
        app,
        frames.render_pass,
        vertex_code=shaders.module("dqs", "render"),
        inputs=tuple(inputs),
        set_layouts=(set_layout,),
        spec=spec,
    )
    indexes = index_buffer(app, mesh.indices)
    camera = framing(reference_boxes())
    vp = np.ascontiguousarray(camera.view_projection(WIDTH / HEIGHT).T, np.float32)
    for frame in range(FRAMES):
        cmd = frames.begin(frame)  # waits until this slot's bones are no longer read
        slot = frame % IN_FLIGHT
        packed = shaders.pack_bones("dqs", pose(frame), BONES)  # the BoneBlock's rows
        memory = bone_slots[slot][1]
        raw = vk.vkMapMemory(app.device, memory, 0, bone_bytes, 0)
        raw[:bone_bytes] = np.ascontiguousarray(packed.bones, np.float32).tobytes()
        vk.vkUnmapMemory(app.device, memory)
        frames.begin_pass(cmd)
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, graphics)
        point = vk.VK_PIPELINE_BIND_POINT_GRAPHICS
        vk.vkCmdBindDescriptorSets(cmd, point, layout, 0, 1, [sets[slot]], 0, None)
        count = len(vertex_buffers)
        vk.vkCmdBindVertexBuffers(cmd, 0, count, vertex_buffers, [0] * count)
        vk.vkCmdBindIndexBuffer(cmd, indexes, 0, vk.VK_INDEX_TYPE_UINT32)
        stage = vk.VK_SHADER_STAGE_VERTEX_BIT
        vk.vkCmdPushConstants(cmd, layout, stage, 0, 64, vk.ffi.from_buffer(vp))
        vk.vkCmdDrawIndexed(cmd, len(mesh.indices), 1, 0, 0, 0)
        frames.end(cmd, frame)
    image, _ = frames.finish()
    out = write_png("embed-shader.png", image[:, :, :3])
    print(f"wrote {out.name} after {FRAMES} frames, drawn by {face['name']} in the app's pipeline")
    app.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
