"""Make the docs site's gallery (``make docs``): run every program in ``examples/`` offscreen.

Each example runs as ``tests/test_examples.py`` runs it: ``python examples/NAME.py --offscreen``
in an empty folder, without ``DISPLAY``, on Mesa's lavapipe when it is installed (so the pictures
do not depend on the machine's GPU). What it prints goes to ``docs/gallery/NAME.txt``; the PNG
it writes, if any, to ``docs/gallery/NAME.png`` (small: an adaptive palette, optimized). Then
``docs/gallery.md`` is written: per example its docstring's first paragraph, the picture, the
output and the source (included by ``pymdownx.snippets``, so the page always shows the file as
it is).

    python docs/make_gallery.py                 # every example
    python docs/make_gallery.py viewer          # only examples/viewer.py (and the page)
"""

from __future__ import annotations

import ast
import glob
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from vkdqs.files import atomic_output, write_bytes

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
GALLERY = ROOT / "docs" / "gallery"
PAGE = ROOT / "docs" / "gallery.md"
MAX_WIDTH = 640

INTRO = """\
# Gallery

The programs in `examples/`, each run with `--offscreen` on Mesa's lavapipe by
`docs/make_gallery.py` (`make docs`): what it draws, what it prints, and its source. Without
`--offscreen` the drawing examples open a window instead (`pip install '.[viewer]'`). The
examples are tested as they are run here (`tests/test_examples.py`).
"""


def examples() -> list[Path]:
    """The example programs, by name."""
    return sorted(EXAMPLES.glob("*.py"))


def summary(path: Path) -> str:
    """The first paragraph of an example's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    text = " ".join(doc.split("\n\n")[0].split()).removeprefix("Point of interest: ")
    return text[:1].upper() + text[1:]


def page(names: list[str], pictures: set[str]) -> str:
    """The gallery page for examples ``names`` (stems); ``pictures``: those that drew one."""
    parts = [INTRO]
    for name in names:
        source = EXAMPLES / f"{name}.py"
        parts.append(f"\n## `{name}.py`\n\n{summary(source)}\n")
        if name in pictures:
            parts.append(f"\n![What examples/{name}.py draws](gallery/{name}.png)\n")
        parts.append(
            f'\n```text title="python examples/{name}.py --offscreen"\n'
            f'--8<-- "docs/gallery/{name}.txt"\n```\n'
            f'\n```python title="examples/{name}.py"\n--8<-- "examples/{name}.py"\n```\n'
        )
    return "".join(parts)


def lavapipe_env() -> dict[str, str]:
    """The environment an example runs in: no display; lavapipe unless a driver was chosen."""
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    icds = sorted(glob.glob("/usr/share/vulkan/icd.d/lvp_icd.*.json"))
    if icds and not (env.get("VK_ICD_FILENAMES") or env.get("VK_DRIVER_FILES")):
        env["VK_ICD_FILENAMES"] = env["VK_DRIVER_FILES"] = icds[0]
    return env


def shrink(src: Path, dst: Path) -> None:
    """Write ``src`` to ``dst`` at most MAX_WIDTH wide, as a palette PNG."""
    from PIL import Image

    with Image.open(src) as img:
        img = img.convert("RGB")
        if img.width > MAX_WIDTH:
            height = round(img.height * MAX_WIDTH / img.width)
            img = img.resize((MAX_WIDTH, height), Image.Resampling.LANCZOS)
        img = img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        with atomic_output(dst) as f:  # as vkdqs writes every file
            img.save(f, format="PNG", optimize=True)


def run(example: Path) -> bool:
    """Run one example; write its output and picture. True when it drew a picture."""
    name = example.stem
    with tempfile.TemporaryDirectory(prefix=f"gallery-{name}-") as tmp:
        result = subprocess.run(
            [sys.executable, str(example), "--offscreen"],
            cwd=tmp,
            env=lavapipe_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0:
            sys.exit(f"examples/{name}.py failed (status {result.returncode}):\n{result.stderr}")
        write_bytes(GALLERY / f"{name}.txt", result.stdout.encode())
        pngs = sorted(Path(tmp).glob("*.png"))
        if len(pngs) > 1:
            sys.exit(f"examples/{name}.py wrote {len(pngs)} PNGs; the gallery shows one")
        picture = GALLERY / f"{name}.png"
        if pngs:
            shrink(pngs[0], picture)
        else:
            picture.unlink(missing_ok=True)
    what = f"{picture.relative_to(ROOT)} ({picture.stat().st_size // 1024} KiB)" if pngs else ""
    print(f"examples/{name}.py: {what or 'no picture'}")
    return bool(pngs)


def main(argv: list[str]) -> int:
    GALLERY.mkdir(exist_ok=True)
    names = [p.stem for p in examples()]
    unknown = sorted(set(argv) - set(names))
    if unknown:
        sys.exit(f"no such example: {', '.join(unknown)} (examples: {', '.join(names)})")
    for example in examples():
        if not argv or example.stem in argv:
            run(example)
    for stale in GALLERY.iterdir():
        if stale.stem not in names:
            stale.unlink()
    pictures = {name for name in names if (GALLERY / f"{name}.png").exists()}
    write_bytes(PAGE, page(names, pictures).encode())
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
