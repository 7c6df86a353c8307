"""The package's layers: each module imports only from its own layer or the ones below, and the
import graph has no cycle (read from the source, CPU only)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vkdqs"

#: Layer of each module (dotted, without "vkdqs."); a prefix ending in "." covers a package.
#: 0 errors; 1 numpy (math, the method registry, the references, meshes, glTF); 2 the Vulkan
#: plumbing; 3 the engine (skinning, rendering, crowds); 4 baking (files written from the
#: engine's results); 5 the applications (scenes, stills, comparisons, viewer, command line).
LAYERS = {
    "errors": 0,
    "dq": 1,
    "reference": 1,
    "mesh": 1,
    "material": 1,
    "bones": 1,
    "procedural": 1,
    "camera": 1,
    "images": 1,
    "files": 1,
    "geometry": 1,
    "clip": 1,
    "shader_interface.": 1,
    "shaders.": 1,
    "methods": 1,
    "methods.needs": 1,
    "methods.ddm": 1,
    "methods.ddm.reference": 1,
    "methods.delta_mush": 1,
    "methods.delta_mush.reference": 1,
    "methods.velocity": 1,
    "methods.velocity.entry": 1,
    "methods.velocity.need": 1,
    "methods.velocity.reference": 1,
    "methods.cor": 1,
    "methods.cor.reference": 1,
    "engine.bone_boxes": 1,
    "engine.vertex_packing": 1,
    "gltf.": 1,
    "gpu.": 2,
    "methods.ddm.gpu": 3,
    "methods.delta_mush.gpu": 3,
    "methods.delta_mush.passes": 3,
    "methods.velocity.passes": 3,
    "methods.cor.gpu": 3,
    "engine.": 3,
    "baking.": 4,
    "app.": 5,
    "__main__": 5,
}
NUMPY_ONLY = 1  # layers up to this one must not import vulkan or glfw


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1] or ["__init__"]
        out[".".join(parts)] = path
    return out


def _layer(module: str) -> int:
    for prefix, layer in LAYERS.items():
        if module == prefix or (prefix.endswith(".") and module.startswith(prefix)):
            return layer
        if prefix.endswith(".") and module == prefix[:-1]:
            return layer
    raise AssertionError(f"vkdqs.{module} is in no layer: add it to LAYERS in {__file__}")


def _imports(module: str, path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """(vkdqs modules, third-party top-level names) imported at module level or in functions,
    skipping `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text())
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    internal, external = set(), set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    name = alias.name
                    if name == "vkdqs" or name.startswith("vkdqs."):
                        internal.add(name.removeprefix("vkdqs").lstrip(".") or "__init__")
                    else:
                        external.add(name.split(".")[0])
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                elif child.module and child.module.split(".")[0] == "vkdqs":
                    target = child.module.removeprefix("vkdqs").lstrip(".")
                else:
                    external.add((child.module or "").split(".")[0])
                    continue
                for alias in child.names:
                    sub = f"{target}.{alias.name}" if target else alias.name
                    internal.add(sub if sub in known else (target or "__init__"))
            visit(child)

    visit(tree)
    internal.discard(module)
    return internal, external


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = _modules()
    known = set(modules)
    graph, externals = {}, {}
    for name, path in modules.items():
        graph[name], externals[name] = _imports(name, path, known)
    return graph, externals


def test_every_module_imports_only_its_layer_or_below():
    graph, _ = _graph()
    problems = []
    for module, deps in graph.items():
        if module == "__init__":
            continue  # the package's lazy __getattr__ re-exports from every layer
        for dep in deps:
            if dep != "__init__" and _layer(dep) > _layer(module):
                problems.append(f"vkdqs.{module} (layer {_layer(module)}) imports vkdqs.{dep}")
    assert not problems, "\n".join(problems)


def test_the_numpy_layers_do_not_import_vulkan_or_glfw():
    _, externals = _graph()
    bad = [
        f"vkdqs.{m} imports {sorted(ext & {'vulkan', 'glfw'})}"
        for m, ext in externals.items()
        if m != "__init__" and _layer(m) <= NUMPY_ONLY and ext & {"vulkan", "glfw"}
    ]
    assert not bad, "\n".join(bad)


def test_only_the_gpu_layer_imports_the_vulkan_binding():
    """Above vkdqs.gpu, modules take ``vk`` from vkdqs.gpu.calls, whose guarded import turns a
    missing loader library into a CapabilityError; importing ``vulkan`` directly would let a
    direct ``from vkdqs.engine.skinner import Skinner`` fail with the binding's raw OSError."""
    _, externals = _graph()
    bad = [
        f"vkdqs.{m} imports vulkan: use `from .gpu.calls import vk`"
        for m, ext in externals.items()
        if not m.startswith("gpu.") and "vulkan" in ext
    ]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    graph, _ = _graph()
    state: dict[str, int] = {}
    cycles = []

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if dep == "__init__" or dep not in graph:
                continue
            if state.get(dep) == 1:
                cycles.append(" -> ".join([*stack[stack.index(dep) :], dep]))
            elif dep not in state:
                walk(dep, [*stack, dep])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def _references() -> list[str]:
    """Every ``"module:attribute"`` reference the registry and the needs load late."""
    from vkdqs import methods
    from vkdqs.methods import needs

    refs = list(needs.REFERENCES)
    for m in methods.METHODS.values():
        refs += [h for h in (*m.before, *m.after) if isinstance(h, str)]
    return refs


def test_late_references_resolve_and_name_code_above_the_numpy_layer():
    """The registry (layer 1) names its GPU parts and the shader interface's packing by
    reference (:func:`vkdqs.methods.needs.load`): each resolves to something callable in a
    module no lower than the numpy layer, and no reference hides an import from a higher
    layer than the engine's (what a Skinner, layer 3, calls)."""
    from vkdqs.methods import needs

    refs = _references()
    assert "vkdqs.methods.delta_mush.passes:DeltaMushPasses.from_inputs" in refs
    assert "vkdqs.methods.velocity.passes:VelocityPass.from_inputs" in refs
    for ref in refs:
        module = ref.split(":")[0].removeprefix("vkdqs.")
        assert 1 <= _layer(module) <= 3, ref
        assert callable(needs.load(ref)), ref
    with pytest.raises(Exception, match="attribute"):
        needs.load("vkdqs.methods.needs")


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("from .engine.renderer import Renderer\n", "imports vkdqs.engine.renderer"),
        ("import vulkan as vk\n", "imports ['vulkan']"),
    ],
)
def test_the_checks_catch_a_violation(tmp_path, monkeypatch, source, problem):
    """A numpy-layer module that imports upward, or imports vulkan, is reported."""
    fake = tmp_path / "vkdqs"
    for path in PACKAGE.rglob("*.py"):
        dst = fake / path.relative_to(PACKAGE)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(path.read_text())
    (fake / "dq.py").write_text(source + (PACKAGE / "dq.py").read_text())
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    check = (
        test_every_module_imports_only_its_layer_or_below
        if "renderer" in source
        else test_the_numpy_layers_do_not_import_vulkan_or_glfw
    )
    with pytest.raises(AssertionError, match=re.escape(problem)):
        check()
