"""The two ownership roles: a :class:`DeviceObject` wraps one Vulkan object, a
:class:`ResourceOwner` (Skinner, Renderer, targets) owns many.

Every DeviceObject registers with its Device a destroyer that closes over raw handles only, so
the Device (or a garbage-collection finalizer) can destroy it without the wrapper. Destruction
is deterministic: ``destroy()``/``close()``, an owner's ``close()``, or ``Device.close()``,
newest first. The finalizers are a safety net for code that forgets ``close()``; they warn with
``ResourceWarning``.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import InputError, ObjectDestroyedError, OwnershipError
from .device import Device, _Handles


class DeviceObject:
    """A Vulkan object owned by a :class:`Device`: one handle and how to destroy it.

    ``destroy()`` is idempotent; any use after it raises :class:`ObjectDestroyedError`.
    ``destroyer`` must not reference this object (the Device may call it after the wrapper is
    gone).
    """

    kind = "object"

    def __init__(
        self, device: Device, handle: Any, label: str, destroyer: Callable[[], None]
    ) -> None:
        self.device = device
        self._handle = handle
        self.label = label
        self._key = device._register(self.kind, label, destroyer)
        #: the ResourceOwner that owns this object (a weak reference), if any
        self._owner: weakref.ref[Any] | None = None

    @property
    def handle(self) -> Any:
        """The Vulkan handle; raises ObjectDestroyedError once the object is destroyed (by
        :meth:`destroy`, its owner's ``close()`` or ``Device.close()``)."""
        if not self.device._is_live(self._key):
            raise ObjectDestroyedError(f"{self.kind} {self.label!r} used after destroy()")
        return self._handle

    @property
    def destroyed(self) -> bool:
        """Whether the Vulkan object is gone, whoever destroyed it."""
        return not self.device._is_live(self._key)

    def destroy(self) -> None:
        """Destroy the Vulkan object now. Safe to call twice."""
        self.device._destroy_child(self._key)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        state = "destroyed" if self.destroyed else "live"
        return f"<{type(self).__name__} {self.label!r} ({state})>"


_Obj = TypeVar("_Obj", bound=DeviceObject)


def _release_owner(handles: _Handles, keys: list[int], name: str) -> None:
    """The garbage collector's safety net for an owner that was never closed."""
    if handles.released or not keys:
        return
    warnings.warn(
        f"vkdqs {name} was garbage-collected without close(); releasing its Vulkan objects "
        "now (use it as a context manager or call close())",
        ResourceWarning,
        stacklevel=2,
    )
    with handles.lock:
        if handles.released:
            return
        handles.wait_idle()
        for key in reversed(keys):
            handles.destroy_child(key)


class ResourceOwner:
    """Base of the objects that own several DeviceObjects (Skinner, Renderer, targets).

    ``own(obj)`` records an object this owner made, ``release(obj)`` destroys one early;
    ``close()`` waits for the GPU and destroys them newest first. Safe to call twice; any use
    after it raises ObjectDestroyedError.
    ``_lock`` serializes the owner's public calls across threads.
    """

    def __init__(self, device: Device) -> None:
        if not isinstance(device, Device):
            raise InputError(f"device must be a vkdqs.Device, got {type(device).__name__}")
        device._check_open()
        self.device = device
        self._objects: list[DeviceObject] = []
        self._keys: list[int] = []  # shared with the finalizer, which must not see self
        self._closed = False
        self._lock = threading.RLock()
        self._finalizer = weakref.finalize(
            self, _release_owner, device._h, self._keys, type(self).__name__
        )

    def own(self, obj: _Obj) -> _Obj:
        """Record ``obj``, a DeviceObject made on this owner's Device, as this owner's: it is
        destroyed by :meth:`close` (newest first) unless :meth:`release` destroys it sooner.

        Raises OwnershipError for an object of another Device, one already owned (by this or
        another owner) or one already destroyed: every object has exactly one owner.
        """
        if not isinstance(obj, DeviceObject):
            raise InputError(f"own() takes a vkdqs DeviceObject, got {type(obj).__name__}")
        if obj.device is not self.device:
            raise OwnershipError(
                f"{obj.kind} {obj.label!r} belongs to another Device; a {type(self).__name__} "
                "owns only objects made on its own Device"
            )
        if obj.destroyed:
            raise ObjectDestroyedError(f"{obj.kind} {obj.label!r} used after destroy()")
        if obj._owner is not None:
            raise OwnershipError(f"{obj.kind} {obj.label!r} already has an owner")
        obj._owner = weakref.ref(self)
        self._objects.append(obj)
        self._keys.append(obj._key)
        return obj

    def release(self, obj: DeviceObject) -> None:
        """Destroy one object this owner owns, now (the GPU must be done with it)."""
        owner = obj._owner() if isinstance(obj, DeviceObject) and obj._owner else None
        if owner is not self:
            what = f"{obj.kind} {obj.label!r}" if isinstance(obj, DeviceObject) else repr(obj)
            raise OwnershipError(f"release(): {what} is not owned by this {type(self).__name__}")
        obj.destroy()
        self._objects.remove(obj)
        self._keys.remove(obj._key)
        obj._owner = None

    def _check_open(self) -> None:
        name = type(self).__name__
        if self._closed:
            raise ObjectDestroyedError(f"{name} used after close()")
        if self.device.closed:
            raise ObjectDestroyedError(f"{name} used after its Device was closed")

    @property
    def lock(self) -> threading.RLock:
        """The lock that serializes this owner's calls (held by its public methods)."""
        return self._lock

    @property
    def closed(self) -> bool:
        """Whether this owner or its Device was closed (then every use raises
        ObjectDestroyedError)."""
        return self._closed or self.device.closed

    def close(self) -> None:
        """Destroy the Vulkan objects this owns, newest first. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
            if not self.device.closed:
                self.device._destroy_children(self._keys)
            self._objects.clear()
            self._keys.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
