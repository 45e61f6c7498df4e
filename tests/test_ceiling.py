"""The perfect-note ceiling (lase_nb.organism.ceiling) on hand-written chains and a hand-made recording."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from lase_nb.organism import ceiling
from lase_nb.datasets import arithmetic_problems, load_dataset, noop_problems
from lase_nb.notes import states_answer
from lase_nb.organism.recipe import label_attempt, solution_text, gold_steps
from lase_nb.types import Problem


def problem(start: int, ops: list, question: str = "") -> Problem:
    x = start
    for op, v in ops:
        x = {"+": x + v, "-": x - v, "*": x * v, "/": x // v}[op]
    q = question or f"Start with {start}; then " + ", ".join(f"{op} {v}" for op, v in ops) + "."
    return Problem("p", q, str(x), meta={"start": start, "ops": [list(o) for o in ops], "level": len(ops)})


P3 = problem(3, [("+", 3), ("*", 3), ("-", 15)])  # 3 + 3 = 6, 6 x 3 = 18, 18 - 15 = 3


@pytest.mark.parametrize("attempt, kind, step", [
    ("3 + 3 = 6\n6 × 3 = 18\n18 - 15 = \\boxed{4}", "slip", 2),
    ("3 + 3 = 7\n7 × 3 = 21\n21 - 15 = \\boxed{6}", "slip", 0),
    ("3 - 3 = 0\n0 × 3 = 0\n0 - 15 = \\boxed{0}", "operation", 0),
    ("3 + 3 = 6\n6 × 2 = 12\n12 - 15 = \\boxed{1}", "misread", 1),
    ("3 + 3 = 6\n5 × 3 = 15\n15 - 15 = \\boxed{0}", "carry", 1),
    ("3 + 3 = 6\n6 × 3 = \\boxed{18}", "missing", 2),
])
def test_notes_name_the_first_failing_step_and_its_kind(attempt, kind, step):
    label = label_attempt(P3, attempt)
    assert label.status == "wrong"
    for variant in ceiling.VARIANTS:
        note, got = ceiling.perfect_note(P3, label, variant)
        assert got == kind
        assert f"step {step + 1}" in note.lower()
        assert ceiling.obeys_rule(note, P3, attempt)
    a, _ = ceiling.perfect_note(P3, label, "a")
    b, _ = ceiling.perfect_note(P3, label, "b")
    assert "slips" not in a and "operation" not in a
    if kind != "missing":
        assert b.startswith(a.split(" Redo")[0]) and len(b) > len(a)


def test_variant_c_gives_an_intermediate_value_never_the_final_one():
    early = label_attempt(P3, "3 + 3 = 7\n7 × 3 = 21\n21 - 15 = \\boxed{6}")
    note, _ = ceiling.perfect_note(P3, early, "c")
    assert "should come to 6" in note
    last = label_attempt(P3, "3 + 3 = 6\n6 × 3 = 18\n18 - 15 = \\boxed{4}")
    note, _ = ceiling.perfect_note(P3, last, "c")
    assert "should come to" not in note  # the last step's value is the final answer
    # an intermediate value that equals the final answer is dropped too
    same = problem(2, [("+", 2), ("*", 1)])  # 2 + 2 = 4, 4 x 1 = 4
    lab = label_attempt(same, "2 + 2 = 5\n5 × 1 = \\boxed{5}")
    note, _ = ceiling.perfect_note(same, lab, "c")
    assert "should come to" not in note and ceiling.obeys_rule(note, same, "2 + 2 = 5\n5 × 1 = \\boxed{5}")


def test_the_rule_as_code_catches_a_note_that_states_the_answer():
    p = problem(4, [("+", 5), ("*", 2)])  # 4 + 5 = 9, 9 x 2 = 18
    attempt = "4 + 5 = 9\n9 × 2 = \\boxed{19}"
    assert not ceiling.obeys_rule("Step 2 should come to 18.", p, attempt)
    assert not ceiling.obeys_rule("Step 2 is wrong: \\boxed{}", p, attempt)
    assert ceiling.obeys_rule("Step 2 is wrong.", p, attempt)


def test_every_generated_note_obeys_the_rule():
    """On many generated problems and injected errors, no note of any variant states the answer."""
    rng = random.Random(0)
    n = 0
    for p in arithmetic_problems(120, seed=3, levels=(1, 2, 3), split="eval"):
        steps = gold_steps(p)
        k = rng.randrange(len(steps))
        bad = [s for s in steps]
        s = bad[k]
        bad[k] = type(s)(s.a, s.op, s.b, s.c + rng.choice([-2, -1, 1, 2, 10]))
        attempt = solution_text(bad)
        label = label_attempt(p, attempt)
        if label.status != "wrong":
            continue
        for v in ceiling.VARIANTS:
            note, _ = ceiling.perfect_note(p, label, v)
            assert not states_answer(note, p.gold, p.question, attempt) and "\\boxed" not in note
            n += 1
        right = label_attempt(p, solution_text(steps))
        for v in ("alarm-a", "alarm-b"):
            note, _ = ceiling.false_alarm_note(right, v, rng)
            assert ceiling.obeys_rule(note, p, solution_text(steps))
    assert n > 200


def test_outcomes_and_tables_on_a_hand_made_recording():
    assert ceiling.outcome(False, "4", "... = \\boxed{3}", "3") == ("fixed", "3")
    assert ceiling.outcome(False, "4", "... = \\boxed{4}", "3") == ("kept", "4")
    assert ceiling.outcome(False, "4", "... = \\boxed{5}", "3") == ("changed", "5")
    assert ceiling.outcome(False, "4", "no box", "3") == ("unboxed", None)
    assert ceiling.outcome(True, "3", "\\boxed{3}", "3") == ("kept", "3")
    assert ceiling.outcome(True, "3", "\\boxed{2}", "3") == ("broken", "2")
    rows = pd.DataFrame(
        [{"model": "m", "problem_id": f"w{i}", "first_correct": False, "kind": "slip", "variant": v,
          "outcome": o} for i, (v, o) in enumerate([("a", "fixed"), ("a", "fixed"), ("a", "kept"),
                                                    ("b", "fixed"), ("b", "changed"), ("b", "unboxed")])]
        + [{"model": "m", "problem_id": f"r{i}", "first_correct": True, "kind": "right", "variant": v,
            "outcome": o} for i, (v, o) in enumerate([("clear", "kept"), ("alarm-a", "kept"), ("alarm-a", "kept"),
                                                      ("alarm-a", "kept"), ("alarm-b", "broken"), ("alarm-b", "kept")])])
    wrong = ceiling.ceiling_table(rows).set_index("variant")
    assert wrong.loc["a", ["n", "fixed", "kept"]].tolist() == [3, 2, 1]
    assert wrong.loc["b", ["fixed", "changed", "unboxed"]].tolist() == [1, 1, 1]
    right = ceiling.right_table(rows).set_index("note")
    assert right.loc["alarm-a", "broken"] == 0 and right.loc["alarm-b", "broken"] == 1
    rule = ceiling.stop_rule(rows).set_index("variant")
    assert bool(rule.loc["a", "meets rule"]) is True  # 2/3 fixed >= 60%, 0/3 broken
    assert bool(rule.loc["b", "meets rule"]) is False  # 1/3 fixed, 1/2 broken


def test_noop_problems_keep_the_chain_and_add_one_unused_quantity():
    plain = arithmetic_problems(30, seed=4, levels=(1, 2, 3), split="eval")
    noop = noop_problems(30, seed=4, levels=(1, 2, 3), split="eval")
    for p, q in zip(plain, noop):
        assert q.meta["ops"] == p.meta["ops"] and q.gold == p.gold and q.meta["plain_question"] == p.question
        x = q.meta["noop"]["value"]
        assert str(x) in q.question and x not in {int(p.meta["start"]), int(p.gold)} | {v for _, v in p.meta["ops"]}
        assert len(q.question) > len(p.question)
    train = {q.meta["noop"]["clause"] for q in noop_problems(60, seed=4, levels=(1, 2, 3), split="train")}
    evals = {q.meta["noop"]["clause"] for q in noop_problems(60, seed=4, levels=(1, 2, 3), split="eval")}
    assert train and evals and not train & evals  # held out by the clause's phrasing
    assert load_dataset("arith_noop", n=3, seed=4, levels=(1,), split="eval")[0].id.startswith("arith-noop-eval-")


def test_summary_and_verdict_read_the_rows():
    rows = pd.DataFrame(
        [{"model": "m", "problem_id": f"w{i}", "first_correct": False, "kind": "slip", "variant": v,
          "outcome": o} for i in range(10) for v, o in (("a", "fixed"), ("b", "kept"), ("c", "fixed"))]
        + [{"model": "m", "problem_id": f"r{i}", "first_correct": True, "kind": "right", "variant": v,
            "outcome": "kept"} for i in range(3) for v in ceiling.RIGHT_VARIANTS])
    table = ceiling.summary(rows).set_index("first answer")
    assert table.loc["wrong: slip", ["n", "note (a)", "note (b)"]].tolist() == [10, "fixed 10/10", "fixed 0/10"]
    assert table.loc["right", "note (a)"] == "alarm broke 0/3" and table.loc["right", "note (c)"] == "all clear kept 3/3"
    assert "Met by: m, slip, variant a (100% fixed of 10, 0% broken)" in ceiling.verdict(rows)
    few = rows[~rows["problem_id"].isin([f"w{i}" for i in range(2, 10)])]  # two wrong answers decide nothing
    assert "met only where too few answers decide nothing: m, slip, variant a" in ceiling.verdict(few)
    rows.loc[rows["variant"] == "a", "outcome"] = "kept"
    assert "No model and kind meets it" in ceiling.verdict(rows)


def test_chapter_06_prints_the_committed_ceiling():
    """Chapter 06 prints the ceiling's table and its stop rule's verdict from the same functions (the
    README says the story in three sentences instead: tests/test_revision.py)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    chapter = (root / "notebooks" / "06_failure_modes.py").read_text()
    assert "ceiling.summary(ceiling_rows)" in chapter and "ceiling.verdict(ceiling_rows)" in chapter
