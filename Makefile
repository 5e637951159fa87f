# Two commands for a new user: `make lab` opens the notes, `make test` checks them.
# Both build a local virtual environment (.venv) the first time and reuse it after.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The committed outputs were recorded with this torch; `make test TORCH=torch` takes the
# newest release instead (on Linux that is a CUDA build of several GB).
TORCH ?= torch==2.13.0
PORT ?= 8888
# Jupyter refuses to run as root unless told; containers often run as root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: setup lab test outputs figures timing clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[test,lab]"
	touch $@

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) --no-browser $(ALLOW_ROOT)

test: setup
	$(BIN)/python -m pytest

# Re-execute every notebook in a fresh kernel on the CPU and rewrite its outputs.
outputs: setup
	CUDA_VISIBLE_DEVICES= $(BIN)/python tools/execute_notebooks.py --write

# Redraw every figure under images/.
figures: setup
	$(BIN)/python -m lecture_utils.figures images

# Execute every notebook (writing nothing) and report the time of each notebook and slow cell.
timing: setup
	$(BIN)/python tools/execute_notebooks.py

clean:
	rm -rf $(VENV) *.egg-info
