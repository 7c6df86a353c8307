"""Device: the Vulkan instance, the chosen physical device, one queue, and every object made on it.

The Device is the single owner of every Vulkan object vkdqs creates. Objects are made through it
(``device.create_buffer(...)``, ``device.create_pipeline_layout(...)``), it keeps a strong
reference to each until that object is destroyed, and :meth:`Device.close` waits for the GPU,
destroys the survivors in reverse creation order, then the device and the instance. Nothing
depends on the garbage collector: no Vulkan call is ever made from ``__del__``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import vulkan as vk

from .errors import NoSuitableDeviceError, ObjectDestroyedError, VkdqsError
from .vkcall import cstr, vk_errors

if TYPE_CHECKING:
    from .memory import Buffer

log = logging.getLogger("vkdqs")
validation_log = logging.getLogger("vkdqs.validation")

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
API_VERSION = vk.VK_MAKE_VERSION(1, 1, 0)

_TYPE_RANK = {
    vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0,
    vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
    vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2,
    vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3,
    vk.VK_PHYSICAL_DEVICE_TYPE_OTHER: 4,
}
_TYPE_NAME = {
    vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete GPU",
    vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated GPU",
    vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual GPU",
    vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "CPU",
    vk.VK_PHYSICAL_DEVICE_TYPE_OTHER: "other",
}


def _env_flag(name: str) -> bool | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    return value.strip().lower() not in ("0", "false", "no", "off")


def available_layers() -> list[str]:
    """Names of the instance layers the Vulkan loader can find."""
    with vk_errors("enumerating instance layers"):
        return [cstr(p.layerName) for p in vk.vkEnumerateInstanceLayerProperties()]


@dataclass(frozen=True)
class ValidationMessage:
    """One message from the validation layer (or the loader) received by the debug messenger."""

    severity: str  # "error", "warning", "info", "verbose"
    message: str


@dataclass(frozen=True)
class DeviceInfo:
    """What vkdqs needs to know about the chosen physical device."""

    name: str
    device_type: str
    index: int
    api_version: str
    driver_version: int
    max_uniform_buffer_range: int
    max_storage_buffer_range: int
    max_texel_buffer_elements: int
    min_uniform_buffer_offset_alignment: int
    min_storage_buffer_offset_alignment: int
    max_compute_work_group_count: tuple[int, int, int]
    max_push_constants_size: int
    vertex_pipeline_stores_and_atomics: bool
    fill_mode_non_solid: bool


class DeviceObject:
    """A Vulkan object owned by a :class:`Device`: one handle and how to destroy it.

    ``destroy()`` is idempotent; any use after it raises :class:`ObjectDestroyedError`.
    """

    kind = "object"

    def __init__(self, device: Device, handle: Any, label: str, destroyer: Callable[[], None]):
        self.device = device
        self._handle = handle
        self.label = label
        self._destroyer: Callable[[], None] | None = destroyer
        device._adopt(self)

    @property
    def handle(self) -> Any:
        if self._destroyer is None:
            raise ObjectDestroyedError(f"{self.kind} {self.label!r} used after destroy()")
        return self._handle

    @property
    def destroyed(self) -> bool:
        return self._destroyer is None

    def destroy(self) -> None:
        """Destroy the Vulkan object now. Safe to call twice."""
        destroyer, self._destroyer = self._destroyer, None
        if destroyer is None:
            return
        self.device._disown(self)
        destroyer()
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        state = "destroyed" if self.destroyed else "live"
        return f"<{type(self).__name__} {self.label!r} ({state})>"


_Obj = TypeVar("_Obj", bound="DeviceObject")


class ResourceOwner:
    """Base of the objects that own several DeviceObjects (Skinner, Renderer, targets).

    ``_keep(obj)`` records an object this owner made; ``close()`` waits for the GPU and destroys
    them newest first. Safe to call twice; any use after it raises ObjectDestroyedError.
    """

    def __init__(self, device: Device) -> None:
        self.device = device
        self._objects: list[DeviceObject] = []
        self._closed = False

    def _keep(self, obj: _Obj) -> _Obj:
        self._objects.append(obj)
        return obj

    def _drop(self, obj: DeviceObject) -> None:
        """Destroy one owned object now."""
        obj.destroy()
        self._objects.remove(obj)

    def _check_open(self) -> None:
        name = type(self).__name__
        if self._closed:
            raise ObjectDestroyedError(f"{name} used after close()")
        if self.device.closed:
            raise ObjectDestroyedError(f"{name} used after its Device was closed")

    def close(self) -> None:
        """Destroy the Vulkan objects this owns, newest first. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if not self.device.closed:
            self.device.wait_idle()
            for obj in reversed(self._objects):
                obj.destroy()
        self._objects.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Device:
    """A Vulkan device for skinning and rendering; a context manager.

    Parameters
    ----------
    device : str or int, optional
        Which physical device: a substring of its name (case-insensitive) or its index in the
        loader's list. Default: ``$VKDQS_DEVICE``, else the best one (discrete > integrated >
        virtual > CPU).
    validation : bool, optional
        Enable the Khronos validation layer and route its messages to :mod:`logging`
        (logger ``vkdqs.validation``). Default: ``$VKDQS_VALIDATION`` (off when unset).
        Errors are also kept in :attr:`validation_errors` so tests can fail on them.
        ``$VKDQS_SYNC_VALIDATION=1`` adds the layer's synchronization validation (hazards
        between commands and submissions); the test suite turns it on.
    instance_extensions : sequence of str
        Extra instance extensions (e.g. those GLFW needs for a window surface).
    device_extensions : sequence of str
        Extra device extensions (e.g. ``VK_KHR_swapchain``).
    """

    def __init__(
        self,
        *,
        device: str | int | None = None,
        validation: bool | None = None,
        instance_extensions: Sequence[str] = (),
        device_extensions: Sequence[str] = (),
        app_name: str = "vkdqs",
    ) -> None:
        self._children: dict[int, DeviceObject] = {}
        self._closed = False
        self._instance = None
        self._messenger = None
        self._device = None
        self._command_pool = None
        self.messages: list[ValidationMessage] = []
        if validation is None:
            validation = bool(_env_flag("VKDQS_VALIDATION"))
        if device is None:
            env = os.environ.get("VKDQS_DEVICE", "").strip()
            device = (int(env) if env.isdigit() else env) if env else None
        try:
            self._create_instance(validation, list(instance_extensions), app_name)
            self._choose_physical_device(device)
            self._create_device(list(device_extensions))
        except BaseException:
            self.close()
            raise

    # -- creation ---------------------------------------------------------------------------

    def _create_instance(self, validation: bool, extensions: list[str], app_name: str) -> None:
        layers = []
        if validation:
            if VALIDATION_LAYER not in available_layers():
                raise VkdqsError(
                    f"validation requested but {VALIDATION_LAYER} is not installed "
                    "(Debian/Ubuntu: apt-get install vulkan-validationlayers)"
                )
            layers.append(VALIDATION_LAYER)
            extensions = [*extensions, vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME]
        self.validation = validation
        app = vk.VkApplicationInfo(
            pApplicationName=app_name,
            applicationVersion=1,
            pEngineName="vkdqs",
            engineVersion=1,
            apiVersion=API_VERSION,
        )
        messenger_info = self._messenger_info() if validation else None
        chain = messenger_info
        if validation and _env_flag("VKDQS_SYNC_VALIDATION"):
            # Synchronization validation (opt-in in the layer): reports missing barriers and
            # hazards between submissions, which plain validation does not see.
            extensions = [*extensions, vk.VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME]
            self._validation_features = [
                vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
            ]
            chain = vk.VkValidationFeaturesEXT(
                pNext=messenger_info,
                enabledValidationFeatureCount=1,
                pEnabledValidationFeatures=self._validation_features,
            )
        info = vk.VkInstanceCreateInfo(
            # Chained so that instance creation and destruction are validated too.
            pNext=chain,
            pApplicationInfo=app,
            ppEnabledLayerNames=layers,
            ppEnabledExtensionNames=extensions,
        )
        with vk_errors(f"creating the Vulkan instance (layers {layers}, extensions {extensions})"):
            self._instance = vk.vkCreateInstance(info, None)
        if validation:
            create = vk.vkGetInstanceProcAddr(self._instance, "vkCreateDebugUtilsMessengerEXT")
            with vk_errors("creating the debug messenger"):
                self._messenger = create(self._instance, messenger_info, None)

    def _messenger_info(self) -> Any:
        _ROUTES[id(self)] = self
        self._route_key = vk.ffi.new("uintptr_t*", id(self))
        sev = vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
        sev |= vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
        types = vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
        types |= vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
        types |= vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT
        return vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=sev,
            messageType=types,
            pfnUserCallback=_debug_callback,
            pUserData=self._route_key,
        )

    def _choose_physical_device(self, wanted: str | int | None) -> None:
        with vk_errors("enumerating physical devices"):
            physical = list(vk.vkEnumeratePhysicalDevices(self._instance) or [])
        rejected: list[str] = []
        candidates = []
        for index, pd in enumerate(physical):
            props = vk.vkGetPhysicalDeviceProperties(pd)
            name = cstr(props.deviceName)
            label = f"#{index} {name!r} ({_TYPE_NAME.get(props.deviceType, 'unknown')})"
            if isinstance(wanted, int) and index != wanted:
                rejected.append(f"{label}: not index {wanted} (VKDQS_DEVICE/device=)")
                continue
            if isinstance(wanted, str) and wanted.lower() not in name.lower():
                rejected.append(f"{label}: name does not contain {wanted!r} (VKDQS_DEVICE/device=)")
                continue
            if props.apiVersion < API_VERSION:
                rejected.append(f"{label}: supports Vulkan {_version(props.apiVersion)} < 1.1")
                continue
            family = self._pick_queue_family(pd)
            if family is None:
                rejected.append(f"{label}: no queue family with both graphics and compute")
                continue
            candidates.append((_TYPE_RANK.get(props.deviceType, 9), index, pd, props, family))
        if not candidates:
            if not physical:
                reasons = "the Vulkan loader found no devices (is mesa-vulkan-drivers installed?)"
            else:
                reasons = "\n  ".join(rejected)
            raise NoSuitableDeviceError(f"no suitable Vulkan device:\n  {reasons}")
        _, index, pd, props, family = min(candidates, key=lambda c: (c[0], c[1]))
        self._physical = pd
        self._queue_family = family
        limits = props.limits
        features = vk.vkGetPhysicalDeviceFeatures(pd)
        self.info = DeviceInfo(
            name=cstr(props.deviceName),
            device_type=_TYPE_NAME.get(props.deviceType, "unknown"),
            index=index,
            api_version=_version(props.apiVersion),
            driver_version=props.driverVersion,
            max_uniform_buffer_range=limits.maxUniformBufferRange,
            max_storage_buffer_range=limits.maxStorageBufferRange,
            max_texel_buffer_elements=limits.maxTexelBufferElements,
            min_uniform_buffer_offset_alignment=limits.minUniformBufferOffsetAlignment,
            min_storage_buffer_offset_alignment=limits.minStorageBufferOffsetAlignment,
            max_compute_work_group_count=tuple(limits.maxComputeWorkGroupCount),
            max_push_constants_size=limits.maxPushConstantsSize,
            vertex_pipeline_stores_and_atomics=bool(features.vertexPipelineStoresAndAtomics),
            fill_mode_non_solid=bool(features.fillModeNonSolid),
        )
        self._memory_properties = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        log.info("vkdqs device: %s (%s)", self.info.name, self.info.device_type)

    @staticmethod
    def _pick_queue_family(pd: Any) -> int | None:
        want = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
        for i, fam in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)):
            if fam.queueCount > 0 and (fam.queueFlags & want) == want:
                return i
        return None

    def _create_device(self, extensions: list[str]) -> None:
        queue_info = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self._queue_family, queueCount=1, pQueuePriorities=[1.0]
        )
        features = vk.VkPhysicalDeviceFeatures(
            vertexPipelineStoresAndAtomics=self.info.vertex_pipeline_stores_and_atomics,
            fillModeNonSolid=self.info.fill_mode_non_solid,
        )
        info = vk.VkDeviceCreateInfo(
            queueCreateInfoCount=1,
            pQueueCreateInfos=[queue_info],
            pEnabledFeatures=features,
            ppEnabledExtensionNames=extensions,
        )
        with vk_errors(f"creating the logical device on {self.info.name!r}"):
            self._device = vk.vkCreateDevice(self._physical, info, None)
        self.queue = vk.vkGetDeviceQueue(self._device, self._queue_family, 0)
        pool_info = vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=self._queue_family,
        )
        with vk_errors("creating the command pool"):
            self._command_pool = vk.vkCreateCommandPool(self._device, pool_info, None)

    # -- ownership --------------------------------------------------------------------------

    @property
    def handle(self) -> Any:
        """The ``VkDevice``."""
        self._check_open()
        return self._device

    @property
    def instance(self) -> Any:
        self._check_open()
        return self._instance

    @property
    def physical_device(self) -> Any:
        self._check_open()
        return self._physical

    @property
    def queue_family(self) -> int:
        return self._queue_family

    @property
    def command_pool(self) -> Any:
        self._check_open()
        return self._command_pool

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ObjectDestroyedError("Device used after close()")

    def _adopt(self, obj: DeviceObject) -> None:
        self._check_open()
        self._children[id(obj)] = obj

    def _disown(self, obj: DeviceObject) -> None:
        self._children.pop(id(obj), None)

    def live_objects(self) -> int:
        """How many Vulkan objects made on this device are not destroyed yet."""
        return len(self._children)

    def live_object_labels(self) -> list[str]:
        return [f"{o.kind} {o.label!r}" for o in self._children.values()]

    def wait_idle(self) -> None:
        self._check_open()
        with vk_errors("waiting for the device to go idle"):
            vk.vkDeviceWaitIdle(self._device)

    def close(self) -> None:
        """Wait for the GPU, destroy every surviving object (newest first), then the device.

        Safe to call twice.
        """
        if self._closed:
            return
        try:
            if self._device is not None:
                vk.vkDeviceWaitIdle(self._device)
                for obj in reversed(list(self._children.values())):
                    obj.destroy()
                if self._command_pool is not None:
                    vk.vkDestroyCommandPool(self._device, self._command_pool, None)
                vk.vkDestroyDevice(self._device, None)
            if self._messenger is not None:
                destroy = vk.vkGetInstanceProcAddr(
                    self._instance, "vkDestroyDebugUtilsMessengerEXT"
                )
                destroy(self._instance, self._messenger, None)
            if self._instance is not None:
                vk.vkDestroyInstance(self._instance, None)
        finally:
            self._closed = True
            self._children.clear()
            self._device = self._instance = self._messenger = self._command_pool = None
            _ROUTES.pop(id(self), None)

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return "<Device (closed)>"
        return f"<Device {self.info.name!r} ({self.info.device_type})>"

    # -- validation messages ----------------------------------------------------------------

    @property
    def validation_errors(self) -> list[ValidationMessage]:
        return [m for m in self.messages if m.severity == "error"]

    def take_messages(self) -> list[ValidationMessage]:
        """Return and clear the messages received so far."""
        out, self.messages = self.messages, []
        return out

    def _on_message(self, severity: int, message: str) -> None:
        if severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT:
            name, level = "error", logging.ERROR
        elif severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT:
            name, level = "warning", logging.WARNING
        else:
            name, level = "info", logging.INFO
        self.messages.append(ValidationMessage(name, message))
        validation_log.log(level, "%s", message)

    # -- memory -----------------------------------------------------------------------------

    def memory_type_index(self, type_bits: int, required: int, preferred: int = 0) -> int:
        """Index of a memory type allowed by ``type_bits`` with ``required`` flags, preferring
        one that also has ``preferred``."""
        props = self._memory_properties
        fallback = None
        for i in range(props.memoryTypeCount):
            if not type_bits & (1 << i):
                continue
            flags = props.memoryTypes[i].propertyFlags
            if flags & required != required:
                continue
            if flags & preferred == preferred:
                return i
            if fallback is None:
                fallback = i
        if fallback is None:
            raise VkdqsError(f"no memory type with flags {required:#x} in bits {type_bits:#x}")
        return fallback

    def create_buffer(self, size: int, usage: int, *, label: str, readback: bool = False) -> Buffer:
        """A host-visible buffer of ``size`` bytes, persistently mapped (see :class:`Buffer`)."""
        from .memory import Buffer

        return Buffer(self, size, usage, label=label, readback=readback)

    # -- simple objects ---------------------------------------------------------------------

    def own(self, kind: str, handle: Any, label: str, destroy: Callable[..., None]) -> DeviceObject:
        """Adopt a raw ``vkCreate*`` handle; ``destroy(device, handle, None)`` ends it."""
        vk_device = self._device

        def destroyer() -> None:
            destroy(vk_device, handle, None)

        obj = DeviceObject(self, handle, label, destroyer)
        obj.kind = kind
        return obj


def _version(v: int) -> str:
    return f"{vk.VK_VERSION_MAJOR(v)}.{vk.VK_VERSION_MINOR(v)}.{vk.VK_VERSION_PATCH(v)}"


# The binding supports one Python debug callback per process: it routes each message to the
# Device whose id is in pUserData.
_ROUTES: dict[int, Device] = {}


def _debug_callback(severity: int, types: int, data: Any, user_data: Any) -> int:
    try:
        key = vk.ffi.cast("uintptr_t*", user_data)[0]
        message = vk.ffi.string(data.pMessage).decode("utf-8", "replace")
        target = _ROUTES.get(key)
        if target is not None:
            target._on_message(severity, message)
        else:
            validation_log.warning("%s", message)
    except Exception:  # an exception must never unwind into the driver
        validation_log.exception("vkdqs debug callback failed")
    return vk.VK_FALSE
