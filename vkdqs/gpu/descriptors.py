"""Descriptor set layouts, pools and sets, made from :class:`vkdqs.shader_interface.Binding`s."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import vulkan as vk

from ..shader_interface import Binding
from .calls import vk_errors
from .device import Device
from .objects import DeviceObject


class DescriptorSetLayout(DeviceObject):
    """A set layout with one descriptor per :class:`Binding`."""

    kind = "descriptor set layout"

    def __init__(self, device: Device, bindings: Sequence[Binding], *, label: str) -> None:
        vk_device = device.handle
        entries = [
            vk.VkDescriptorSetLayoutBinding(
                binding=b.binding,
                descriptorType=int(b.type),
                descriptorCount=1,
                stageFlags=int(b.stages),
            )
            for b in bindings
        ]
        info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(entries), pBindings=entries)
        with vk_errors(f"creating descriptor set layout {label!r}"):
            handle = vk.vkCreateDescriptorSetLayout(vk_device, info, None)
        self.bindings = tuple(bindings)
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyDescriptorSetLayout(vk_device, handle, None)
        )


class DescriptorPool(DeviceObject):
    """Room for ``sets`` sets of ``bindings``; the sets are freed with the pool."""

    kind = "descriptor pool"

    def __init__(
        self, device: Device, bindings: Sequence[Binding], *, sets: int, label: str
    ) -> None:
        vk_device = device.handle
        counts: dict[int, int] = {}
        for b in bindings:
            counts[int(b.type)] = counts.get(int(b.type), 0) + sets
        sizes = [vk.VkDescriptorPoolSize(type=t, descriptorCount=n) for t, n in counts.items()]
        info = vk.VkDescriptorPoolCreateInfo(
            maxSets=sets, poolSizeCount=len(sizes), pPoolSizes=sizes
        )
        with vk_errors(f"creating descriptor pool {label!r}"):
            handle = vk.vkCreateDescriptorPool(vk_device, info, None)
        super().__init__(
            device, handle, label, lambda: vk.vkDestroyDescriptorPool(vk_device, handle, None)
        )

    def allocate(self, layout: DescriptorSetLayout) -> Any:
        """One ``VkDescriptorSet`` of ``layout`` (lives as long as the pool)."""
        info = vk.VkDescriptorSetAllocateInfo(
            descriptorPool=self.handle, descriptorSetCount=1, pSetLayouts=[layout.handle]
        )
        with vk_errors(f"allocating a descriptor set from {self.label!r}"):
            return vk.vkAllocateDescriptorSets(self.device.handle, info)[0]


@dataclass(frozen=True)
class BufferWrite:
    """A uniform or storage buffer range for one binding."""

    binding: Binding
    buffer: DeviceObject
    offset: int
    size: int


@dataclass(frozen=True)
class TexelWrite:
    """A texel buffer view for one binding."""

    binding: Binding
    view: DeviceObject


@dataclass(frozen=True)
class ImageWrite:
    """A sampled image view (in SHADER_READ_ONLY_OPTIMAL) and its sampler for one combined
    image sampler binding."""

    binding: Binding
    view: Any  # a VkImageView handle (a Texture's .view)
    sampler: DeviceObject


def write_descriptors(
    device: Device, dst_set: Any, writes: Sequence[BufferWrite | TexelWrite | ImageWrite]
) -> None:
    """Point a set's bindings at buffers, texel views and textures (one
    ``vkUpdateDescriptorSets``)."""
    structs = []
    keep = []  # the cffi structs the writes point into must live until the update call
    for w in writes:
        common = dict(
            dstSet=dst_set,
            dstBinding=w.binding.binding,
            descriptorCount=1,
            descriptorType=int(w.binding.type),
        )
        if isinstance(w, TexelWrite):
            structs.append(vk.VkWriteDescriptorSet(**common, pTexelBufferView=[w.view.handle]))
        elif isinstance(w, ImageWrite):
            image = vk.VkDescriptorImageInfo(
                sampler=w.sampler.handle,
                imageView=w.view,
                imageLayout=vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL,
            )
            keep.append(image)
            structs.append(vk.VkWriteDescriptorSet(**common, pImageInfo=[image]))
        else:
            info = vk.VkDescriptorBufferInfo(buffer=w.buffer.handle, offset=w.offset, range=w.size)
            keep.append(info)
            structs.append(vk.VkWriteDescriptorSet(**common, pBufferInfo=[info]))
    if structs:
        with vk_errors(f"updating {len(structs)} descriptor(s)"):
            vk.vkUpdateDescriptorSets(device.handle, len(structs), structs, 0, None)
