# vkdqs: `make demo` and `make test` set up whatever is missing first (Debian packages, .venv).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEB_PACKAGES := mesa-vulkan-drivers libvulkan1 vulkan-validationlayers glslc spirv-tools xvfb

.PHONY: demo test soak deps venv lint format shaders check-shaders bench figures pictures docs \
	docs-check docs-tools clean

demo: deps venv
	$(PY) -m vkdqs demo

test: deps venv
	VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} $(PY) -m pytest $(PYTEST_ARGS)

# Leak soak (not part of `make test`): the full cycle counts of tests/soak.py, validation layer
# on as in the suite, the window under a private Xvfb (DISPLAY unset). SOAK_ARGS: e.g.
# --render-cycles 500.
soak: deps venv
	env -u DISPLAY VKDQS_VALIDATION=1 VKDQS_SYNC_VALIDATION=1 $(PY) -m tests.soak $(SOAK_ARGS)

# Debian/Ubuntu packages: apt-get as root, sudo otherwise, or a clear message.
deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ "$$(command -v $(PYTHON))" = /usr/bin/python3 ]; then \
	  dpkg-query -W -f='$${Status}' python3-venv 2>/dev/null | grep -q "install ok installed" \
	    || missing="$$missing python3-venv"; \
	fi; \
	$(PYTHON) -c "import ensurepip, venv" 2>/dev/null || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "vkdqs needs:$$missing (Debian/Ubuntu names); install their equivalents" >&2; exit 1; \
	  elif [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  elif command -v sudo >/dev/null; then \
	    echo "installing with sudo:$$missing"; \
	    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing Debian packages:$$missing; run as root: apt-get install$$missing" >&2; exit 1; \
	  fi; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

shaders: deps venv
	$(PY) build_shaders.py

check-shaders: venv
	$(PY) build_shaders.py --check

bench: deps venv
	$(PY) benchmarks/bench_skinning.py
	$(PY) benchmarks/bench_render.py
	$(PY) benchmarks/bench_bake.py
	$(PY) benchmarks/bench_crowd.py
	$(PY) benchmarks/bench_centers.py

# The pictures and the plot of docs/skinning.md (matplotlib: the optional `docs` extra).
figures: deps venv
	$(PY) -c "import matplotlib" 2>/dev/null || $(PY) -m pip install -q -e '.[docs]'
	$(PY) docs/make_figures.py

# The README's pictures of a real model: make pictures FOX=path/to/Fox.glb (Khronos
# glTF-Sample-Assets' Fox, CC-BY 4.0; not in this repository).
pictures: deps venv
	@test -n "$(FOX)" || { echo "usage: make pictures FOX=path/to/Fox.glb" >&2; exit 2; }
	$(PY) docs/make_pictures.py "$(FOX)"

# The docs site (mkdocs.yml; the `docs` extra, which `make venv` installs with `test`): the
# gallery's pictures from examples/ on lavapipe, then the site in site/. A broken link, heading
# or API reference fails the build (--strict). `make docs-check` only builds (a few seconds).
docs: deps venv docs-tools
	$(PY) docs/make_gallery.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-check: venv docs-tools
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-tools: venv
	@$(PY) -c "import material, mkdocstrings_handlers.python" 2>/dev/null \
	  || $(PY) -m pip install -q -e '.[docs]'

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .ruff_cache
