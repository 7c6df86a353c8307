"""The docs site's sources are whole (no GPU needed): the navigation and the pages agree, every
example has its gallery entry and picture, and the docstrings' Sphinx roles become links.

``mkdocs build --strict`` (``make docs-check``, run by CI) checks links, headings and the API
reference; these tests check what it cannot see.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import griffe  # the docs tools come with the `test` extra
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs's own tags (`!relative $config_dir`): their values do not matter here.
    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)


def _nav_pages(nav) -> list[str]:
    pages = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_every_page_is_in_the_nav_and_exists():
    nav = _nav_pages(_config()["nav"])
    assert len(nav) == len(set(nav)), "a page is in the nav twice"
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert set(nav) == on_disk, (
        f"in the nav, not in docs/: {sorted(set(nav) - on_disk)}; "
        f"in docs/, not in the nav: {sorted(on_disk - set(nav))}"
    )
    for page in nav:
        first = (DOCS / page).read_text().splitlines()[0]
        assert first.startswith("# "), f"{page} starts without a title"


def test_every_example_has_its_gallery_entry():
    gallery = _script("make_gallery")
    names = [p.stem for p in gallery.examples()]
    assert names, "no examples"
    for name in names:
        assert (gallery.GALLERY / f"{name}.txt").stat().st_size > 0, f"{name}: no output"
        source = (gallery.EXAMPLES / f"{name}.py").read_text()
        if re.search(r"""["'][\w.-]+\.png["']""", source):  # it writes a picture
            picture = gallery.GALLERY / f"{name}.png"
            assert picture.is_file(), f"{name} draws a picture: run python docs/make_gallery.py"
            assert picture.stat().st_size < 200_000, f"{picture.name} is large"
    pictures = {p.stem for p in gallery.GALLERY.glob("*.png")}
    outputs = {p.stem for p in gallery.GALLERY.glob("*.txt")}
    assert pictures <= set(names) and outputs == set(names), "stale files in docs/gallery"
    assert (DOCS / "gallery.md").read_text() == gallery.page(names, pictures), (
        "docs/gallery.md is stale: run python docs/make_gallery.py"
    )


def test_pictures_are_committed_not_ignored():
    ignore = (ROOT / ".gitignore").read_text().splitlines()
    assert "!docs/gallery/*.png" in ignore


def test_the_home_page_shows_the_readme_example():
    def first_python(text: str) -> str:
        return re.search(r"```python\n(.*?)```", text, re.S).group(1)

    readme = (ROOT / "README.md").read_text()
    assert first_python((DOCS / "index.md").read_text()) == first_python(readme)


@pytest.fixture(scope="module")
def vkdqs_api():
    return griffe.load("vkdqs", search_paths=[str(ROOT)], resolve_aliases=False)


def test_sphinx_roles_become_optional_links(vkdqs_api):
    numpydoc = _script("griffe_numpydoc")
    procedural = vkdqs_api["procedural"]
    text = numpydoc.rewrite(procedural["twist_pose"], "See :func:`candy_wrapper`.")
    assert text == (
        'See <autoref identifier="vkdqs.procedural.candy_wrapper" optional>'
        "<code>candy_wrapper()</code></autoref>."
    )
    text = numpydoc.rewrite(procedural, ":class:`~vkdqs.mesh.SkinnedMesh` and :mod:`numpy`")
    assert 'identifier="vkdqs.mesh.SkinnedMesh" optional><code>SkinnedMesh</code>' in text
    assert 'identifier="numpy" optional><code>numpy</code>' in text  # unknown: plain code
    assert numpydoc.rewrite(procedural, "in code::\n\n    x = 1") == "in code:\n\n    x = 1"
