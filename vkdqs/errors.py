"""Exception types raised by vkdqs.

Every error vkdqs raises derives from :class:`VkdqsError`. Errors about the caller's data also
derive from :class:`ValueError`, so ``except ValueError`` keeps working for code that does not know
vkdqs. Each message names the problem, where it is (which vertex, bone or slot) and the value.
"""

from __future__ import annotations

#: The largest magnitude vkdqs accepts for a coordinate or a bone-matrix entry. The GPU computes
#: in float32; with inputs up to 1e9 no intermediate (e.g. LBS's cofactor normals, whose length
#: squares products of two entries) can overflow float32's 3.4e38.
MAX_MAGNITUDE = 1e9


class VkdqsError(Exception):
    """Base class of every error raised by vkdqs."""


class InputError(VkdqsError, ValueError):
    """Bad input data: wrong shape or dtype, out-of-range index, NaN/inf, non-rigid matrix, ..."""


class LimitError(InputError):
    """The input exceeds a limit of the shader or the device (e.g. more bones than fit a UBO)."""


class OutputError(VkdqsError, OSError):
    """A file vkdqs was asked to write cannot be written, or may not be: the output is a folder,
    a device, or the input being read; the disk is full, a quota or the file-size limit is
    reached, or permission is denied. The message is one line naming the file, why, and that the
    old file (if any) is unchanged. Also an ``OSError``, with ``errno`` and ``filename``."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ObjectDestroyedError(VkdqsError):
    """A vkdqs object was used after ``close()``/``destroy()``."""


class VulkanError(VkdqsError):
    """A Vulkan call failed; the message says which call and what was being done."""


class NoSuitableDeviceError(VkdqsError):
    """No physical device matched; the message lists why each device was rejected."""


class CapabilityError(VkdqsError):
    """The device or the system lacks something vkdqs needs (a feature, format, layer, surface
    support); the message names it and, where there is one, what to install or change."""


class OwnershipError(InputError):
    """An object was handed to an owner it does not belong to (another Renderer or Device)."""


class ShaderError(VkdqsError):
    """A SPIR-V module is missing or unreadable."""


class ValidationLayerError(VkdqsError):
    """The Khronos validation layer reported errors (:meth:`vkdqs.Device.check_validation`)."""
