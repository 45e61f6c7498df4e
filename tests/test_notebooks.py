"""The notebook collection: clean sources, in sync with their jupytext twins, and executing under papermill."""

from __future__ import annotations

import json
from pathlib import Path

import jupytext
import papermill as pm
import pytest

from lase_nb.notebooks import NOTEBOOKS, list_notebooks

BOOKS = list_notebooks()


def test_collection_is_numbered_and_present():
    names = [b.stem for b in BOOKS]
    assert names and names[0] == "00_quickstart"
    assert names == sorted(names)


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(nb: Path):
    data = json.loads(nb.read_text())
    for cell in data["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, f"{nb.name}: strip outputs"


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_ipynb_matches_its_jupytext_source(nb: Path):
    src = nb.with_suffix(".py")
    assert src.exists(), f"{nb.name} has no py:percent twin; run `make sync-notebooks`"
    a = [(c.cell_type, c.source.strip()) for c in jupytext.read(src).cells]
    b = [(c.cell_type, c.source.strip()) for c in jupytext.read(nb).cells]
    assert a == b, f"{nb.name} differs from {src.name}: run `make sync-notebooks`"


@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_notebook_declares_parameters(nb: Path):
    declared = pm.inspect_notebook(str(nb))
    assert "interactive" in declared, f"{nb.name}: the parameters cell must set `interactive`"


@pytest.mark.slow
@pytest.mark.parametrize("nb", BOOKS, ids=lambda p: p.stem)
def test_notebook_executes(nb: Path, tmp_path, monkeypatch):
    monkeypatch.setenv("LASE_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    out = tmp_path / nb.name
    pm.execute_notebook(str(nb), str(out), parameters={"interactive": False}, cwd=str(NOTEBOOKS),
                        kernel_name="python3", progress_bar=False)
    executed = json.loads(out.read_text())
    errors = [o for c in executed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert list((tmp_path / "figures").glob("*.png")), f"{nb.name} exported no figure"
