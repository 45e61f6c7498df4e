"""A user's own study end to end (issue 44): recorded by ``lase-nb record`` over the OpenAI wire
server, then chapters 02, 04, 05, 06 and 07 and the book on it alone, from the user's folder with
relative paths; then two labelled studies side by side. Slow: it executes notebooks.

The study is on ``arith_noop`` problems, whose ids (``arith-noop-L1-...``) no committed recording
uses, so a committed problem id or label in an output would show the committed data leaking in.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from lase_nb import cli
from lase_nb.datasets import load_dataset
from lase_nb.runs import COMMITTED_DIR, COMMITTED_STUDIES, study_label
from tests.responders import student
from tests.wire_servers import OpenAIWireServer

N = 20
CHAPTERS = ["02", "04", "05", "06", "07"]
PARAMS = ["-p", "interactive", "False", "-p", "studies", "None", "-p", "control_traces", "None"]


def committed_markers() -> set[str]:
    """Problem ids, folder names, model names and chapter labels of every committed recording."""
    marks = set(COMMITTED_STUDIES) | {study_label(COMMITTED_DIR / name) for name in COMMITTED_STUDIES}
    for f in COMMITTED_DIR.glob("*/*/problems.jsonl"):
        marks |= {json.loads(line)["problem_id"] for line in f.read_text().splitlines()[:5]}
    for f in COMMITTED_DIR.glob("*/*/manifest.json"):
        m = json.loads(f.read_text())
        marks |= {str(m[k]) for k in ("model", "label", "model_label") if m.get(k)}
    return marks


def outputs(nb: Path) -> str:
    cells = json.loads(nb.read_text())["cells"]
    return "\n".join(json.dumps(c.get("outputs", [])) for c in cells if c["cell_type"] == "code")


@pytest.mark.slow
def test_a_recorded_study_alone_and_beside_another(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.chdir(tmp_path)  # the user's folder: relative paths are read from here
    problems = load_dataset("arith_noop", None, N, 0) + load_dataset("arith_noop", None, 60, 1000)
    with OpenAIWireServer(student(problems)) as srv:
        for name, label in (("mine", "my model"), ("other", "my model, again")):
            rc = cli.main(["record", "--backend", "openai", "--base-url", srv.base_url, "--dataset", "arith-noop",
                           "--n", str(N), "--out", f"studies/{name}", "--label", label, "--quiet"])
            assert rc == 0, capsys.readouterr().err
    rc = cli.main(["notebooks", *CHAPTERS, "--out", "executed", "-p", "traces", "studies/mine", *PARAMS])
    assert rc == 0, capsys.readouterr().err
    marks = committed_markers()
    for ch in CHAPTERS:
        (nb,) = Path("executed").glob(f"{ch}_*.ipynb")
        text = outputs(nb)
        assert "my model" in text, f"{nb.name} does not name the study it shows"
        leaked = sorted(m for m in marks if re.search(rf"(?<![\w-]){re.escape(m)}(?![\w-])", text))
        assert not leaked, f"{nb.name} shows committed recordings: {leaked[:5]}"
        assert '"ename"' not in text, f"{nb.name} raised"
    assert cli.main(["book", "--executed", "executed", "--out", "book"]) == 0
    page = (Path("book") / "index.html").read_text()
    assert "FAILED" not in page
    # two of the user's studies side by side in one chapter, each under its label
    rc = cli.main(["notebooks", "04", "--out", "two", "-p", "traces", "studies/mine",
                   "-p", "studies", '["studies/other"]', "-p", "interactive", "False"])
    assert rc == 0, capsys.readouterr().err
    text = outputs(next(Path("two").glob("04_*.ipynb")))
    assert "my model" in text and "my model, again" in text
    assert os.path.isdir("studies/mine/lase-full")
