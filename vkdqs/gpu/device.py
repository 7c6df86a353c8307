"""Device: the Vulkan instance, the chosen physical device, one queue, and every object made on it.

The Device is the single owner of every Vulkan object vkdqs creates. Objects are made with their
class's constructor, which takes the Device (``Buffer(device, size, usage, label=...)``,
``PipelineLayout(device, ...)``; see :mod:`vkdqs.gpu`), and each registers how to destroy it.
:meth:`Device.close` waits for the GPU, destroys the survivors in reverse creation order, then the
device and the instance.

The raw handles and the destroyers live in a :class:`_Handles` record that references no Python
wrapper. That record is what a ``weakref.finalize`` safety net holds: a Device dropped without
``close()`` is released when it is garbage-collected, children first, with a ``ResourceWarning``
saying that ``close()`` was not called.

Threads: any thread may use a Device. One lock guards the queue (every submission, present and
``vkDeviceWaitIdle``) and the registry of children; each Skinner, Renderer and target adds a lock
of its own (see the docs' "Objects, owners and threads" page, docs/threads.md).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import vulkan as vk

from ..errors import (
    CapabilityError,
    NoSuitableDeviceError,
    ObjectDestroyedError,
    ValidationLayerError,
)
from .calls import cstr, vk_errors

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


#: Environment variables that make the Vulkan loader look for drivers only where they say.
_DRIVER_VARIABLES = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES")


def _no_driver_message() -> str:
    """One line: no Vulkan driver, what to install, and the variable that hid them if one did."""
    message = (
        "no Vulkan driver found: install one (Debian/Ubuntu: apt-get install mesa-vulkan-drivers, "
        "which runs on the CPU without a GPU, or your GPU vendor's Vulkan driver)"
    )
    hiding = [f"{v}={os.environ[v]!r}" for v in _DRIVER_VARIABLES if os.environ.get(v)]
    if hiding:
        message += f"; {' and '.join(hiding)} is set and names no usable driver"
    return message


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
    framebuffer_sample_counts: int  # color & depth VkSampleCountFlags
    vertex_pipeline_stores_and_atomics: bool
    fill_mode_non_solid: bool
    #: nanoseconds per timestamp tick (VkPhysicalDeviceLimits::timestampPeriod)
    timestamp_period: float
    #: timestamps are supported on every graphics and compute queue
    timestamp_compute_and_graphics: bool
    #: meaningful bits of a timestamp on the chosen queue family (0: no timestamps there)
    timestamp_valid_bits: int
    max_memory_allocation_count: int = 4096
    non_coherent_atom_size: int = 256
    buffer_image_granularity: int = 131072
    max_compute_work_group_invocations: int = 128
    max_bound_descriptor_sets: int = 4
    #: the memory profile this Device simulates (:func:`vkdqs.gpu.memory_profiles`), or None
    memory_profile: str | None = None


class _Messages:
    """Where the debug callback puts a Device's messages (no reference to the Device itself)."""

    def __init__(self) -> None:
        self.items: list[ValidationMessage] = []

    def add(self, severity: int, message: str) -> None:
        if severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT:
            name, level = "error", logging.ERROR
        elif severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT:
            name, level = "warning", logging.WARNING
        else:
            name, level = "info", logging.INFO
        self.items.append(ValidationMessage(name, message))
        validation_log.log(level, "%s", message)


class _Handles:
    """A Device's raw handles and its children's destroyers; what close() and the finalizer free.

    Holds no reference to the Device or to any wrapper object, so a ``weakref.finalize`` can own
    it. ``lock`` guards the queue and ``children``.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.instance: Any = None
        self.messenger: Any = None
        self.device: Any = None
        self.queue: Any = None
        self.route_key: int | None = None
        self.route_ptr: Any = None  # pUserData of the messenger: must outlive it
        self.allocator: Any = None  # the memory blocks (memory.allocator.Allocator)
        self.children: dict[int, tuple[str, Callable[[], None]]] = {}
        self.released = False
        # An adopted device (Device.adopt): the app's instance, device and queue, never
        # destroyed here; the app's lock around every use of its queue; its submit callback.
        self.adopted = False
        self.queue_lock: Any = contextlib.nullcontext()
        self.app_submit: Callable[[list, Any], None] | None = None
        self.on_close: Callable[[], None] | None = None

    def destroy_child(self, key: int) -> bool:
        """Destroy one child now; False if it was already destroyed."""
        with self.lock:
            entry = self.children.pop(key, None)
        if entry is None:
            return False
        entry[1]()
        return True

    def wait_idle(self) -> None:
        with self.lock, self.queue_lock:
            if self.device is not None:
                vk.vkDeviceWaitIdle(self.device)

    def release(self) -> None:
        """Wait for the GPU, destroy every child (newest first), the device and the instance."""
        with self.lock:
            if self.released:
                return
            self.released = True
            try:
                if self.device is not None:
                    with self.queue_lock:
                        vk.vkDeviceWaitIdle(self.device)
                    for key in reversed(list(self.children)):
                        self.destroy_child(key)
                    if self.allocator is not None:
                        self.allocator.release()
                    if not self.adopted:
                        vk.vkDestroyDevice(self.device, None)
                if self.messenger is not None:
                    destroy = vk.vkGetInstanceProcAddr(
                        self.instance, "vkDestroyDebugUtilsMessengerEXT"
                    )
                    destroy(self.instance, self.messenger, None)
                if self.instance is not None and not self.adopted:
                    vk.vkDestroyInstance(self.instance, None)
            finally:
                self.children.clear()
                self.allocator = None
                self.device = self.instance = self.messenger = self.queue = None
                if self.route_key is not None:
                    _ROUTES.pop(self.route_key, None)
            if self.on_close is not None:
                on_close, self.on_close = self.on_close, None
                on_close()


def _finalize(handles: _Handles, name: str) -> None:
    """The garbage collector's safety net for a Device that was never closed."""
    if handles.released:
        return
    warnings.warn(
        f"vkdqs Device {name!r} was garbage-collected without close(); releasing it now "
        "(use `with Device() as device:` or call close())",
        ResourceWarning,
        stacklevel=2,
    )
    handles.release()


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
    memory_profile : str, optional
        See the memory types, heaps and limits of a real device while allocating on this one
        (:func:`vkdqs.gpu.memory_profiles` lists them; docs/memory.md): strict, so that what
        would fail on that device fails here. Default: ``$VKDQS_MEMORY_PROFILE`` (none).

    Raises
    ------
    CapabilityError
        No Vulkan driver (the message says what to install), or validation requested without
        the layer installed.
    NoSuitableDeviceError
        No physical device fits; the message lists why each one was rejected.
    """

    def __init__(
        self,
        *,
        device: str | int | None = None,
        validation: bool | None = None,
        instance_extensions: Sequence[str] = (),
        device_extensions: Sequence[str] = (),
        app_name: str = "vkdqs",
        memory_profile: str | None = None,
    ) -> None:
        if memory_profile is None:
            memory_profile = os.environ.get("VKDQS_MEMORY_PROFILE", "").strip() or None
        from .memory.profiles import get_profile

        profile = None if memory_profile is None else get_profile(memory_profile)
        self._h = _Handles()
        self._messages = _Messages()
        self._closed = False
        self._finalizer = weakref.finalize(self, _finalize, self._h, app_name)
        if validation is None:
            validation = bool(_env_flag("VKDQS_VALIDATION"))
        if device is None:
            env = os.environ.get("VKDQS_DEVICE", "").strip()
            device = (int(env) if env.isdigit() else env) if env else None
        try:
            self._create_instance(validation, list(instance_extensions), app_name)
            self._choose_physical_device(device)
            self._apply_profile(profile)
            self._create_device(list(device_extensions))
        except BaseException:
            self.close()
            raise

    @classmethod
    def adopt(
        cls,
        *,
        instance: Any,
        physical_device: Any,
        device: Any,
        queue_family_index: int,
        queue: Any,
        submit: Callable[[list, Any], None] | None = None,
        queue_lock: Any = None,
        enabled_features: Any = (),
        enabled_extensions: Sequence[str] = (),
        validation: bool = False,
        memory_profile: str | None = None,
        on_close: Callable[[], None] | None = None,
        name: str = "adopted",
    ) -> Device:
        """Wrap a Vulkan device the app created (docs/embedding.md), without owning it.

        vkdqs never destroys ``instance``, ``device`` or ``queue``: :meth:`close` destroys
        only what vkdqs made on the device (after ``vkDeviceWaitIdle``), and the app destroys
        its device afterwards. The app keeps the queue: vkdqs never calls ``vkQueueSubmit``
        itself. Calls that submit on their own (a Skinner's ``skin``, a Renderer's ``render``,
        staged uploads, bakes) hand their ``VkSubmitInfo`` list and fence to ``submit(infos,
        fence)``, which must submit them to a queue of ``queue_family_index``; without it they
        raise :class:`~vkdqs.errors.CapabilityError`, and only the calls that record into the
        app's command buffer (``Skinner.record``) work.

        Parameters
        ----------
        instance, physical_device, device, queue
            The app's ``VkInstance``, ``VkPhysicalDevice``, ``VkDevice`` and ``VkQueue``.
        queue_family_index : int
            The family ``queue`` is from: it must do graphics and compute.
        submit : callable, optional
            ``submit(infos, fence)``: the app's submission of vkdqs's work.
        queue_lock : context manager, optional
            Held while vkdqs waits for the device to go idle (``vkDeviceWaitIdle`` needs every
            queue externally synchronized): the lock the app holds around its own queue use.
        enabled_features : VkPhysicalDeviceFeatures or iterable of str
            The features the app enabled (``vertexPipelineStoresAndAtomics`` for
            ``path='vertex'``, ``fillModeNonSolid`` for wireframe); none by default.
        enabled_extensions : sequence of str
            The device extensions the app enabled (``VK_EXT_memory_budget`` is used if there).
        validation : bool
            Receive the validation layer's messages (:attr:`messages`) through a debug
            messenger of vkdqs's own; the app must have enabled the layer and
            ``VK_EXT_debug_utils`` on its instance.
        memory_profile : str, optional
            As for :class:`Device`.
        on_close : callable, optional
            Called once vkdqs's objects are destroyed (by :meth:`close`, or by the garbage
            collector's safety net): where an app that hands its device over for the Device's
            whole life destroys it.
        name : str
            What messages call this Device.

        Raises
        ------
        CapabilityError
            One message listing everything vkdqs needs that the device lacks.
        """
        self = cls.__new__(cls)
        self._h = _Handles()
        self._messages = _Messages()
        self._closed = False
        self._finalizer = weakref.finalize(self, _finalize, self._h, name)
        self._h.adopted = True
        self._h.instance, self._h.device, self._h.queue = instance, device, queue
        self._h.app_submit = submit
        self._h.on_close = on_close
        if queue_lock is not None:
            self._h.queue_lock = queue_lock
        self.validation = bool(validation)
        try:
            missing, index = _adoption_problems(
                instance, physical_device, device, queue, queue_family_index
            )
            if missing:
                raise CapabilityError("vkdqs cannot use this device:\n  " + "\n  ".join(missing))
            props = vk.vkGetPhysicalDeviceProperties(physical_device)
            self._physical = physical_device
            self._queue_family = int(queue_family_index)
            info = _device_info(index, physical_device, props, self._queue_family)
            features = _feature_names(enabled_features)
            self.info = replace(
                info,
                vertex_pipeline_stores_and_atomics=info.vertex_pipeline_stores_and_atomics
                and "vertexPipelineStoresAndAtomics" in features,
                fill_mode_non_solid=info.fill_mode_non_solid and "fillModeNonSolid" in features,
            )
            if validation:
                self._adopt_messenger()
            if memory_profile is None:
                memory_profile = os.environ.get("VKDQS_MEMORY_PROFILE", "").strip() or None
            from .memory.profiles import get_profile

            self._apply_profile(None if memory_profile is None else get_profile(memory_profile))
            budget = self._profile is None and _BUDGET_EXTENSION in enabled_extensions
            self._make_allocator(budget)
        except BaseException:
            self.close()
            raise
        log.info("vkdqs adopted device: %s (%s)", self.info.name, self.info.device_type)
        return self

    def _adopt_messenger(self) -> None:
        info = self._messenger_info()
        try:
            create = vk.vkGetInstanceProcAddr(self._h.instance, "vkCreateDebugUtilsMessengerEXT")
        except Exception as exc:  # the binding raises when the extension is not enabled
            raise CapabilityError(
                "validation=True needs VK_EXT_debug_utils enabled on the app's instance"
            ) from exc
        with vk_errors("creating the debug messenger on the app's instance"):
            self._h.messenger = create(self._h.instance, info, None)

    @property
    def adopted(self) -> bool:
        """Whether this Device wraps an app's device (:meth:`adopt`) rather than owning one."""
        return self._h.adopted

    # -- creation ---------------------------------------------------------------------------

    def _create_instance(self, validation: bool, extensions: list[str], app_name: str) -> None:
        layers = []
        if validation:
            if VALIDATION_LAYER not in available_layers():
                raise CapabilityError(
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
            try:
                self._h.instance = vk.vkCreateInstance(info, None)
            except vk.VkErrorIncompatibleDriver as exc:  # the loader found no driver (ICD)
                raise CapabilityError(_no_driver_message()) from exc
        if validation:
            create = vk.vkGetInstanceProcAddr(self._h.instance, "vkCreateDebugUtilsMessengerEXT")
            with vk_errors("creating the debug messenger"):
                self._h.messenger = create(self._h.instance, messenger_info, None)

    def _messenger_info(self) -> Any:
        _install_callback()
        key = next(_ROUTE_KEYS)
        _ROUTES[key] = self._messages
        self._h.route_key = key
        self._h.route_ptr = vk.ffi.new("uintptr_t*", key)
        sev = vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
        sev |= vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
        types = vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
        types |= vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
        types |= vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT
        return vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=sev,
            messageType=types,
            pfnUserCallback=_debug_callback,
            pUserData=self._h.route_ptr,
        )

    def _choose_physical_device(self, wanted: str | int | None) -> None:
        with vk_errors("enumerating physical devices"):
            physical = list(vk.vkEnumeratePhysicalDevices(self._h.instance) or [])
        rejected: list[str] = []
        candidates = []
        for index, pd in enumerate(physical):
            props = vk.vkGetPhysicalDeviceProperties(pd)
            reason = _rejection(index, props, wanted)
            family = None if reason else _pick_queue_family(pd)
            if not reason and family is None:
                reason = "no queue family with both graphics and compute"
            if reason:
                label = f"#{index} {cstr(props.deviceName)!r} ({_type_name(props)})"
                rejected.append(f"{label}: {reason}")
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
        self.info = _device_info(index, pd, props, family)
        log.info("vkdqs device: %s (%s)", self.info.name, self.info.device_type)

    def _create_device(self, extensions: list[str]) -> None:
        queue_info = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=self._queue_family, queueCount=1, pQueuePriorities=[1.0]
        )
        features = vk.VkPhysicalDeviceFeatures(
            vertexPipelineStoresAndAtomics=self.info.vertex_pipeline_stores_and_atomics,
            fillModeNonSolid=self.info.fill_mode_non_solid,
        )
        budget = self._profile is None and _has_extension(self._physical, _BUDGET_EXTENSION)
        if budget and _BUDGET_EXTENSION not in extensions:
            extensions = [*extensions, _BUDGET_EXTENSION]
        info = vk.VkDeviceCreateInfo(
            queueCreateInfoCount=1,
            pQueueCreateInfos=[queue_info],
            pEnabledFeatures=features,
            ppEnabledExtensionNames=extensions,
        )
        with vk_errors(f"creating the logical device on {self.info.name!r}"):
            self._h.device = vk.vkCreateDevice(self._physical, info, None)
        self._h.queue = vk.vkGetDeviceQueue(self._h.device, self._queue_family, 0)
        self._make_allocator(budget)

    def _make_allocator(self, budget: bool) -> None:
        from .memory.allocator import Allocator, AllocatorLimits

        i = self.info
        limits = AllocatorLimits(i.max_memory_allocation_count, i.non_coherent_atom_size)
        self._h.allocator = Allocator(
            self._h.device,
            self.memory_table,
            limits,
            real_table=None if self._profile is None else self._real_table,
            budget=_budget_query(self._physical) if budget else None,
        )

    def _apply_profile(self, profile: Any) -> None:
        """What this Device sees of memory and limits: the device's own, or ``profile``'s."""
        from .memory.classes import MemoryTable

        self._profile = profile
        props = vk.vkGetPhysicalDeviceMemoryProperties(self._physical)
        self._real_table = MemoryTable.from_vulkan(props)
        self.memory_table = self._real_table if profile is None else profile.table
        if profile is not None:
            limits = {k: _stricter(k, v, getattr(self.info, k)) for k, v in profile.limits.items()}
            self.info = replace(self.info, memory_profile=profile.name, **limits)
            log.info("vkdqs memory profile: %s", profile.name)

    # -- handles and state ------------------------------------------------------------------

    @property
    def handle(self) -> Any:
        """The ``VkDevice``."""
        self._check_open()
        return self._h.device

    @property
    def instance(self) -> Any:
        """The ``VkInstance`` (e.g. for ``glfw.create_window_surface``)."""
        self._check_open()
        return self._h.instance

    @property
    def physical_device(self) -> Any:
        """The chosen ``VkPhysicalDevice`` (:attr:`info` describes it)."""
        self._check_open()
        return self._physical

    def buffer_format_features(self, fmt: int) -> int:
        """The ``VkFormatFeatureFlags`` buffers of format ``fmt`` support on this device
        (``bufferFeatures``: vertex buffer, uniform or storage texel buffer)."""
        self._check_open()
        props = vk.vkGetPhysicalDeviceFormatProperties(self._physical, int(fmt))
        return int(props.bufferFeatures)

    @property
    def queue_family(self) -> int:
        """Index of the queue family of the one queue: graphics and compute both."""
        return self._queue_family

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called: every object made on the Device is gone then."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ObjectDestroyedError("Device used after close()")

    # -- children ---------------------------------------------------------------------------

    def _register(self, kind: str, label: str, destroyer: Callable[[], None]) -> int:
        """Record a new child's destroyer (which must not reference its wrapper); its key."""
        with self._h.lock:
            self._check_open()
            key = next(_CHILD_KEYS)
            self._h.children[key] = (f"{kind} {label!r}", destroyer)
            return key

    def _is_live(self, key: int) -> bool:
        return key in self._h.children

    def _destroy_child(self, key: int) -> None:
        self._h.destroy_child(key)

    def _destroy_children(self, keys: Sequence[int]) -> None:
        """Wait for the GPU, then destroy these children newest first (an owner's close)."""
        with self._h.lock:
            if self._h.released:
                return
            self._h.wait_idle()
            for key in reversed(keys):
                self._h.destroy_child(key)

    def live_objects(self) -> int:
        """How many Vulkan objects made on this device are not destroyed yet."""
        return len(self._h.children)

    def live_object_labels(self) -> list[str]:
        """Kind and label of each object :meth:`live_objects` counts, oldest first (what a
        leak test prints)."""
        return [label for label, _ in list(self._h.children.values())]

    # -- the queue ---------------------------------------------------------------------------

    @contextmanager
    def queue(self) -> Iterator[Any]:
        """Hold the queue lock and yield the ``VkQueue``: every use of the queue goes through
        this (Vulkan requires host access to a queue to be externally synchronized). On an
        adopted Device this also holds the app's ``queue_lock``."""
        with self._h.lock, self._h.queue_lock:
            self._check_open()
            yield self._h.queue

    def submit(self, submits: list, fence: Any, doing: str) -> None:
        """``vkQueueSubmit`` under the queue lock, errors naming ``doing``; this thread's
        pending batched uploads go first (:func:`vkdqs.gpu.memory.transfer.batched_uploads`)."""
        for hook in BEFORE_SUBMIT:
            hook(self)
        if self._h.adopted:
            app_submit = self._h.app_submit
            if app_submit is None:
                raise CapabilityError(
                    f"{doing}: this Device was adopted without a submit callback, and vkdqs "
                    "never submits to the app's queue itself; pass submit= to Device.adopt, "
                    "or record into the app's command buffer (Skinner.record)"
                )
            self._check_open()
            with vk_errors(doing):
                app_submit(submits, fence)
            return
        with self.queue() as q, vk_errors(doing):
            vk.vkQueueSubmit(q, len(submits), submits, fence)

    def wait_idle(self) -> None:
        """Block until the GPU has finished all submitted work (``vkDeviceWaitIdle``, under
        the queue lock)."""
        self._check_open()
        with vk_errors("waiting for the device to go idle"):
            self._h.wait_idle()

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Wait for the GPU, destroy every surviving object (newest first), then the device.

        Safe to call twice.
        """
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        self._h.release()

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
    def messages(self) -> list[ValidationMessage]:
        """Messages received from the validation layer so far."""
        return self._messages.items

    @property
    def validation_errors(self) -> list[ValidationMessage]:
        """The error-severity :attr:`messages` received so far (without clearing them, unlike
        :meth:`check_validation`)."""
        return [m for m in self.messages if m.severity == "error"]

    def take_messages(self) -> list[ValidationMessage]:
        """Return and clear the messages received so far."""
        out, self._messages.items = self._messages.items, []
        return out

    def check_validation(self) -> None:
        """Raise :class:`ValidationLayerError` listing the validation errors received so far
        (and clear them); for an application's own tests."""
        errors = [m.message for m in self.take_messages() if m.severity == "error"]
        if errors:
            raise ValidationLayerError(
                f"{len(errors)} validation error(s):\n" + "\n".join(f"  {e}" for e in errors)
            )

    # -- memory -----------------------------------------------------------------------------

    @property
    def allocator(self) -> Any:
        """The memory blocks buffers and images are placed in
        (:class:`vkdqs.gpu.memory.allocator.Allocator`; package-internal)."""
        self._check_open()
        return self._h.allocator

    def memory_report(self) -> dict[str, Any]:
        """The memory vkdqs holds on this Device, per heap and per usage class.

        Returns a dict: ``heaps``, one entry per heap with ``size``, ``device_local``,
        ``budget`` (``VK_EXT_memory_budget``'s, else the heap size), ``memory_bytes`` and
        ``memory_objects`` (the ``VkDeviceMemory`` blocks vkdqs allocated there) and
        ``classes`` ({usage class: {"bytes", "allocations"}} placed in them);
        ``memory_objects`` and ``max_memory_objects`` (``maxMemoryAllocationCount``) for the
        device; ``simulated`` (a memory profile is on); ``profile`` (its name or None).
        """
        report = self.allocator.report()
        report["profile"] = self.info.memory_profile
        return report

    def check_owns(self, obj: Any, what: str) -> None:
        """Raise :class:`~vkdqs.errors.OwnershipError` unless ``obj`` was made on this Device."""
        from ..errors import OwnershipError

        other = getattr(obj, "device", None)
        if other is not self:
            raise OwnershipError(
                f"{what} belongs to another Device ({other!r}); objects made on one Device "
                f"cannot be used with another ({self!r})"
            )
        self._check_open()


_BUDGET_EXTENSION = "VK_EXT_memory_budget"


#: Formats vkdqs cannot work without, with the features it needs of each.
_NEEDED_FORMATS = (
    ("R8G8B8A8_SRGB", "optimalTilingFeatures", "COLOR_ATTACHMENT"),
    ("R32G32B32A32_SFLOAT", "bufferFeatures", "UNIFORM_TEXEL_BUFFER"),
    ("R32G32B32A32_SFLOAT", "bufferFeatures", "STORAGE_TEXEL_BUFFER"),
)


def _same_handle(a: Any, b: Any) -> bool:
    return vk.ffi.cast("uintptr_t", a) == vk.ffi.cast("uintptr_t", b)


def _adoption_problems(
    instance: Any, physical: Any, device: Any, queue: Any, family: int
) -> tuple[list[str], int]:
    """What an app's device lacks for vkdqs (empty when it has everything), and the physical
    device's index among the instance's."""
    for name, handle in (("instance", instance), ("physical_device", physical)):
        if handle is None:
            return [f"{name} is None"], -1
    problems = [f"{n} is None" for n, h in (("device", device), ("queue", queue)) if h is None]
    with vk_errors("enumerating the app instance's physical devices"):
        listed = list(vk.vkEnumeratePhysicalDevices(instance) or [])
    same = [_same_handle(pd, physical) for pd in listed]
    if not any(same):
        return [*problems, "physical_device is not one of instance's physical devices"], -1
    props = vk.vkGetPhysicalDeviceProperties(physical)
    if props.apiVersion < API_VERSION:
        problems.append(f"Vulkan {_version(props.apiVersion)} < 1.1")
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
    want = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
    index = _as_index(family)
    if not 0 <= index < len(families):
        problems.append(f"queue_family_index {family!r} is not one of the {len(families)} families")
    elif (families[index].queueFlags & want) != want:
        problems.append(f"queue family {family} does not do both graphics and compute")
    for fmt, where, feature in _NEEDED_FORMATS:
        props_f = vk.vkGetPhysicalDeviceFormatProperties(physical, getattr(vk, f"VK_FORMAT_{fmt}"))
        if not getattr(props_f, where) & getattr(vk, f"VK_FORMAT_FEATURE_{feature}_BIT"):
            problems.append(f"format {fmt} lacks {feature} ({where})")
    depth = (vk.VK_FORMAT_D32_SFLOAT, vk.VK_FORMAT_X8_D24_UNORM_PACK32, vk.VK_FORMAT_D16_UNORM)
    if not any(
        vk.vkGetPhysicalDeviceFormatProperties(physical, f).optimalTilingFeatures
        & vk.VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT
        for f in depth
    ):
        problems.append("no depth attachment format (D32, X8_D24 or D16)")
    return problems, same.index(True)


def _as_index(family: Any) -> int:
    try:
        return int(family)
    except (TypeError, ValueError):
        return -1


def _feature_names(features: Any) -> set[str]:
    """The enabled feature names from a VkPhysicalDeviceFeatures or an iterable of names."""
    if isinstance(features, str):
        return {features}
    if hasattr(features, "vertexPipelineStoresAndAtomics"):
        return {
            n
            for n in ("vertexPipelineStoresAndAtomics", "fillModeNonSolid")
            if getattr(features, n)
        }
    return {str(n) for n in features}


def _stricter(name: str, profile: Any, real: Any) -> Any:
    """The stricter of a profile's limit and the real device's: the smaller maximum, the larger
    alignment (what both devices accept)."""
    if isinstance(profile, tuple):
        return tuple(_stricter(name, p, r) for p, r in zip(profile, real, strict=True))
    return min(profile, real) if name.startswith("max_") else max(profile, real)


def _has_extension(pd: Any, name: str) -> bool:
    with vk_errors("enumerating device extensions"):
        return any(
            cstr(e.extensionName) == name for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)
        )


def _budget_query(pd: Any) -> Callable[[int], int]:
    """``heap -> bytes this process may use there`` from ``VK_EXT_memory_budget``
    (``heapBudget``, which already leaves out what other processes use); a heap the driver
    leaves at 0 counts its full size (the allocator takes the smaller of that and the size)."""

    def budget(heap: int) -> int:
        values = vk.VkPhysicalDeviceMemoryBudgetPropertiesEXT()
        props = vk.VkPhysicalDeviceMemoryProperties2(pNext=values)
        vk.vkGetPhysicalDeviceMemoryProperties2(pd, props)  # core in Vulkan 1.1
        return int(values.heapBudget[heap]) or 2**63

    return budget


def _type_name(props: Any) -> str:
    return _TYPE_NAME.get(props.deviceType, "unknown")


def _rejection(index: int, props: Any, wanted: str | int | None) -> str | None:
    """Why a physical device does not fit (None if it does, before queue families)."""
    name = cstr(props.deviceName)
    if isinstance(wanted, int) and index != wanted:
        return f"not index {wanted} (VKDQS_DEVICE/device=)"
    if isinstance(wanted, str) and wanted.lower() not in name.lower():
        return f"name does not contain {wanted!r} (VKDQS_DEVICE/device=)"
    if props.apiVersion < API_VERSION:
        return f"supports Vulkan {_version(props.apiVersion)} < 1.1"
    return None


def _pick_queue_family(pd: Any) -> int | None:
    want = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
    for i, fam in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)):
        if fam.queueCount > 0 and (fam.queueFlags & want) == want:
            return i
    return None


def _device_info(index: int, pd: Any, props: Any, family: int) -> DeviceInfo:
    limits = props.limits
    features = vk.vkGetPhysicalDeviceFeatures(pd)
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
    return DeviceInfo(
        name=cstr(props.deviceName),
        device_type=_type_name(props),
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
        framebuffer_sample_counts=limits.framebufferColorSampleCounts
        & limits.framebufferDepthSampleCounts,
        vertex_pipeline_stores_and_atomics=bool(features.vertexPipelineStoresAndAtomics),
        fill_mode_non_solid=bool(features.fillModeNonSolid),
        timestamp_period=float(limits.timestampPeriod),
        timestamp_compute_and_graphics=bool(limits.timestampComputeAndGraphics),
        timestamp_valid_bits=int(families[family].timestampValidBits),
        max_memory_allocation_count=int(limits.maxMemoryAllocationCount),
        non_coherent_atom_size=int(limits.nonCoherentAtomSize),
        buffer_image_granularity=int(limits.bufferImageGranularity),
        max_compute_work_group_invocations=int(limits.maxComputeWorkGroupInvocations),
        max_bound_descriptor_sets=int(limits.maxBoundDescriptorSets),
    )


def _version(v: int) -> str:
    return f"{vk.VK_VERSION_MAJOR(v)}.{vk.VK_VERSION_MINOR(v)}.{vk.VK_VERSION_PATCH(v)}"


#: Called with the Device before every submission (the staging module registers the flush of
#: a thread's batched uploads: no work may read a buffer before its upload).
BEFORE_SUBMIT: list[Callable[[Device], None]] = []

_CHILD_KEYS = itertools.count(1)
_ROUTE_KEYS = itertools.count(1)
# The binding supports one Python debug callback per process: it routes each message to the
# message list whose key is in pUserData (keys are never reused, unlike id()).
_ROUTES: dict[int, _Messages] = {}


def _install_callback() -> None:
    """Note the app's Python debug callback before vkdqs's replaces it.

    The ``vulkan`` binding calls one Python function for every debug messenger in the process:
    the one given to the last ``VkDebugUtilsMessengerCreateInfoEXT`` built. An app that made
    its own messenger (an embedding app, Device.adopt) would lose its messages to vkdqs's; so
    messages of messengers that are not vkdqs's go on to the function that was there before.
    """
    binding = sys.modules.get("vulkan._vulkan")
    current = getattr(binding, "_internal_vkDebugUtilsMessengerCallbackEXT", None)
    if current is not None and current is not _debug_callback:
        _FOREIGN[0] = current


_FOREIGN: list[Callable[..., int] | None] = [None]


def _debug_callback(severity: int, types: int, data: Any, user_data: Any) -> int:
    try:
        key = None if user_data == vk.ffi.NULL else vk.ffi.cast("uintptr_t*", user_data)[0]
        target = _ROUTES.get(key) if key is not None else None
        if target is not None:
            target.add(severity, vk.ffi.string(data.pMessage).decode("utf-8", "replace"))
            return vk.VK_FALSE
        foreign = _FOREIGN[0]
        if foreign is not None:  # another messenger's (the app's): its own callback
            return foreign(severity, types, data, user_data)
        validation_log.warning("%s", vk.ffi.string(data.pMessage).decode("utf-8", "replace"))
    except Exception:  # an exception must never unwind into the driver
        validation_log.exception("vkdqs debug callback failed")
    return vk.VK_FALSE
