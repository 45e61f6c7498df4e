"""The pipeline chapter (03) run live on the embedded model: LASE full chains made now, not read from traces."""

from __future__ import annotations

import json
import sqlite3

import papermill as pm
import pytest

from lase_nb.book.execution import NOTEBOOKS


@pytest.mark.slow
def test_pipeline_chapter_runs_live_on_the_embedded_model(tmp_path, monkeypatch):
    monkeypatch.setenv("LASE_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out = tmp_path / "03.ipynb"
    # short answers keep the 7 sequential stages of the two chains well under two minutes on two cores
    pm.execute_notebook(str(NOTEBOOKS / "03_lase_pipeline.ipynb"), str(out),
                        parameters={"live": True, "n_problems": 2, "interactive": False, "max_tokens": 48},
                        cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False)
    cells = json.loads(out.read_text())["cells"]
    outputs = [o for c in cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                     + "".join(o.get("data", {}).get("text/plain", "")) for o in outputs)
    with sqlite3.connect(tmp_path / "cache.sqlite") as con:
        requests = [json.loads(r) for (r,) in con.execute("SELECT request FROM calls")]
    # the answer-extraction step adds one call per leader response without a boxed answer
    extractions = sum(bool(r["params"].get("prefix")) for r in requests)
    assert extractions <= 8  # at most one per leader response (2 chains x 4 stages)
    # two full chains = 2 x (1 leader + 3 x (supporter + revision)) = 14 calls, plus the extractions, all made now
    assert f"live: {14 + extractions} model calls, 0 answered from the cache" in text
    assert len(requests) == 14 + extractions
    assert "2 problems, 4 stages each" in text
    # the transcript is shown up to the stage whose note changed the answer (or LASE's stop)
    assert "Stage 0 · leader" in text
    figures = {p.name for p in (tmp_path / "figures").glob("*.png")}
    assert {"pipeline_stage_walk.png", "pipeline_batch.png", "pipeline_inclusions.png"} <= figures
