# vkdqs: `make demo` and `make test` set up whatever is missing first (Debian packages, .venv).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEB_PACKAGES := mesa-vulkan-drivers libvulkan1 vulkan-validationlayers glslc spirv-tools xvfb

.PHONY: test-adopt test-minimum demo test test-quick test-width128 test-profiles test-large soak fuzz fuzz-short fuzz-manifest deps venv lint format shaders check-shaders bench figures \
	pictures docs docs-check docs-tools clean

demo: deps venv
	$(PY) -m vkdqs demo

# The suite runs in TEST_JOBS pytest-xdist worker processes (one per core by default; 1 runs
# it in one process), each with one lavapipe rasterizer thread unless LP_NUM_THREADS says
# otherwise: the suite is mostly Python, so processes use the cores better than lavapipe's
# threads do (2:48 against 4:46 in one process with one thread, 5:56 with one thread per core,
# on 2 cores). test-width128 runs with lavapipe's default, one thread per core.
TEST_JOBS ?= auto
XDIST = $(if $(filter 1,$(TEST_JOBS)),-p no:xdist,-n $(TEST_JOBS))
test: deps venv
	LP_NUM_THREADS=$${LP_NUM_THREADS:-1} VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} \
	  $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The tests that draw images or skin on the GPU and compare the results (docs/tests.md): run
# again by CI at lavapipe's 128-bit width (CPUs without AVX, ARM servers; about 1.5 minutes).
IMAGE_TESTS := $(addprefix tests/test_,$(addsuffix .py,draw_compute ddm_render offscreen_render \
	gpu_skinning crowd crowd_materials materials_render gltf_render delta_mush_gpu ddm_gpu \
	ddm_skinning lean_layout overlay cor registry window stills gltf_skinning morph bounds \
	dqs_blender mush_seams hostile_draw velocity_gpu))
test-width128: deps venv
	LP_NATIVE_VECTOR_WIDTH=128 VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} \
	  $(PY) -m pytest $(XDIST) -m gpu $(IMAGE_TESTS) $(PYTEST_ARGS)

# The image, compute, bake and memory tests again under memory profiles that make lavapipe
# behave like a discrete GPU without resizable BAR and a mobile GPU whose cached memory is not
# coherent (docs/memory.md; about 1.5 minutes each on 2 cores).
PROFILE_TESTS := $(IMAGE_TESTS) $(addprefix tests/test_,$(addsuffix .py,bake bake_batch memory_profiles record \
	method_recipe delta_mush_method))
MEMORY_PROFILES ?= discrete mobile
test-profiles: deps venv
	@for profile in $(MEMORY_PROFILES); do \
	  echo "== memory profile $$profile"; \
	  LP_NUM_THREADS=$${LP_NUM_THREADS:-1} VKDQS_MEMORY_PROFILE=$$profile \
	    VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} \
	    $(PY) -m pytest $(XDIST) -q -m gpu $(PROFILE_TESTS) $(PYTEST_ARGS) || exit 1; \
	done

# The whole GPU suite under the limits the Vulkan specification requires of every device
# (maxTexelBufferElements 65536, maxUniformBufferRange 16384, ...: the vulkan-minimum memory
# profile; docs/memory.md): the demo scenes, the examples, meshes past one texel view
# dispatched in chunks (about 2 minutes on 2 cores).
test-minimum: deps venv
	LP_NUM_THREADS=$${LP_NUM_THREADS:-1} VKDQS_MEMORY_PROFILE=vulkan-minimum \
	  VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} \
	  $(PY) -m pytest $(XDIST) -q -m gpu $(PYTEST_ARGS)

# The whole GPU suite again on an adopted device: each device fixture wraps a device made by an
# "app" with the plain vulkan binding (tests/vulkan_app.py) through Device.adopt, submitting
# through the app's callback (docs/vulkan-app.md; about 2.5 minutes on 2 cores).
test-adopt: deps venv
	LP_NUM_THREADS=$${LP_NUM_THREADS:-1} VKDQS_ADOPT=1 VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} \
	  $(PY) -m pytest $(XDIST) -q -m gpu $(PYTEST_ARGS)

# The issue-sized memory test: a 10M-vertex DQS skin with readback under the discrete profile,
# the same bits as the default device (the suite runs it at 1M; about 25 s, 4.5 GB).
test-large: deps venv
	VKDQS_LARGE_VERTICES=10000000 VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} \
	  $(PY) -m pytest -p no:xdist -q tests/test_memory_large.py $(PYTEST_ARGS)

# For development (CI runs everything): the tests that open no device, then a few GPU files
# that cover skinning, drawing and compute-then-draw (about 1.5 minutes on 2 cores).
QUICK_GPU_TESTS := tests/test_gpu_skinning.py tests/test_offscreen_render.py \
	tests/test_draw_compute.py tests/test_registry.py
test-quick: deps venv
	$(PY) -m pytest $(XDIST) -q -m "not gpu" $(PYTEST_ARGS)
	VKDQS_REQUIRE_DEVICE=$${VKDQS_REQUIRE_DEVICE:-1} $(PY) -m pytest $(XDIST) -q $(QUICK_GPU_TESTS) \
	  $(PYTEST_ARGS)

# Leak soak (not part of `make test`): the full cycle counts of tests/soak.py, validation layer
# on as in the suite, the window under a private Xvfb (DISPLAY unset). SOAK_ARGS: e.g.
# --render-cycles 500.
soak: deps venv
	env -u DISPLAY VKDQS_VALIDATION=1 VKDQS_SYNC_VALIDATION=1 $(PY) -m tests.soak $(SOAK_ARGS)

# Coverage-guided fuzzing of the glTF loader (atheris; tests/fuzz/, docs/development.md): the
# seed corpus is made in code into $(FUZZ_DIR)/corpus, which keeps growing between runs; a crash
# is written to $(FUZZ_DIR)/crashes/ and fails the target. FUZZ_SECONDS bounds the run,
# FUZZ_ARGS adds libFuzzer options (e.g. -seed=1 or -jobs=2). `make fuzz-short` is CI's minute.
FUZZ_SECONDS ?= 300
FUZZ_DIR ?= .fuzz
FUZZ_ARGS ?=
fuzz: venv
	@$(PY) -c "import atheris" 2>/dev/null || $(PY) -m pip install -q atheris
	mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/crashes
	$(PY) -m tests.fuzz.corpus $(FUZZ_DIR)/corpus > /dev/null
	set -o pipefail; $(PY) -m tests.fuzz.run -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	  -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
	  -artifact_prefix=$(FUZZ_DIR)/crashes/ $(FUZZ_ARGS) $(FUZZ_DIR)/corpus tests/fuzz/crashes \
	  2>&1 | sed '/^#/d; /^INFO: Instrumenting/d' \
	  || { echo "fuzz: the crash is in $(FUZZ_DIR)/crashes/: keep it in tests/fuzz/crashes/" \
	       "(tests/test_fuzz_regressions.py replays it) and fix it" >&2; exit 1; }

# The batch manifest reader (tests/fuzz/manifest.py): torn, hand-edited and hostile lines; seeded
# from tests.fuzz.manifest.seed_lines (tests/test_manifest_fuzz.py is its short version).
fuzz-manifest: venv
	@$(PY) -c "import atheris" 2>/dev/null || $(PY) -m pip install -q atheris
	mkdir -p $(FUZZ_DIR)/manifest-corpus $(FUZZ_DIR)/manifest-crashes
	$(PY) -c "from tests.fuzz.manifest import seed_lines; import pathlib, sys; \
	  pathlib.Path(sys.argv[1], 'seed.jsonl').write_bytes(b'\\n'.join(seed_lines()) + b'\\n')" \
	  $(FUZZ_DIR)/manifest-corpus
	$(PY) -m tests.fuzz.manifest -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	  -max_len=65536 -artifact_prefix=$(FUZZ_DIR)/manifest-crashes/ $(FUZZ_ARGS) \
	  $(FUZZ_DIR)/manifest-corpus

# CI's run is seeded and counted (not timed), so it is the same run on every machine: a crash
# there is the code's, never the luck of a draw; `make fuzz` keeps exploring.
fuzz-short:
	$(MAKE) fuzz FUZZ_SECONDS=300 FUZZ_ARGS="-seed=1 -runs=40000"

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

# The pictures and the plots of docs/skinning.md and docs/delta-mush.md (matplotlib: the
# optional `docs` extra), and delta-mush.md's table of DDM against Delta Mush (printed; its
# Fox rows with FOX=path/to/Fox.glb, Khronos glTF-Sample-Assets, not in this repository).
figures: deps venv
	$(PY) -c "import matplotlib" 2>/dev/null || $(PY) -m pip install -q -e '.[docs]'
	$(PY) docs/make_figures.py
	$(PY) docs/make_mush_figures.py $(if $(FOX),--fox "$(FOX)")
	$(PY) docs/make_velocity_figures.py $(if $(FOX),--fox "$(FOX)")

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
