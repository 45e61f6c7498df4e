"""A user's own study end to end (issue 44): recorded by ``lase-nb record`` over the OpenAI wire
server, then chapters 02, 04, 05, 06 and 07 and the book on it alone, from the user's folder with
relative paths; then two labelled studies side by side. Slow: it executes notebooks.

The study is on ``arith_noop`` problems, whose ids (``arith-noop-L1-...``) no committed recording
uses, so a committed problem id or label in an output would show the committed data leaking in.

Then a study of every data set the loaders accept (issue 65), each from a small file the test writes in
the set's published format (:data:`PUBLISHED`; nothing is downloaded), recorded over the wire server
and read by every chapter and appendix that reads a study (slow). The fast tier holds one: a GSM8K
study (no levels) through the report and the sections of chapter 06 that need levels.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Callable, Sequence

import pytest

from lase_nb import cli
from lase_nb.datasets import DATASETS, load_dataset
from lase_nb.runs import COMMITTED_DIR, COMMITTED_STUDIES, study_label
from tests.responders import student
from tests.test_datasets import GPQA_HEADER, TQA_HEADER, write_csv, write_jsonl
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


# ------------------------------------------------------------------ every data set's published format

#: Problems in each file: the study's and DOWN's calibration pool (drawn from the same file).
FILE_N = 16
#: The study's problems (the rest of the file is DOWN's calibration pool).
STUDY_N = 10


def _gsm(tmp: Path) -> list[str]:
    rows = [{"question": f"Ana has {i + 3} shells and finds {i + 2} more. How many shells does she have?",
             "answer": f"She has {i + 3} + {i + 2} = <<{i + 3}+{i + 2}={2 * i + 5}>>{2 * i + 5} shells.\n#### "
                       f"{2 * i + 5:,}"} for i in range(FILE_N)]
    return ["--data-path", str(write_jsonl(tmp / "gsm8k_test.jsonl", rows))]


def _gsm_symbolic(tmp: Path) -> list[str]:
    rows = [{"id": i // 2, "instance": i % 2, "question": f"A box holds {i + 4} pens and {i + 1} are taken. How many "
             f"pens are left?", "answer": f"{i + 4} - {i + 1} = 3.\n#### 3", "original_id": i} for i in range(FILE_N)]
    return ["--data-path", str(write_jsonl(tmp / "GSM_symbolic.jsonl", rows))]


def _math500(tmp: Path) -> list[str]:
    golds = ["\\frac{1}{2}", "3\\sqrt{2}", "10\\pi", "7", "(1,2)", "\\text{yes}", "x^2+1", "-4"]
    rows = [{"problem": f"Problem {i}: simplify the expression number {i}.", "solution": f"So $\\boxed{{{golds[i % 8]}}}$.",
             "answer": golds[i % 8], "subject": ["Algebra", "Geometry"][i % 2], "level": 1 + i % 5,
             "unique_id": f"test/algebra/{i}.json"} for i in range(FILE_N)]
    return ["--data-path", str(write_jsonl(tmp / "math500.jsonl", rows))]


def _math_lv5(tmp: Path) -> list[str]:
    root = tmp / "MATH" / "test"
    golds = ["\\frac{3}{4}", "12", "2\\sqrt{3}"]
    for i in range(FILE_N + 4):
        f = root / ["algebra", "geometry"][i % 2] / f"{i}.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        level = "Level 5" if i < FILE_N else "Level 3"
        f.write_text(json.dumps({"problem": f"Find the value of expression {i}.", "level": level,
                                 "type": ["Algebra", "Geometry"][i % 2],
                                 "solution": f"It is $\\boxed{{{golds[i % 3]}}}$."}))
    return ["--data-path", str(root)]


def _mmlu_pro(tmp: Path) -> list[str]:
    rows = [{"question_id": i, "question": f"Which option is right in question {i}?",
             "options": [f"option {k} of {i}" for k in range(10)], "answer": "ABCDEFGHIJ"[i % 10],
             "answer_index": i % 10, "category": ["law", "math", "biology"][i % 3], "src": "ori"} for i in range(FILE_N)]
    return ["--data-path", str(write_jsonl(tmp / "mmlu_pro.jsonl", rows))]


def _gpqa(tmp: Path) -> list[str]:
    rows = [[f"rec{i}", f"Which particle is meant in question {i}?", f"right {i}", f"wrong {i}a", f"wrong {i}b",
             f"wrong {i}c", "Physics", "Optics"] for i in range(FILE_N)]
    return ["--data-path", str(write_csv(tmp / "gpqa_diamond.csv", GPQA_HEADER, rows))]


def _truthfulqa(tmp: Path) -> list[str]:
    rows = [["Adversarial", "Misconceptions", f"What happens in case {i}?", f"best {i}", f"best {i}",
             f"bad {i}a; bad {i}b; bad {i}c", "src"] for i in range(FILE_N)]
    return ["--data-path", str(write_csv(tmp / "TruthfulQA.csv", TQA_HEADER, rows))]


def _arith(tmp: Path) -> list[str]:
    return ["--levels", "1", "2", "3"]


def _jsonl(tmp: Path) -> list[str]:
    rows = [{"prompt": f"A train leaves at {i + 1} and arrives {i + 2} hours later. At what hour does it arrive?",
             "target": str(2 * i + 3), "source": "mine"} for i in range(FILE_N)]
    return ["--data-path", str(write_jsonl(tmp / "mine.jsonl", rows)), "--question-field", "prompt",
            "--answer-field", "target", "--answer-kind", "number"]


#: Each data set the loaders accept, as a writer of a small file in its published format that
#: returns the ``lase-nb record`` options reading it (arith: generated, three levels).
PUBLISHED: dict[str, Callable[[Path], list[str]]] = {
    "gsm8k": _gsm, "gsm_symbolic": _gsm_symbolic, "math500": _math500, "math_lv5": _math_lv5,
    "mmlu_pro": _mmlu_pro, "gpqa": _gpqa, "truthfulqa": _truthfulqa, "arith": _arith, "jsonl": _jsonl,
}


def published_problems(name: str, opts: Sequence[str]) -> list:
    """Every problem of ``name``'s file (the study's and DOWN's calibration pool), as the loaders read it."""
    if name == "arith":
        return load_dataset("arith", None, 40, 0, levels=(1, 2, 3)) + load_dataset("arith", None, 40, 1000,
                                                                                  levels=(1, 2, 3))
    args = cli.build_parser().parse_args(["record", "--out", "unused", "--dataset", name, *opts])
    return cli._load_problems(args, None, 0)


def record_published(name: str, tmp: Path, url: str, capsys, strategies: Sequence[str] = ()) -> str:
    """Record a study of ``name``'s file over the wire server at ``url`` into ``studies/<name>``
    (labelled ``<name> study``); return what ``lase-nb record`` printed."""
    rc = cli.main(["record", "--backend", "openai", "--base-url", url, "--dataset", name, *PUBLISHED[name](tmp),
                   "--n", str(STUDY_N), "--n-down-calibration", "4", "--out", f"studies/{name}",
                   "--label", f"{name} study", "--quiet", *(["--strategies", *strategies] if strategies else [])])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return cap.out


def test_every_data_set_the_loaders_accept_has_a_published_format_here():
    assert set(PUBLISHED) == set(DATASETS) - {"arith_noop"}  # arith-noop: the study above


#: Every chapter and appendix that reads a study (A2 reads only the committed control; A5 a
#: group run of the committed study's problems).
ALL_CHAPTERS = ["00", "02", "03", "04", "05", "06", "07", "A1", "A3"]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_every_chapter_reads_a_study_of_every_data_set(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    with OpenAIWireServer(student(published_problems(name, PUBLISHED[name](tmp_path)))) as srv:
        record_published(name, tmp_path, srv.base_url, capsys)
        rc = cli.main(["notebooks", *ALL_CHAPTERS, "--out", "executed", "-p", "traces", f"studies/{name}", *PARAMS,
                       "-p", "backend", "openai", "-p", "base_url", srv.base_url])
        assert rc == 0, capsys.readouterr().err
    for ch in ALL_CHAPTERS:
        (nb,) = Path("executed").glob(f"{ch}_*.ipynb")
        text = outputs(nb)
        assert '"ename"' not in text, f"{nb.name} raised on the {name} study"
        if ch not in ("00", "A3"):
            assert f"{name} study" in text, f"{nb.name} does not name the {name} study"


def test_a_gsm8k_study_without_levels_through_the_report_and_chapter_06(tmp_path, monkeypatch, capsys):
    """The fast tier's one: a GSM8K study (no levels) recorded from the published format over the
    wire server; the report reads every run, and chapter 06's escalation by level says in one line
    that there are no levels and goes on with the pooled row (it stopped with a DataError before)."""
    from lase_nb.chapters import failures
    from lase_nb.runs import load_runs

    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.chdir(tmp_path)
    with OpenAIWireServer(student(published_problems("gsm8k", PUBLISHED["gsm8k"](tmp_path)))) as srv:
        printed = record_published("gsm8k", tmp_path, srv.base_url, capsys, strategies=["single", "lase-full"])
    assert "runs read: single, lase-full" in printed and "left out: none" in printed
    lase = load_runs("studies/gsm8k", ["lase"], require=["lase"])["lase"]
    assert lase.problems["level"].isna().all() and lase.manifest["dataset"] == "gsm8k"
    esc, cost = failures.level_view(lase, 0.8, 0.5)
    assert esc["level"].tolist() == cost["level"].tolist() == ["all"] and esc["n"].tolist() == [STUDY_N]
    assert esc["level"].nunique() <= 2  # the chapter draws no by-level figure
    text = failures.describe_escalation(esc, cost, failures.paper_escalation(0.8, sweep=False))
    assert text.startswith("**What it shows.** This study's problems carry no difficulty levels, so escalation by "
                           "difficulty is not shown. ")
