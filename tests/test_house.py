"""The shape of the package, measured from the source (no device): few top-level modules, one
job per module, no module or function past a size where it stops having one job.

The numbers are the house's (docs/architecture.md): at most 14 modules at the top level of
``vkdqs/`` (the rest live in the folders that show the layers), no module over 1000 lines but
the glTF reader (which may not grow), no function over 120 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vkdqs"
MAX_TOP_LEVEL_MODULES = 14
MAX_MODULE_LINES = 1000
MAX_FUNCTION_LINES = 120
#: Modules allowed past MAX_MODULE_LINES, with the most lines they may have.
LARGE_MODULES = {"gltf/reader.py": 1450}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function in ``source`` longer than ``limit`` lines
    (from its ``def`` to its last line; decorators not counted)."""
    found = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    size = child.end_lineno - child.lineno + 1
                    if size > limit:
                        found.append((name, size))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return found


def test_the_top_level_holds_at_most_14_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, (
        f"{len(top)} modules at the top level of vkdqs/ (at most {MAX_TOP_LEVEL_MODULES}): "
        f"{top}; put new ones in the folder of their layer"
    )


def test_every_folder_is_a_package():
    """A folder of modules without __init__.py would be a namespace package the wheel drops."""
    folders = {p.parent for p in _modules()}
    missing = [str(f.relative_to(PACKAGE)) for f in folders if not (f / "__init__.py").exists()]
    assert not missing, f"folders without __init__.py: {missing}"


def test_no_module_is_over_1000_lines():
    big = []
    for path in _modules():
        rel = path.relative_to(PACKAGE).as_posix()
        limit = LARGE_MODULES.get(rel, MAX_MODULE_LINES)
        if _lines(path) > limit:
            big.append(f"vkdqs/{rel}: {_lines(path)} lines (at most {limit})")
    assert not big, "split these by topic:\n" + "\n".join(big)


def test_no_function_is_over_120_lines():
    big = [
        f"vkdqs/{path.relative_to(PACKAGE).as_posix()}: {name} ({size} lines)"
        for path in _modules()
        for name, size in long_functions(path.read_text())
    ]
    assert not big, "split these into steps:\n" + "\n".join(big)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("def f():\n" + "    x = 1\n" * 120, [("f", 121)]),
        ("def f():\n" + "    x = 1\n" * 119, []),
        ("class A:\n    def m(self):\n" + "        x = 1\n" * 130, [("A.m", 131)]),
        ("def f():\n    def g():\n" + "        x = 1\n" * 125, [("f", 127), ("f.g", 126)]),
    ],
)
def test_the_function_measure_counts_what_it_says(source, found):
    assert long_functions(source) == found


def engine_names(source: str, names: set[str]) -> list[tuple[int, str]]:
    """Where ``source`` spells one of ``names`` as a string constant, or asks ``.needs``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            out.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Attribute) and node.attr == "needs":
            out.append((node.lineno, ".needs"))
    return out


def test_the_engine_names_no_method_and_no_need():
    """The engine carries method objects and asks them (``SkinningMethod.inputs``, the hooks,
    ``box_rule``, ``skins``); it spells no method's or need's name, "none" included (the
    registry's entry :data:`vkdqs.methods.NONE`, not a constant compared with), and never tests
    ``.needs``."""
    from vkdqs import methods

    names = set(methods.METHODS) | set(methods.NEEDS) | {methods.NONE.name}
    found = [
        f"{path.relative_to(PACKAGE)}:{line} {what}"
        for path in sorted((PACKAGE / "engine").glob("*.py"))
        for line, what in engine_names(path.read_text(), names)
    ]
    found += [
        f"{path.relative_to(PACKAGE)}: UNSKINNED"
        for path in sorted((PACKAGE / "engine").glob("*.py"))
        if any(
            isinstance(n, (ast.Name, ast.Attribute, ast.alias))
            and "UNSKINNED"
            in (getattr(n, "id", None), getattr(n, "attr", None), getattr(n, "name", None))
            for n in ast.walk(ast.parse(path.read_text()))
        )
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('if method == "ddm":\n    pass\n', [(1, "'ddm'")]),
        ('x = "delta_mush_data" in m.needs\n', [(1, "'delta_mush_data'"), (1, ".needs")]),
        ("x = inputs.ddm\n", []),
    ],
)
def test_the_engine_names_check_sees_what_it_says(source, found):
    assert engine_names(source, {"ddm", "delta_mush_data"}) == found


#: The accesses to another object's private members that remain, by (module, member), each with
#: its reason; a new one fails test_private_accesses_are_the_listed_few.
PRIVATE_ACCESSES = {
    # argparse names the type of add_subparsers() privately; the help formatter overrides its
    # documented-by-use hook
    ("app/cli/options.py", "_SubParsersAction"): "argparse's own type",
    ("app/cli/options.py", "_get_help_string"): "the formatter's override calls argparse's",
    # bones.py is dq's packing half: both validate arrays and scale with the same helpers
    ("bones.py", "_as_array"): "dq's validation",
    ("bones.py", "_rescale"): "dq's uniform-scale split",
    ("bones.py", "_true_length"): "dq's uniform-scale split",
    # a Skinner's helpers in its own module and package, made and owned by it
    ("engine/programs.py", "_views"): "SkinProgram, the Skinner's pipeline helper",
    ("engine/programs.py", "_morph_view"): "SkinProgram, the Skinner's pipeline helper",
    ("engine/programs.py", "_render_pass"): "SkinProgram, the Skinner's pipeline helper",
    ("engine/programs.py", "_framebuffer"): "the Skinner's vertex-path draws, recorded there",
    ("engine/programs.py", "_mesh_buffers"): "the Skinner's vertex-path draws, recorded there",
    ("engine/programs.py", "_mesh_inputs"): "the Skinner's vertex-path draws, recorded there",
    # the glTF reader's tables, shared by the gltf package's modules
    ("gltf/materials.py", "_images"): "the reader's image table",
    ("gltf/parts.py", "_table"): "the scene's node table",
    ("gltf/scene.py", "_targets"): "an animation's channels by path",
    ("gltf/summary.py", "_has_scale"): "the scene's cached traits",
    ("gltf/summary.py", "_scale_animated"): "the scene's cached traits",
    # the ownership protocol of Device, DeviceObject and ResourceOwner, in one module
    ("gpu/objects.py", "_owner"): "ownership",
    ("gpu/objects.py", "_key"): "ownership",
    ("gpu/objects.py", "_h"): "ownership",
    ("gpu/objects.py", "_register"): "ownership",
    ("gpu/objects.py", "_check_open"): "ownership",
    ("gpu/objects.py", "_is_live"): "ownership",
    ("gpu/objects.py", "_destroy_child"): "ownership",
    ("gpu/objects.py", "_destroy_children"): "ownership",
    ("gpu/pipelines.py", "_key"): "the pipeline cache keys layouts and render passes",
    ("methods/ddm/gpu.py", "_asdict"): "a namedtuple's public method",
}


def private_accesses(source: str) -> list[str]:
    """The private members ``source`` reads of objects other than ``self`` and ``cls``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__"):
                continue
            v = node.value
            if isinstance(v, ast.Name) and v.id in ("self", "cls", "vk", "np", "os", "sys"):
                continue
            out.append(node.attr)
    return out


def test_private_accesses_are_the_listed_few():
    found = {
        (path.relative_to(PACKAGE).as_posix(), attr)
        for path in _modules()
        for attr in private_accesses(path.read_text())
    }
    unlisted = sorted(found - set(PRIVATE_ACCESSES))
    assert not unlisted, (
        f"private members of other objects read (list them with a reason): {unlisted}"
    )
    assert sorted(private_accesses("inst._skinner.close()\nself._x = other._y\n")) == [
        "_skinner",
        "_y",
    ]
