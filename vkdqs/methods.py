"""The skinning methods a scene shows side by side, and the ``--method`` syntax (numpy-free).

Kept apart from :mod:`vkdqs.scenes` so the command line checks ``--method`` without loading
Vulkan.
"""

from __future__ import annotations

from .errors import InputError

__all__ = ["DIFF", "METHOD_NAMES", "SCENE_METHODS", "method_name", "parse_methods"]

#: The methods a scene draws side by side, left to right, in this order.
SCENE_METHODS = ("lbs", "dqs", "blend", "cor", "dqs_blender")
#: ``--method diff``: one copy, posed by DQS, coloured by |DQS - LBS| per vertex (shown alone).
DIFF = "diff"
#: What labels and titles call each method's copy.
METHOD_NAMES = {
    "dqs": "DQS",
    "lbs": "LBS",
    "blend": "LBS/DQS blend",
    "cor": "CoR",
    "dqs_blender": "DQS (Blender)",
    DIFF: "|DQS - LBS|",
}


def method_name(method: str) -> str:
    """What a label calls a method's copy ("LBS", "DQS", "|DQS - LBS|", ...)."""
    return METHOD_NAMES[method]


def parse_methods(methods: str) -> tuple[str, ...]:
    """The methods a ``methods`` string shows, left to right: one of :data:`SCENE_METHODS`,
    several joined by commas (``"lbs,dqs,blend"``), ``"both"`` (LBS and DQS), ``"all"``, or
    ``"diff"`` alone (:data:`DIFF`)."""
    if not isinstance(methods, str):
        raise InputError(f"methods must be a string, got {methods!r}")
    if methods == DIFF:
        return (DIFF,)
    if DIFF in (m.strip() for m in methods.split(",")):
        raise InputError(
            f"'diff' is shown alone (one copy coloured by |DQS - LBS|), not with other "
            f"methods; got {methods!r}"
        )
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
            f"'both', 'all' or 'diff'; got {methods!r} ({why})"
        )
    return names
