# Two commands matter: `make demo` (set up, then render the book's figure)
# and `make test` (set up, then lint and run the whole suite). Both are
# idempotent and quick once the setup has been done.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := graphviz libcairo2-dev libpango1.0-dev pkg-config chromium chromium-driver
TEX_PACKAGES := texlive-latex-base texlive-latex-extra dvisvgm

.PHONY: setup system install demo test lint assets bench clean docs

# The venv is installed again only when what it was installed from changed: the
# content of pyproject.toml, or the checkout (an editable install points at one).
# Not by mtime: a fresh clone's pyproject.toml is always newer than a kept venv's
# stamp, and the three pip runs cost some 15 s (and the network) for nothing.
INSTALLED := $(VENV)/.installed
INSTALL_KEY := $(shell sha256sum pyproject.toml | cut -d' ' -f1) $(CURDIR)

setup: system
	@if [ "$$(cat $(INSTALLED) 2>/dev/null)" != "$(INSTALL_KEY)" ]; then \
		$(MAKE) --no-print-directory install; fi

# System packages, installed only when one is missing (needs root, as on CI).
system:
	@if ! dpkg -s $(APT_PACKAGES) $(TEX_PACKAGES) >/dev/null 2>&1; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && \
		apt-get install -y -qq $(APT_PACKAGES) >/dev/null && \
		apt-get install -y -qq --no-install-recommends $(TEX_PACKAGES) >/dev/null; \
	fi

# The packages are installed by uv, which fetches and unpacks them in parallel and keeps
# them in its cache: on a fresh clone the venv took 67 s with pip (27 of them unpacking
# torch), and takes about 30 s with uv (7 s when its cache already holds them). uv itself
# comes from PyPI, through the machine's pip, into the venv; pip is put in the venv too,
# for whoever wants to add a package by hand.
UV := $(VENV)/bin/uv
# Where this machine keeps its CPU build of torch: uv does not look there by itself,
# and asked for torch from the registry it would fetch a CUDA build of several GB.
TORCH_WHEELS := /opt/wheels

install:
	test -x $(PY) || python3 -m venv --without-pip $(VENV)
	test -x $(UV) || python3 -m pip --python $(PY) install -q uv
	$(UV) pip install -q --python $(PY) pip
	# torch pinned: the extra's ">=" would fetch the newest.
	if ls $(TORCH_WHEELS)/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then \
		$(UV) pip install -q --python $(PY) --no-index --find-links $(TORCH_WHEELS) \
			--no-deps 'torch==2.13.0'; \
	else $(UV) pip install -q --python $(PY) 'torch==2.13.0'; fi
	$(UV) pip install -q --python $(PY) -e '.[all,dev]'
	echo '$(INSTALL_KEY)' > $(INSTALLED)

BPV := $(VENV)/bin/backpropviz

# The main job: the book's worked example as a slide-ready figure and as a
# page to step through the backward pass.
demo: setup
	$(BPV) render examples/d2l_mlp.py -o d2l_mlp.svg
	$(BPV) render examples/d2l_mlp.py -o d2l_mlp.html
	@echo "wrote d2l_mlp.svg and d2l_mlp.html"

# The README's pictures, every one made by the command line.
assets: setup
	$(BPV) render examples/d2l_mlp.py -o assets/d2l_mlp.svg
	$(BPV) render examples/d2l_mlp.py -o assets/d2l_mlp.png
	$(BPV) render examples/d2l_objective.py -o assets/d2l_objective.png --fit 1920x1080
	$(BPV) render examples/d2l_figure.py -o assets/d2l_figure_symbolic.png --rankdir book --symbolic
	$(BPV) render examples/d2l_figure.py -o assets/d2l_figure.png --rankdir book
	$(BPV) render examples/add_mul.py -o assets/add_mul.png
	$(BPV) render examples/fork.py -o assets/fork.png --theme dark
	$(BPV) render examples/add_mul.py -o assets/add_mul.gif --quality l
	$(BPV) memory examples/d2l_mlp.py -o assets/d2l_mlp_memory.png
	$(BPV) render examples/training_loop.py --iterations -o assets/training_loop.png
	$(PY) examples/memory_growth.py -o assets/memory_growth.png
	# The capstone's check finds the student's bug: exit status 1 is what is expected.
	$(BPV) check examples/capstone/forked_neuron.py -o assets/capstone_check.png >/dev/null; \
		test $$? -eq 1

lint: setup
	$(VENV)/bin/ruff check backpropviz tests examples scenes bench

# Two workers, each given half the tests in order (a module's tests stay together, so
# its fixtures are made once) and taking over the other's last ones when it is done.
# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE):
# without it every worker and every process a test starts compiles the package and
# pytest rewrites every test module again (collecting took 8.9 s, not 4.0).
test: lint
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n 2 --dist worksteal

# The documentation, its figures drawn by the tool as it is built; warnings are errors.
docs: setup
	$(PY) -m sphinx -W -q -b html docs docs/_build/html
	@echo "wrote docs/_build/html/index.html"

# Each run lays out and sets its texts anew, as a first render does: nothing is read
# back from the layouts and texts kept on disk (animate.py measures both, in folders
# of its own).
bench: export BACKPROPVIZ_CACHE =
bench: setup
	$(PY) bench/engine.py
	$(PY) bench/render.py
	$(PY) bench/rolled.py
	$(PY) bench/page.py
	$(PY) bench/animate.py
	$(PY) bench/clip_lengths.py
	$(PY) bench/big_models.py
	$(PY) bench/batch.py
	$(PY) bench/startup.py

clean:
	rm -rf $(VENV) build *.egg-info media
