"""Studies of stand-ins for real models (issue 50), recorded by ``lase-nb record`` over the OpenAI
wire server and read by every chapter and appendix that reads a study, and by the book.

Real models make data the well-behaved test models never do (:mod:`tests.responders`):

- ``strong``: an API model right on about 90% of the problems, most answer tokens at log-probability
  exactly 0.0 (confidences tie at 1), long replies;
- ``sparse``: a provider that returns at most 5 alternatives per token, and none at all on some replies;
- ``unboxed``: a model that never writes ``\\boxed{}`` (every answer comes from the extraction step);
- ``constant``: one answer at one confidence everywhere (every first answer wrong and unsure).

Each is recorded on 12 problems, all strategies, from the user's folder; the chapters run there
with relative paths, their live steps (00, 02, A3) against the same stand-in. Every output is
checked: no traceback, no committed recording, the study's label shown, and no verdict that 12
problems cannot carry. Slow: they execute notebooks; :func:`test_a_constant_model_study_and_its_report`
is the fast one (no notebook: the report and chapter 06's confident errors, by hand and by the library).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from lase_nb import cli
from lase_nb.datasets import load_dataset
from tests import responders
from tests.test_study_chapters import committed_markers, outputs
from tests.wire_servers import OpenAIWireServer

N = 12
#: Every chapter and appendix that reads a study (A2 reads only the committed control).
CHAPTERS = ["00", "02", "03", "04", "05", "06", "07", "A1", "A3"]
STAND_INS: dict[str, Callable[[list], Callable[..., Any]]] = {
    "strong": responders.strong,
    "sparse": responders.sparse_logprobs,
    "unboxed": responders.unboxed,
    "constant": lambda problems: responders.constant(),
}
#: A verdict on a comparison: what chapters say only when the problems can carry it
#: (:func:`lase_nb.tables.decidable`, at least 20 problems).
VERDICT = re.compile(r": (above|below) (the leader alone|the single agent|MV)|\bregime: (corrective|destructive|neutral)"
                     r"|\bnegative control\*\*|is in the \*\*\w+\*\* regime")


def problems() -> list:
    """The study's problems, DOWN's calibration pool and the live steps' problems (so every stand-in
    knows every gold answer)."""
    return (load_dataset("arith_noop", None, N, 0) + load_dataset("arith_noop", None, 12, 1000)
            + load_dataset("arith", None, 12, 0))


def record(name: str, url: str, n: int, capsys) -> str:
    rc = cli.main(["record", "--backend", "openai", "--base-url", url, "--dataset", "arith-noop", "--n", str(n),
                   "--out", f"studies/{name}", "--label", f"stand-in {name}", "--n-down-calibration", "4", "--quiet"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return cap.out


@pytest.fixture
def user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the live steps' key (the wire server checks none)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # the user's folder: relative paths are read from here
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STAND_INS))
def test_every_chapter_reads_a_study_of_a_stand_in(name, user_folder, capsys):
    with OpenAIWireServer(STAND_INS[name](problems())) as srv:
        printed = record(name, srv.base_url, N, capsys)
        assert "vs single, points [95% bootstrap CI]" in printed and Path(f"studies/{name}/report.csv").is_file()
        rc = cli.main(["notebooks", *CHAPTERS, "--out", "executed", "-p", "traces", f"studies/{name}",
                       "-p", "studies", "None", "-p", "control_traces", "None", "-p", "interactive", "False",
                       "-p", "backend", "openai", "-p", "base_url", srv.base_url])
        assert rc == 0, capsys.readouterr().err
    marks = committed_markers()
    for ch in CHAPTERS:
        (nb,) = Path("executed").glob(f"{ch}_*.ipynb")
        text = outputs(nb)
        assert '"ename"' not in text, f"{nb.name} raised"
        leaked = sorted(m for m in marks if re.search(rf"(?<![\w-]){re.escape(m)}(?![\w-])", text))
        assert not leaked, f"{nb.name} shows committed recordings: {leaked[:5]}"
        if ch == "A3":  # it runs one problem of the study again: the study's, by its id
            assert "problem arith-noop-L1-" in text, f"{nb.name} does not run a problem of the study"
        elif ch != "00":  # the quickstart asks its own question (the study gives it one example, when it has one)
            assert f"stand-in {name}" in text, f"{nb.name} does not name the study it shows"
        verdicts = sorted({m.group(0) for m in VERDICT.finditer(text)})
        assert not verdicts, f"{nb.name} gives a verdict on {N} problems: {verdicts}"
    assert cli.main(["book", "--executed", "executed", "--out", "book"]) == 0
    assert "FAILED" not in (Path("book") / "index.html").read_text()


def test_a_constant_model_study_and_its_report(user_folder, capsys):
    """The cheapest stand-in, in the fast tier: a study of the constant model (every first answer
    wrong and unsure), its report, and chapter 06's confident errors (none: the gate accepts no
    answer), by the library and by section 6.1's code by hand."""
    from lase_nb.chapters import failures
    from lase_nb.runs import load_runs

    with OpenAIWireServer(STAND_INS["constant"](problems())) as srv:
        printed = record("constant", srv.base_url, 4, capsys)
    table = printed[printed.index("vs single, points [95% bootstrap CI]"):].splitlines()
    rows = [ln.split() for ln in table if ln.split()[:2] in (["single", "4"], ["lase", "4"])]
    assert [r[:5] for r in rows] == [["single", "4", "0.0", "[0.0,", "49.0]"], ["lase", "4", "0.0", "[0.0,", "49.0]"]]
    report = Path("studies/constant/report.csv").read_text().splitlines()
    assert report[0].startswith("study,strategy,n,accuracy") and report[1].startswith("stand-in constant,single,4,0,0,")
    st = load_runs("studies/constant", ["lase"], require=["lase"])["lase"].stages
    ce = failures.confident_errors(st, 0.8, 0.5)
    lead = st[st["stage"] == 0].set_index("problem_id")
    p, h = lead["p_min"].astype(float), lead["h_max"].astype(float)
    accepted = (p >= 0.8) & (h <= 0.5)
    by_hand = lead.assign(p_min=p)[accepted & ~lead["correct"].astype(bool)]
    assert len(lead) == 4 and not accepted.any() and p.round(6).eq(0.6).all()
    assert by_hand.index.tolist() == ce["problem_id"].tolist() == []
    assert json.loads(Path("studies/constant/study.json").read_text())["n"] == 4


def test_answers_without_a_confidence_are_counted_and_not_drawn():
    """The sparse provider's answers without log-probabilities: chapter 06's confident-errors figure
    counts them as escalated (U = 1, as the gate does) and says they are not drawn (their axes were NaN)."""
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from lase_nb.chapters import failures

    frame = pd.DataFrame({"problem_id": ["p0", "p1", "p2"], "stage": 0, "answer": ["1", "2", "3"], "answered": True,
                          "p_min": [0.99, np.nan, 0.5], "h_max": [0.05, np.nan, 1.0],
                          "correct": [True, True, False], "level": 1})
    counts = failures.gate_counts(frame, 0.8, 0.5)
    assert counts.loc["escalated (U = 1)"].tolist() == [1, 1]  # p1 (no confidence, right) and p2 (unsure, wrong)
    fig = failures.plot_confident_errors(frame, 0.8, 0.5)
    ax = fig.axes[0]
    assert "+1 answered without log-probabilities (U = 1), not drawn" in ax.get_xlabel()
    assert np.isfinite(ax.get_xlim()).all() and np.isfinite(ax.get_ylim()).all()
    assert sum(len(c.get_offsets()) for c in ax.collections if c.get_label()[:1] in "rwc") == 2
    plt.close(fig)
