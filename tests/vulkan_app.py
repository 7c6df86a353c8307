"""A Vulkan "app" written with the plain ``vulkan`` binding, as an embedding app would be.

It creates its own instance (with the validation layer and a debug messenger of its own, when
the layer is installed), physical device, device and queue, and submits vkdqs's work through its
own lock: what ``Device.adopt`` wraps in the suite's adopted-device runs (``VKDQS_ADOPT=1``) and
in tests/test_adopt.py. Nothing here uses vkdqs.
"""

from __future__ import annotations

import logging
import os
import threading

import vulkan as vk

LAYER = "VK_LAYER_KHRONOS_validation"

#: Where the app's own messenger logs (the suite fails a test on any record here).
log = logging.getLogger("vulkan_app.validation")


def _layers() -> list[str]:
    return [p.layerName for p in vk.vkEnumerateInstanceLayerProperties()]


class VulkanApp:
    """An app's instance, device and queue; ``messages`` holds what its own messenger got."""

    def __init__(self, *, validation: bool | None = None, features: tuple[str, ...] = ()) -> None:
        if validation is None:
            validation = LAYER in _layers()
        self.validation = validation
        self.messages: list[str] = []
        self.lock = threading.Lock()
        self.submissions = 0
        self._callback = None
        self._pool = self._cmd = self._fence = None
        self._owned: list = []  # the app's buffers and their memory
        layers = [LAYER] if validation else []
        extensions = [vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME] if validation else []
        chain = None
        if validation and os.environ.get("VKDQS_SYNC_VALIDATION", "") not in ("", "0"):
            extensions.append(vk.VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME)
            self._enables = [vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT]
            chain = vk.VkValidationFeaturesEXT(
                enabledValidationFeatureCount=1, pEnabledValidationFeatures=self._enables
            )
        app = vk.VkApplicationInfo(
            pApplicationName="vulkan-app",
            applicationVersion=1,
            pEngineName="none",
            engineVersion=1,
            apiVersion=vk.VK_MAKE_VERSION(1, 1, 0),
        )
        self.instance = vk.vkCreateInstance(
            vk.VkInstanceCreateInfo(
                pNext=chain,
                pApplicationInfo=app,
                ppEnabledLayerNames=layers,
                ppEnabledExtensionNames=extensions,
            ),
            None,
        )
        self.messenger = None
        if validation:
            self._make_messenger()
        self.physical_device = vk.vkEnumeratePhysicalDevices(self.instance)[0]
        want = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical_device)
        self.queue_family_index = next(
            i for i, f in enumerate(families) if (f.queueFlags & want) == want
        )
        self.features = tuple(features)
        enabled = vk.VkPhysicalDeviceFeatures(**{name: vk.VK_TRUE for name in self.features})
        # Kept in a variable: the binding keeps a struct's pointed-to arrays alive only as long
        # as the struct object itself (a temporary inside a list would dangle).
        queue_info = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self.queue_family_index, queueCount=1, pQueuePriorities=[1.0]
        )
        self.device = vk.vkCreateDevice(
            self.physical_device,
            vk.VkDeviceCreateInfo(
                queueCreateInfoCount=1, pQueueCreateInfos=[queue_info], pEnabledFeatures=enabled
            ),
            None,
        )
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family_index, 0)

    def _make_messenger(self) -> None:
        def callback(severity, types, data, user_data):
            if severity & (
                vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
            ):
                message = vk.ffi.string(data.pMessage).decode("utf-8", "replace")
                self.messages.append(message)
                log.warning("%s", message)
            return vk.VK_FALSE

        self._callback = callback
        info = vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
            | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
            | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
            pfnUserCallback=callback,
        )
        create = vk.vkGetInstanceProcAddr(self.instance, "vkCreateDebugUtilsMessengerEXT")
        self.messenger = create(self.instance, info, None)

    # -- what a frame loop uses: buffers, a command buffer, a fence --------------------------

    def host_buffer(self, size: int, usage: int):
        """A host-visible, coherent buffer of the app's own: (VkBuffer, VkDeviceMemory)."""
        info = vk.VkBufferCreateInfo(
            size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE
        )
        buffer = vk.vkCreateBuffer(self.device, info, None)
        req = vk.vkGetBufferMemoryRequirements(self.device, buffer)
        props = vk.vkGetPhysicalDeviceMemoryProperties(self.physical_device)
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        index = next(
            i
            for i in range(props.memoryTypeCount)
            if req.memoryTypeBits & (1 << i) and (props.memoryTypes[i].propertyFlags & want) == want
        )
        memory = vk.vkAllocateMemory(
            self.device,
            vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index),
            None,
        )
        vk.vkBindBufferMemory(self.device, buffer, memory, 0)
        self._owned.append((buffer, memory))
        return buffer, memory

    def write(self, memory, data) -> None:
        raw = vk.vkMapMemory(self.device, memory, 0, len(data), 0)
        raw[: len(data)] = bytes(data)
        vk.vkUnmapMemory(self.device, memory)

    def read(self, memory, size: int) -> bytes:
        raw = vk.vkMapMemory(self.device, memory, 0, size, 0)
        out = bytes(raw[:size])
        vk.vkUnmapMemory(self.device, memory)
        return out

    def begin(self):
        """The app's command buffer of this frame, reset and recording."""
        if self._pool is None:
            self._pool = vk.vkCreateCommandPool(
                self.device,
                vk.VkCommandPoolCreateInfo(
                    flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                    queueFamilyIndex=self.queue_family_index,
                ),
                None,
            )
            self._cmd = vk.vkAllocateCommandBuffers(
                self.device,
                vk.VkCommandBufferAllocateInfo(
                    commandPool=self._pool,
                    level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                    commandBufferCount=1,
                ),
            )[0]
            self._fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        vk.vkResetCommandBuffer(self._cmd, 0)
        vk.vkBeginCommandBuffer(
            self._cmd,
            vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT),
        )
        return self._cmd

    def end_submit_wait(self) -> None:
        """End the frame's command buffer, submit it on the app's queue and wait."""
        vk.vkEndCommandBuffer(self._cmd)
        info = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[self._cmd])
        with self.lock:
            vk.vkQueueSubmit(self.queue, 1, [info], self._fence)
        vk.vkWaitForFences(self.device, 1, [self._fence], vk.VK_TRUE, 10**10)
        vk.vkResetFences(self.device, 1, [self._fence])

    def submit(self, infos: list, fence) -> None:
        """The app's submission of vkdqs's work, under the app's queue lock."""
        with self.lock:
            self.submissions += 1
            vk.vkQueueSubmit(self.queue, len(infos), infos, fence)

    def adopt_kwargs(self, *, hand_over: bool = False) -> dict:
        """What ``vkdqs.Device.adopt`` takes from this app; ``hand_over``: the app's device
        and instance are destroyed when the adopted Device closes."""
        return dict(
            on_close=self.destroy if hand_over else None,
            instance=self.instance,
            physical_device=self.physical_device,
            device=self.device,
            queue_family_index=self.queue_family_index,
            queue=self.queue,
            submit=self.submit,
            queue_lock=self.lock,
            enabled_features=self.features,
            validation=self.validation,
        )

    def destroy(self) -> None:
        """Destroy the app's device and instance (vkdqs's objects must be gone by now: the
        layer reports any left as errors, into ``messages``)."""
        if self.device is None:
            return
        vk.vkDeviceWaitIdle(self.device)
        if self._pool is not None:
            vk.vkDestroyFence(self.device, self._fence, None)
            vk.vkDestroyCommandPool(self.device, self._pool, None)
        for buffer, memory in self._owned:
            vk.vkDestroyBuffer(self.device, buffer, None)
            vk.vkFreeMemory(self.device, memory, None)
        vk.vkDestroyDevice(self.device, None)
        self.device = None
        if self.messenger is not None:
            destroy = vk.vkGetInstanceProcAddr(self.instance, "vkDestroyDebugUtilsMessengerEXT")
            destroy(self.instance, self.messenger, None)
        vk.vkDestroyInstance(self.instance, None)
