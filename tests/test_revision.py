"""Stage 1 of gated LASE replayed (lase_nb.organism.revision): note kinds, training targets, the
decomposition and the stop rule, on hand-written chains and on the committed recording."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from lase_nb.organism import controls, revision, stage_one
from lase_nb.organism.recipe import label_attempt, parse_steps
from lase_nb.runs import problems_from_manifest
from lase_nb.strategies import StrategyConfig
from lase_nb.traces import load_run
from lase_nb.types import Problem

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "data" / "traces" / "arith-organism-point" / "lase-full"


def problem(start: int, ops: list) -> Problem:
    x = start
    for op, v in ops:
        x = {"+": x + v, "-": x - v, "*": x * v, "/": x // v}[op]
    q = f"Start with {start}; then " + ", ".join(f"{op} {v}" for op, v in ops) + "."
    return Problem("p", q, str(x), meta={"start": start, "ops": [list(o) for o in ops], "level": len(ops)})


P3 = problem(3, [("+", 3), ("*", 3), ("-", 15)])  # 3 + 3 = 6, 6 x 3 = 18, 18 - 15 = 3
WRONG_AT_1 = "3 + 3 = 7\n7 × 3 = 21\n21 - 15 = \\boxed{6}"  # slips at step 1, carried on
RIGHT = "3 + 3 = 6\n6 × 3 = 18\n18 - 15 = \\boxed{3}"


@pytest.mark.parametrize("attempt, note, kind", [
    (WRONG_AT_1, "Step 1 fails: redo 3 + 3 column by column.", "pointed"),
    (WRONG_AT_1, "Step 2 fails: redo 7 × 3 column by column.", "pointed-late"),
    (WRONG_AT_1, "Every step holds; the riskiest is step 2, 7 × 3: defend it.", "holds"),
    (RIGHT, "Step 3 fails: redo 18 - 15 column by column.", "alarm"),
    (RIGHT, "Every step holds; the riskiest is step 1: defend it.", "clear"),
    ("I think it is \\boxed{3}", "Step 1 fails: redo it.", "other"),
])
def test_note_kinds(attempt, note, kind):
    assert revision.note_kind(P3, attempt, note) == kind


def test_a_pointer_on_a_wrong_attempt_teaches_the_fix_and_carries_it():
    text, kind = revision.target(P3, WRONG_AT_1, "Step 1 fails: redo 3 + 3 column by column.")
    assert kind == "pointed"
    assert text.startswith("Step 1 again: 3 + 3") and "I change it" in text
    assert text.endswith("18 - 15 = \\boxed{3}")


@pytest.mark.parametrize("attempt, note", [
    (WRONG_AT_1, "Every step holds; the riskiest is step 2, 7 × 3: defend it."),
    (WRONG_AT_1, "Step 2 fails: redo 7 × 3 column by column."),
    (RIGHT, "Step 3 fails: redo 18 - 15 column by column."),
    (RIGHT, "Every step holds."),
])
def test_any_other_note_teaches_the_leader_to_keep_its_attempt(attempt, note):
    text, _ = revision.target(P3, attempt, note)
    assert parse_steps(text.split("\n", 1)[1]) == list(label_attempt(P3, attempt).steps)
    assert "my answer stands" in text and "change" not in text


def test_a_named_step_that_holds_is_recomputed_before_it_is_kept():
    text, _ = revision.target(P3, RIGHT, "Step 2 fails: redo 6 × 3 column by column.")
    assert text.startswith("Step 2 again: 6 × 3: ") and "That is what I had" in text


def _rows(first: list[bool], outcome: list[str], source: str = "s") -> pd.DataFrame:
    correct = [o == "fixed" or (f and o == "kept") for f, o in zip(first, outcome)]
    return pd.DataFrame({"source": source, "problem_id": [f"p{i}" for i in range(len(first))],
                         "first_correct": first, "outcome": outcome, "correct": correct})


def test_decomposition_counts_fixes_breaks_and_the_paired_difference_by_hand():
    first = pd.Series([True, False, False, True, True, False], index=[f"p{i}" for i in range(6)])
    # escalated: p1 (wrong, fixed), p2 (wrong, kept), p3 (right, broken), p4 (right, kept); p0, p5 not escalated
    rows = _rows([False, False, True, True], ["fixed", "kept", "broken", "kept"])
    rows["problem_id"] = ["p1", "p2", "p3", "p4"]
    twice = rows.copy()
    twice.loc[twice["problem_id"] == "p3", ["outcome", "correct"]] = ["kept", True]
    table = revision.decomposition(first, {"one each": rows, "one fix": twice}).set_index("stage 1 of gated LASE")
    assert table.loc["one each", "fixed"].startswith("1/2 = 50%")
    assert table.loc["one each", "broken"].startswith("1/2 = 50%")
    assert table.loc["one each", "net"] == 0 and table.loc["one each", "vs alone (points)"].startswith("+0.0")
    assert table.loc["one fix", "net"] == 1 and table.loc["one fix", "vs alone (points)"].startswith("+16.7")
    assert table.loc["one fix", "McNemar p"] == 1.0  # one discordant pair


def test_the_stop_rule_passes_only_when_both_bars_are_met():
    ok = _rows([False] * 8 + [True] * 20, ["fixed"] * 2 + ["kept"] * 6 + ["kept"] * 19 + ["broken"])
    few = _rows([False] * 8 + [True] * 20, ["fixed"] * 1 + ["kept"] * 7 + ["kept"] * 20)
    many_breaks = _rows([False] * 8 + [True] * 20, ["fixed"] * 4 + ["kept"] * 4 + ["kept"] * 17 + ["broken"] * 3)
    assert revision.STAGE1_RULE == {"fix": 0.25, "break_": 0.05}
    assert revision.stage1_verdict({"a": ok}).endswith("step 3 runs.")
    assert revision.stage1_verdict({"a": few}).endswith("nothing ships.")
    # the best size is the one with the most net problems: many_breaks nets +1, ok +1, few +1 -> most fixes
    verdict = revision.stage1_verdict({"few": few, "many": many_breaks})
    assert "many" in verdict and "breaks 15% (above" in verdict and verdict.endswith("nothing ships.")


def test_gated_final_stops_at_the_first_sure_stage():
    st = pd.DataFrame({"problem_id": ["a"] * 3 + ["b"] * 3, "stage": [0, 1, 2] * 2,
                       "p_min": [0.5, 0.9, 0.5, 0.5, 0.6, 0.7], "h_max": [0.1] * 6,
                       "correct": [False, True, False, False, False, True]})
    assert revision.gated_final(st, 0.8, 0.5).to_dict() == {"a": True, "b": True}
    assert revision.gated_final(st, 0.8, 0.5, last_stage=1).to_dict() == {"a": True, "b": False}


def test_the_replay_reads_the_recording_as_the_pipeline_sent_it():
    """Counters that can fail: the escalated set is the recording's own gate decisions, and grading
    the recorded revisions with the replay's grader gives the recording's stage-1 correctness."""
    run = load_run(RECORDING)
    cfg = StrategyConfig.from_manifest(run.manifest["config"])
    cases = stage_one.stage_one_cases(run, problems_from_manifest(run.manifest), cfg.tau_lp, cfg.tau_h)
    s0 = run.stages[run.stages["stage"] == 0]
    assert len(cases) == int(s0["uncertain"].astype(bool).sum())
    rows = revision.score(cases, [c.recorded_revision for c in cases], "recorded")
    assert rows["correct"].tolist() == [c.recorded_correct for c in cases]
    assert all("\\boxed" not in c.note for c in cases)


def test_committed_stage_one_rows_match_their_metadata():
    folder = ROOT / "data" / "revision"
    metas = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for meta_path in metas:
        if meta_path.name == "train_log.json":
            continue
        meta = json.loads(meta_path.read_text())
        rows = pd.read_json(meta_path.with_suffix(".jsonl"), lines=True)
        arms = len(meta.get("arms", [None]))  # the ensemble's replay: one row per problem and arm
        assert len(rows) == meta["escalated"] * arms, meta_path.name
        assert rows.groupby("problem_id").size().eq(arms).all(), meta_path.name


def test_contrast_says_more_only_when_the_paired_test_says_so():
    a = _rows([False] * 10 + [True] * 4, ["fixed"] * 8 + ["kept"] * 2 + ["kept"] * 4)
    b = _rows([False] * 10 + [True] * 4, ["kept"] * 10 + ["kept"] * 3 + ["broken"])
    text = revision.contrast(a, b, "A", "B")
    assert text.startswith("A against B: fixes 8 of 10 escalated wrong first answers against 0 (more, McNemar p = 0.00781)")
    assert "breaks 0 of 4 escalated right ones against 1 (no detectable difference, McNemar p = 1)" in text


def test_a_note_that_states_the_answer_makes_no_training_example():
    p = problem(4, [("+", 5), ("*", 2)])  # 4 + 5 = 9, 9 x 2 = 18; 18 is nowhere in the question
    wrong = "4 + 5 = 10\n10 × 2 = \\boxed{20}"
    rows = [{"id": "p", "attempt": wrong, "note": "Step 1 fails: redo 4 + 5 column by column."},
            {"id": "p", "attempt": wrong, "note": "Step 1 fails: the answer is 18."},
            {"id": "p", "attempt": wrong, "note": "Step 1 fails: \\boxed{9}."}]
    ex, counts = revision.examples_from_notes(rows, {"p": p})
    assert len(ex) == 1 and counts == {"pointed": 1, "note_states_answer": 2}
    messages, target = ex[0]
    assert "redo 4 + 5" in messages[-1]["content"] and target.endswith("\\boxed{18}")


def test_the_readme_says_why_no_gain_from_the_committed_data():
    from lase_nb.organism.preregistration import V6_PATH, load

    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- v6:start -->", 1)[1].split("<!-- v6:end -->", 1)[0]
    assert block.strip() == controls.readme_summary(load(), load(V6_PATH) if V6_PATH.is_file() else None)
    assert "06_failure_modes.ipynb" in text.split("<!-- v6:end -->", 1)[1].split("## ", 1)[0], "a link to 6.6"


def test_the_replay_with_v5_reproduces_the_recorded_revisions():
    """The harness check: v5 replayed through revision_own.py wrote the recorded stage-1 revisions."""
    replay = revision.load_replay("v5-replay")
    if replay is None:
        pytest.skip("no committed v5 replay")
    run = load_run(RECORDING)
    cfg = StrategyConfig.from_manifest(run.manifest["config"])
    cases = stage_one.stage_one_cases(run, problems_from_manifest(run.manifest), cfg.tau_lp, cfg.tau_h)
    assert replay["problem_id"].tolist() == [c.problem.id for c in cases]
    assert [t.strip() for t in replay["revision"]] == [c.recorded_revision.strip() for c in cases]
