"""A griffe extension for the docs site: vkdqs's numpydoc docstrings as mkdocstrings renders them.

The docstrings follow the numpydoc convention, whose cross-references are Sphinx roles
(``:func:`tube```, ``:meth:`reset```, ``:class:`~vkdqs.gltf.GltfScene```) and whose literal
blocks follow a line ending in ``::``. Markdown knows neither, so before mkdocstrings renders
a docstring this extension rewrites each role into an optional cross-reference (a link where
the target is documented on the site, plain code elsewhere, never a warning) and ``::`` at the
end of a line into ``:``. Relative targets resolve as Sphinx resolves them: against the object
itself, its parents (class, module, package), then as written.

:data:`FIXES` lists docstrings that break the numpydoc layout, each with the edit that makes it
parse, until the docstring itself is fixed. An entry whose text is no longer there is reported
as a warning, which fails ``mkdocs build --strict``: remove the entry then.

mkdocs.yml loads it with ``extensions: [docs/griffe_numpydoc.py:Numpydoc]``.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(func|meth|class|attr|mod|data|exc|obj|const):`(?P<target>[^`]+)`")
LITERAL_BLOCK = re.compile(r"(?<=\S)::$", re.M)

# object path -> (text in its docstring, replacement). Each one is a docstring problem to fix in
# vkdqs/ itself; the replacement only makes the current text render.
FIXES: dict[str, tuple[str, str]] = {}

log = logging.getLogger("mkdocs.plugins.griffe_numpydoc")


def _candidates(obj: griffe.Object, target: str) -> list[str]:
    """Where a Sphinx role's target may live, nearest scope first."""
    scopes = []
    scope: griffe.Object | None = obj
    while scope is not None:
        scopes.append(scope.path)
        scope = scope.parent
    return [f"{s}.{target}" for s in scopes] + [target]


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The path of the object that ``target``, written in ``obj``'s docstring, names."""
    collection = obj.modules_collection
    for path in _candidates(obj, target):
        try:
            collection.get_member(path)
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        return path
    return None


def rewrite(obj: griffe.Object, text: str) -> str:
    """``text`` (a docstring of ``obj``) with its Sphinx roles and ``::`` made Markdown."""

    def role(match: re.Match) -> str:
        target = match["target"].strip()
        shown = target
        if target.startswith("~"):
            target = target[1:]
            shown = target.rsplit(".", 1)[-1]
        target = target.lstrip(".").removesuffix("()")
        if match[1] in ("func", "meth") and not shown.endswith(")"):
            shown += "()"
        path = _resolve(obj, target) or target
        code = f"<code>{html.escape(shown)}</code>"
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return LITERAL_BLOCK.sub(":", ROLE.sub(role, text))


class Numpydoc(griffe.Extension):
    """Rewrite every docstring of the loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        pending = {path for path in FIXES if path.split(".")[0] == pkg.name}
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                text = obj.docstring.value
                if obj.path in FIXES:
                    old, new = FIXES[obj.path]
                    if old in text:
                        text = text.replace(old, new, 1)
                        pending.discard(obj.path)
                obj.docstring.value = rewrite(obj, text)
            stack.extend(m for m in obj.members.values() if not m.is_alias)
        for path in sorted(pending):
            log.warning(
                "docs/griffe_numpydoc.py: FIXES[%r] no longer applies (the docstring changed "
                "or the object moved): remove the entry",
                path,
            )
