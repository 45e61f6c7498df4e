"""``lase-nb report``: a tiny study written by hand, whose table is worked out by hand below.

Four problems, q1..q4; a price sheet of $1 in, $0.50 cached, $2 out per million tokens (no
minimum cached prefix). Every call writes 20 tokens after a 100-token prompt, except LASE's stage
1: the devil's note (80 in, 20 out) and the leader's revision (120 in, 10 out).

============  =============  ==========  ======================================================
run           right          calls each  per problem
============  =============  ==========  ======================================================
single        q1, q4         1           120 tokens; $140e-6, no cached input (the first prompt)
mv            q1, q2, q4     3 samples   360 tokens; $420e-6; samples 2 and 3 share the first's
                                         100-token prompt: 200 cached, $320e-6
lase-full     stage 0: q1 (p .95), q4 (p .99) right; q2 (p .5), q3 (p .9) wrong;
              stage 1 (every stage): all four right; 3 calls, 350 tokens, $400e-6; the
              revision shares the leader's 100-token prompt: $350e-6 with cached input
============  =============  ==========  ======================================================

Gated LASE at 0.8 / 0.5 stops at stage 0 on q1, q3 (a confident error) and q4 and escalates q2:
right on q1, q2, q4; calls (1 + 3 + 1 + 1) / 4 = 1.5; tokens (120 + 350 + 120 + 120) / 4 = 177.5;
dollars (3 x 140 + 400) / 4 = 205e-6, with cached input (3 x 140 + 350) / 4 = 192.5e-6.

Accuracy intervals (Wilson, 95%, n = 4): 2/4 -> [0.1500, 0.8500], 3/4 -> [0.3006, 0.9544],
4/4 -> [0.5101, 1]. Paired with the single agent: MV and gated LASE win q2 and lose none: +25
points, exact McNemar p = 1 (one discordant problem); the per-problem differences are
(0, 1, 0, 0), so a bootstrap mean is k/4 with k ~ Binomial(4, 1/4): P(k = 0) = 0.32 > 0.025 puts
the lower end at 0, P(k <= 2) = 0.949 < 0.975 < P(k <= 3) = 0.996 the upper end at 0.75. Every
stage wins q2 and q3: +50 points, p = 2 / 2**2 = 0.5; differences (0, 1, 1, 0), k ~ Binomial(4,
1/2): P(k = 0) = 0.0625 and P(k = 4) = 0.0625, so the interval is [0, 1].
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lase_nb import cli

IDS = ("q1", "q2", "q3", "q4")
SINGLE = (True, False, False, True)
MV = (True, True, False, True)
STAGE0 = [(True, 0.95), (False, 0.5), (False, 0.9), (True, 0.99)]  # (right, exp(LP_min)); H_max 0.1 everywhere


def write_run(folder: Path, strategy: str, problems: list[dict], calls: list[dict], stages: list[dict] = ()) -> None:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"strategy": strategy, "backend": "openai", "model": "tiny-model",
                                                      "dataset": "arith"}))
    for name, rows in (("problems", problems), ("calls", calls), ("stages", stages)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def call(pid: str, strategy: str, role: str, stage: int, agent: str, prompt: int = 100, completion: int = 20) -> dict:
    return {"problem_id": pid, "strategy": strategy, "used": True, "role": role, "stage": stage, "agent": agent,
            "prompt_tokens": prompt, "completion_tokens": completion}


def problem(pid: str, strategy: str, right: bool, prompt: int, completion: int) -> dict:
    return {"problem_id": pid, "strategy": strategy, "answer": "1" if right else "2", "gold": "1", "correct": right,
            "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@pytest.fixture
def study(tmp_path: Path) -> Path:
    out = tmp_path / "tiny"
    write_run(out / "single", "single", [problem(q, "single", r, 100, 20) for q, r in zip(IDS, SINGLE)],
              [call(q, "single", "solver", 0, "leader") for q in IDS])
    write_run(out / "mv", "mv", [problem(q, "mv", r, 300, 60) for q, r in zip(IDS, MV)],
              [call(q, "mv", "sample", 0, f"sample{k}") for q in IDS for k in range(3)])
    stages, calls = [], []
    for q, (right, p) in zip(IDS, STAGE0):
        stages += [{"problem_id": q, "strategy": "lase", "stage": 0, "supporter": None, "answer": "1" if right else "2",
                    "correct": right, "p_min": p, "h_max": 0.1, "prompt_tokens": 100, "completion_tokens": 20},
                   {"problem_id": q, "strategy": "lase", "stage": 1, "supporter": "devil", "answer": "1",
                    "correct": True, "p_min": 0.99, "h_max": 0.05, "prompt_tokens": 300, "completion_tokens": 50}]
        calls += [call(q, "lase", "leader", 0, "leader"), call(q, "lase", "devil", 1, "devil", 80, 20),
                  call(q, "lase", "leader", 1, "leader", 120, 10)]
    write_run(out / "lase-full", "lase", [problem(q, "lase", True, 300, 50) for q in IDS], calls, stages)
    (out / "study.json").write_text(json.dumps({"label": "hand study", "model": "tiny-model"}))
    sheet = tmp_path / "prices.json"
    sheet.write_text(json.dumps({"models": {"tiny-model": {"input": 1.0, "cached_input": 0.5, "output": 2.0}}}))
    return out


#: The table above, by hand: strategy -> (accuracy, lo, hi, diff, diff lo, diff hi, wins, losses, McNemar p,
#: calls, tokens, dollars per 1,000 problems, the same with cached input).
EXPECTED = {
    "single": (0.50, 0.1500, 0.8500, None, None, None, None, None, None, 1, 120, 0.140, 0.140),
    "mv": (0.75, 0.3006, 0.9544, 0.25, 0.0, 0.75, 1, 0, 1.0, 3, 360, 0.420, 0.320),
    "lase": (0.75, 0.3006, 0.9544, 0.25, 0.0, 0.75, 1, 0, 1.0, 1.5, 177.5, 0.205, 0.1925),
    "lase-full": (1.00, 0.5101, 1.0, 0.50, 0.0, 1.0, 2, 0, 0.5, 3, 350, 0.400, 0.350),
}
COLUMNS = ("accuracy", "acc_lo", "acc_hi", "diff_vs_single", "diff_lo", "diff_hi", "wins_vs_single",
           "losses_vs_single", "mcnemar_p", "calls_per_problem", "tokens_per_problem", "usd_per_1000",
           "usd_cached_per_1000")


def test_the_report_of_a_hand_computed_study(study, tmp_path, capsys):
    out_csv = tmp_path / "report.csv"
    rc = cli.main(["report", str(study), "--prices", str(tmp_path / "prices.json"), "--csv", str(out_csv)])
    printed = capsys.readouterr().out
    assert rc == 0
    rows = {r["strategy"]: r for r in csv.DictReader(out_csv.open())}
    assert list(rows) == list(EXPECTED)  # chapter 04's order
    for strategy, want in EXPECTED.items():
        got = rows[strategy]
        assert got["study"] == "hand study" and got["n"] == "4"
        for col, value in zip(COLUMNS, want):
            if value is None:
                assert got[col] == "", (strategy, col)
            else:
                assert float(got[col]) == pytest.approx(value, abs=1e-4), (strategy, col)
    # whole numbers are written and printed as integers
    assert rows["single"]["calls_per_problem"] == "1" and rows["mv"]["tokens_per_problem"] == "360"
    assert rows["lase"]["calls_per_problem"] == "1.5"
    line = next(ln for ln in printed.splitlines() if ln.split()[:1] == ["lase"])
    assert line.split() == ["lase", "4", "75.0", "[30.1,", "95.4]", "+25.0", "[+0.0,", "+75.0]", "+1/-0", "1.000",
                            "1.50", "178", "0.2050", "0.1925"]
    assert "dollars at tiny-model: $1.00 in, $0.50 cached, $2.00 out" in printed
    assert f"wrote {out_csv}" in printed


def test_several_studies_side_by_side_and_bad_input(study, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    for run in ("single", "mv", "lase-full"):
        (other / run).mkdir()
        for f in (study / run).iterdir():
            (other / run / f.name).write_text(f.read_text())
    (other / "study.json").write_text(json.dumps({"label": "the same, again"}))
    rc = cli.main(["report", str(study), str(other), "--price", "tiny-model", "--prices", str(tmp_path / "prices.json"),
                   "--csv", str(tmp_path / "two.csv")])
    printed = capsys.readouterr().out
    assert rc == 0
    assert "the studies side by side:" in printed
    assert "hand study: accuracy %" in printed and "the same, again: accuracy %" in printed
    rows = list(csv.DictReader((tmp_path / "two.csv").open()))
    assert [r["study"] for r in rows] == ["hand study"] * 4 + ["the same, again"] * 4
    # a run on far fewer problems is left out of the table, as in chapter 04, and named with its problems
    write_run(study / "moa", "moa", [problem("q1", "moa", True, 100, 20)], [call("q1", "moa", "proposer", 0, "p0")])
    rc = cli.main(["report", str(study), "--prices", str(tmp_path / "prices.json"), "--csv", str(tmp_path / "m.csv")])
    printed = capsys.readouterr().out
    assert rc == 0 and "not in the table, recorded on far fewer problems than the others: moa (1 problem)" in printed
    assert [r["strategy"] for r in csv.DictReader((tmp_path / "m.csv").open())] == list(EXPECTED)
    # no price for the model: the table without dollars, and the line says how to add one
    rc = cli.main(["report", str(study), "--csv", str(tmp_path / "none.csv")])
    printed = capsys.readouterr().out
    assert rc == 0 and "no dollars: tiny-model is not in the price sheet" in printed and "$ / 1,000" not in printed
    rc = cli.main(["report", str(tmp_path / "nowhere"), "--csv", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "lase-nb record" in err and not (tmp_path / "x.csv").exists()
    rc = cli.main(["report", str(study), "--price", "gpt-9", "--csv", str(tmp_path / "x.csv")])
    assert rc == 2 and "no price for model 'gpt-9'" in capsys.readouterr().err


def test_a_run_left_out_is_named_with_why_and_a_missing_table_stops_the_report(study, tmp_path, capsys):
    """Issue 65: a study whose lase-full has no manifest is reported without LASE's rows, and the
    report says which runs it read and which it left out, each with why; a finished run missing a
    table is one error line (exit 2); chapters' loader names the unfinished run once."""
    from lase_nb.runs import UNFINISHED, left_out_runs, load_runs

    (study / "lase-full" / "manifest.json").unlink()
    (study / "notes").mkdir()
    (study / "notes" / "manifest.json").write_text("{}")
    rc = cli.main(["report", str(study), "--prices", str(tmp_path / "prices.json"), "--csv", str(tmp_path / "r.csv")])
    printed = capsys.readouterr().out
    assert rc == 0
    lines = printed.splitlines()
    assert "runs read: single, mv" in lines
    assert f"left out lase-full: {UNFINISHED}" in lines
    assert "left out notes: a run of no strategy the report compares" in lines
    assert [r["strategy"] for r in csv.DictReader((tmp_path / "r.csv").open())] == ["single", "mv"]
    assert left_out_runs(study) == {"lase-full": UNFINISHED}
    assert left_out_runs(study, ["lase", "single", "moa"]) == {"lase-full": UNFINISHED}  # moa: never recorded
    assert list(load_runs(study, ["lase", "single"])) == ["single"]
    assert capsys.readouterr().out.splitlines() == [f"left out the run {study / 'lase-full'}: {UNFINISHED}"]
    assert list(load_runs(study, ["lase", "single"])) == ["single"]
    assert capsys.readouterr().out == ""  # once per process: a chapter reads its study in many cells
    (study / "mv" / "stages.jsonl").unlink()
    rc = cli.main(["report", str(study), "--csv", str(tmp_path / "r.csv")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert err.startswith("lase-nb: error: ") and f"{study / 'mv' / 'stages.jsonl'}: missing" in err


def test_sweep_of_an_unfinished_run_is_one_line(study, capsys):
    (study / "lase-full" / "manifest.json").unlink()
    rc = cli.main(["sweep", str(study / "lase-full")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "no manifest.json" in err
