"""The skinning methods a scene shows side by side, and the ``--method`` syntax (numpy-free).

Kept apart from :mod:`vkdqs.scenes` so the command line checks ``--method`` without loading
Vulkan.
"""

from __future__ import annotations

from .errors import InputError

__all__ = ["SCENE_METHODS", "parse_methods"]

#: The methods a scene draws side by side, left to right, in this order.
SCENE_METHODS = ("lbs", "dqs", "blend", "cor", "dqs_blender")


def parse_methods(methods: str) -> tuple[str, ...]:
    """The methods a ``methods`` string shows, left to right: one of :data:`SCENE_METHODS`,
    several joined by commas (``"lbs,dqs,blend"``), ``"both"`` (LBS and DQS) or ``"all"``."""
    if not isinstance(methods, str):
        raise InputError(f"methods must be a string, got {methods!r}")
    if methods == "both":
        return ("lbs", "dqs")
    if methods == "all":
        return SCENE_METHODS
    names = tuple(m.strip() for m in methods.split(","))
    bad = [m for m in names if m not in SCENE_METHODS]
    if bad or len(set(names)) != len(names):
        why = f"unknown {bad[0]!r}" if bad else "a method repeats"
        raise InputError(
            f"methods must be one of {', '.join(SCENE_METHODS)}, several joined by commas, "
            f"'both' or 'all'; got {methods!r} ({why})"
        )
    return names
