# Two commands for a new user: `make lab` opens the notes, `make test` checks them.
# Both build a local virtual environment (.venv) the first time and reuse it after.

PYTHON ?= python3
# The committed outputs were recorded with this torch (a CPU build). Another release gets a virtual
# environment of its own, so trying one never touches .venv: `make test TORCH=torch==2.14.1` builds
# and uses .venv-torch2.14.1 (on Linux, PyPI's torch is a CUDA build of several GB). pyproject.toml
# declares the range of releases the notes have been run on.
PINNED_TORCH := torch==2.13.0
TORCH ?= $(PINNED_TORCH)
empty :=
space := $(empty) $(empty)
# The release spec as a folder name: torch==2.14.1 -> torch2.14.1 (operators and spaces dropped).
TORCH_TAG = $(subst $(space),,$(subst *,x,$(subst =,,$(subst <,,$(subst >,,$(TORCH))))))
VENV := $(if $(filter $(PINNED_TORCH),$(TORCH)),.venv,.venv-$(TORCH_TAG))
BIN := $(VENV)/bin
# The port `make lab` serves on: `make lab PORT=8899` when 8888 is taken.
PORT ?= 8888
# Where `make gpu` writes its matmul record (copy it to notebooks/data/ to commit it).
RECORD ?= $(or $(TMPDIR),/tmp)/matmul_record.json

.PHONY: setup lab test restore gpu browser load-test outputs figures timing clean assignment-check

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[test,lab]"
	touch $@

# Every setting (server root, autosave off, quiet log) is in lab/jupyter_lab_config.py, which the
# tests start their server from too. Opens a browser where there is one; the last line is the URL.
lab: setup
	$(BIN)/jupyter lab --config=lab/jupyter_lab_config.py --ServerApp.port=$(PORT)

# The committed outputs are CPU outputs: tests/conftest.py hides CUDA for the comparison.
# Lint first (seconds; no cache, so a run leaves no file behind), then the tests and every notebook.
test: setup
	$(BIN)/ruff check --no-cache .
	$(BIN)/ruff format --check --no-cache .
	$(BIN)/python -m pytest

# Put the notebooks back as committed (discards edits saved from the lab).
restore:
	git checkout -- notebooks

# On a CUDA machine: every notebook on the GPU with all its asserts (no output comparison), the
# unit tests' CUDA paths, then the matmul benchmark for this card.
gpu: setup
	$(BIN)/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'make gpu needs a CUDA GPU and a CUDA build of torch')"
	$(BIN)/python tools/execute_notebooks.py --limit 30 --total 300
	LECTURE_TEST_CUDA=1 $(BIN)/python -m pytest tests --ignore-glob='tests/test_browser*.py' --ignore=tests/test_lab.py
	$(BIN)/python -m lecture_utils.matmul_reference --out $(RECORD)
	@echo "matmul record: $(RECORD) (copy it to notebooks/data/matmul_reference_h100.json on an H100 SXM, then make outputs)"

# Headless Chromium and its driver for tests/test_browser.py (Debian/Ubuntu; needs root).
browser:
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

# The notebooks with timing asserts, under nbval five times while busy processes load every core.
load-test: setup
	CUDA_VISIBLE_DEVICES= $(BIN)/python tools/nbval_under_load.py --runs 5

# Re-execute every notebook in a fresh kernel on the CPU and rewrite its outputs.
outputs: setup
	CUDA_VISIBLE_DEVICES= $(BIN)/python tools/execute_notebooks.py --write

# Redraw every figure under images/.
figures: setup
	$(BIN)/python -m lecture_utils.figures images

# Execute every notebook (writing nothing) and report the time of each notebook and slow cell.
timing: setup
	CUDA_VISIBLE_DEVICES= $(BIN)/python tools/execute_notebooks.py

# The five files of "The assignment's functions" (README), each copied alone into an empty folder and
# run in a fresh interpreter, in assignment 1's locked environment: Python 3.12 where there is one,
# torch 2.6.0 and the jaxtyping, einops and numpy of its uv.lock, in .venv-assignment (lecture_utils is
# not installed there: it needs torch 2.13). A check to run by hand, not part of `make test`: on Linux
# that torch is a CUDA build of several GB. The pins are exact, so pip reads no config file here (one
# that caps releases or names a mirror could only refuse them): ASSIGNMENT_PIP_CONFIG=<file> uses yours.
ASSIGNMENT_PINS := torch==2.6.0 jaxtyping==0.3.0 einops==0.8.1 numpy==2.2.4
ASSIGNMENT_PYTHON ?= $(shell python3.12 -c "" >/dev/null 2>&1 && echo python3.12 || echo $(PYTHON))
ASSIGNMENT_PIP_CONFIG ?= /dev/null

assignment-check: .venv-assignment/.installed
	.venv-assignment/bin/python tests/test_copyable.py

.venv-assignment/.installed:
	test -x .venv-assignment/bin/python || $(ASSIGNMENT_PYTHON) -m venv .venv-assignment
	PIP_CONFIG_FILE=$(ASSIGNMENT_PIP_CONFIG) .venv-assignment/bin/python -m pip install --quiet $(ASSIGNMENT_PINS)
	touch $@

clean:
	rm -rf .venv .venv-torch* .venv-assignment *.egg-info
