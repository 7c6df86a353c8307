"""Render targets: the sample counts vkdqs renders with and the colour formats."""

from __future__ import annotations

from .vulkan_types import Format

#: Sample counts vkdqs renders with; ``VkSampleCountFlagBits`` for n samples is the number n.
SAMPLE_COUNTS = (1, 2, 4, 8)
OFFSCREEN_COLOR_FORMAT = Format.R8G8B8A8_SRGB
#: Swapchain formats in order of preference (sRGB, so the shader's linear output is encoded).
SWAPCHAIN_COLOR_FORMATS = (Format.B8G8R8A8_SRGB, Format.R8G8B8A8_SRGB)


def sample_bit(samples: int) -> int:
    """``VkSampleCountFlagBits`` for ``samples`` (1, 2, 4 or 8)."""
    if samples not in SAMPLE_COUNTS:
        raise ValueError(f"samples must be one of {SAMPLE_COUNTS}, got {samples!r}")
    return samples
