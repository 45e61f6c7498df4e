"""Theorem 3.7's terms (rho, delta, A3) on small hand-built chains whose answers are known."""

import numpy as np
import pandas as pd
import pytest

from lase_nb.chapters import correct_seeds as seeds
from lase_nb.replay import Chains
from lase_nb.errors import DataError
from lase_nb.types import Problem

# 8 + 16 = 24, 24 - 11 = 13: gold chain values 24, 13
P = Problem("p", "Ann has 8 cookies, gets 16 more and gives 11 away. How many now?", "13",
            meta={"start": 8, "ops": [["+", 16], ["-", 11]]})
Q = Problem("q", "A box holds 7 pens and 5 more are added. How many pens?", "12")  # no chain: answer only


def test_gold_values_follow_the_chain_or_fall_back_to_the_answer():
    assert seeds.gold_values(P) == ["24", "13"]
    assert seeds.gold_values(Q) == ["12"]


@pytest.mark.parametrize("note, attempt, expected", [
    ("Step 1 should be 8 + 16 = 24.", "8 + 16 = 22\n22 - 11 = \\boxed{11}", ["24"]),   # first wrong step's value
    ("The result is 13.", "8 + 16 = 24\n24 - 11 = \\boxed{14}", ["13"]),              # the answer it lacks
    ("Step 1: 8 + 16 = 24. Fine.", "8 + 16 = 24\n24 - 11 = \\boxed{14}", []),        # a value it already has
    ("Check the 16 and the 11.", "8 + 16 = 22\n22 - 11 = \\boxed{11}", []),          # numbers of the question
    ("It should be 124.", "8 + 16 = 22\n22 - 11 = \\boxed{11}", []),                 # 24 inside 124 is not 24
    (None, "8 + 16 = 22", []),
])
def test_seed_values_read_numbers_the_attempt_lacks(note, attempt, expected):
    assert seeds.seed_values(note, attempt, P) == expected
    assert seeds.note_seeds(note, attempt, P) is bool(expected)


def _run(rows):
    """Chains (2 stages) and calls from rows (pid, p_min0, right0, right1, leader0, note1)."""
    ids = np.array([r[0] for r in rows], dtype=object)
    p_min = np.array([[r[1], 1.0] for r in rows])
    correct = np.array([[r[2], r[3]] for r in rows])
    zeros = np.zeros_like(p_min)
    chains = Chains(ids, p_min, zeros, correct, np.full(p_min.shape, "x", dtype=object), zeros, zeros)
    calls = []
    for pid, _, _, _, lead, note in rows:
        calls += [{"problem_id": pid, "stage": 0, "role": "leader", "text": lead},
                  {"problem_id": pid, "stage": 1, "role": "devil", "text": note},
                  {"problem_id": pid, "stage": 1, "role": "leader", "text": "revised"}]
    probs = {pid: Problem(pid, P.question, P.gold, meta=P.meta) for pid, *_ in rows}
    return chains, pd.DataFrame(calls), probs


WRONG = "8 + 16 = 22\n22 - 11 = \\boxed{11}"
RIGHT = "8 + 16 = 24\n24 - 11 = \\boxed{13}"
ROWS = [
    # confident: never escalated, whatever its note says
    ("a", 0.99, True, True, RIGHT, "fine"),
    ("b", 0.99, False, False, WRONG, "it should be 24"),
    # escalated, seed, fixed / seed, not fixed
    ("c", 0.3, False, True, WRONG, "Step 1 should give 24."),
    ("d", 0.3, False, False, WRONG, "Step 1 should give 24."),
    # escalated, no seed: one right answer broken, one wrong answer stays wrong
    ("e", 0.3, True, False, RIGHT, "Step 2 looks off."),
    ("f", 0.3, False, False, WRONG, "Check the 16."),
]


def test_seed_table_gates_then_classifies_the_notes_read():
    chains, calls, probs = _run(ROWS)
    t = seeds.seed_table(chains, calls, probs, tau_lp=0.8, tau_h=10.0).set_index("problem_id")
    assert t["escalated"].tolist() == [False, False, True, True, True, True]
    assert t["seed"].tolist() == [False, False, True, True, False, False]  # b's note is never read
    assert t.loc["c", "seed_value"] == "24" and t.loc["c", "seed_role"] == "devil" and t.loc["c", "seed_stage"] == 1
    assert t.loc["c", "attempt"] == WRONG


def test_pick_fix_is_the_first_wrong_answer_a_seed_turned_right():
    chains, calls, probs = _run(ROWS)
    table = seeds.seed_table(chains, calls, probs, 0.8, 10.0)
    assert seeds.pick_fix(table) == "c"  # d has a seed but stays wrong; b's note is never read
    assert seeds.pick_fix(table[table["problem_id"] != "c"]) is None
    late = [("z", 0.3, False, True, WRONG, "Step 1 should give 24.")] + ROWS  # an earlier fix wins
    assert seeds.pick_fix(seeds.seed_table(*_run(late), 0.8, 10.0)) == "z"


def test_bound_check_terms_by_hand():
    chains, calls, probs = _run(ROWS)
    b = seeds.bound_check(seeds.seed_table(chains, calls, probs, 0.8, 10.0), n_boot=500)
    e = b["estimate"]
    assert e["p_u1"] == pytest.approx(4 / 6)
    assert e["rho"] == pytest.approx(2 / 4)
    assert e["delta"] == pytest.approx(1 / 2 - 0)       # c fixed, d not; both wrong before
    assert e["a3_gap"] == pytest.approx((0 - 1) / 2)     # e broken, f unchanged: A3 fails
    assert e["acc_solo"] == pytest.approx(2 / 6) and e["acc_lase"] == pytest.approx(2 / 6)
    assert e["bound"] == pytest.approx(2 / 6 + 4 / 6 * 1 / 2 * 1 / 2)
    assert e["slack"] == pytest.approx(e["acc_lase"] - e["bound"]) and e["slack"] < 0
    assert b.loc["rho", "count"] == 4 and b.loc["delta", "count"] == 2 and b.loc["a3_gap", "count"] == 2
    assert (b["lo"] <= b["estimate"] + 1e-12).all() and (b["estimate"] <= b["hi"] + 1e-12).all()
    # the paper's A.2/A.3: against P(solo right | U=1) = 1/4 (only e was right alone among c, d, e, f)
    assert e["delta_paper"] == pytest.approx(1 / 2 - 1 / 4) and e["a3_paper"] == pytest.approx(0 - 1 / 4)
    assert e["delta_main"] == pytest.approx(1 / 2 - 2 / 6)  # main text 3.5: against P(solo right)
    d = seeds.decomposition(b)
    assert d["seeded_part"] == pytest.approx(4 / 6 * 1 / 2 * 1 / 4) and d["sum"] == pytest.approx(d["gain"])


@pytest.mark.parametrize("seed", range(20))
def test_the_decomposition_is_the_observed_gain_on_any_sample(seed):
    """The law of total probability: an identity, whichever definitions, so it cannot test the theorem."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    esc = rng.random(n) < rng.random()
    table = pd.DataFrame({"solo_right": rng.random(n) < 0.6, "lase_right": rng.random(n) < 0.6,
                          "escalated": esc, "seed": esc & (rng.random(n) < rng.random())})
    table.loc[~esc, "lase_right"] = table.loc[~esc, "solo_right"]  # LASE is the leader where it stops at once
    b = seeds.bound_check(table, n_boot=50)
    for paper in (True, False):
        d = seeds.decomposition(b, paper=paper)
        assert d["sum"] == pytest.approx(d["gain"], abs=1e-12)


def test_predicted_gain_uses_lower_bounds_and_predicts_nothing_without_a_positive_delta():
    rng = np.random.default_rng(1)
    n = 400
    esc = rng.random(n) < 0.3
    sd = esc & (rng.random(n) < 0.5)
    solo = rng.random(n) < 0.7
    solo[esc] = rng.random(esc.sum()) < 0.4
    lase = solo.copy()
    lase[sd] = rng.random(sd.sum()) < 0.9  # a seed lifts the leader
    table = pd.DataFrame({"solo_right": solo, "lase_right": lase, "escalated": esc, "seed": sd})
    b = seeds.bound_check(table, n_boot=500)
    p = seeds.predicted_gain(b)
    assert 0 < p["p_u1_lcb"] < b.loc["p_u1", "estimate"] and 0 < p["delta_lcb"] < b.loc["delta_paper", "estimate"]
    assert 0 < p["gain_lower_bound"] < b.loc["gain", "estimate"]
    flat = seeds.bound_check(table.assign(lase_right=table["solo_right"]), n_boot=200)
    assert seeds.predicted_gain(flat)["gain_lower_bound"] == 0.0


def test_bound_holds_when_a3_holds():
    rows = [r for r in ROWS if r[0] != "e"]  # drop the broken answer: A3 holds
    chains, calls, probs = _run(rows)
    b = seeds.bound_check(seeds.seed_table(chains, calls, probs, 0.8, 10.0), n_boot=200)["estimate"]
    assert b["a3_gap"] >= 0 and b["slack"] >= -1e-12  # on the same data the slack is the A3 term


def test_no_escalation_gives_nan_terms_not_errors():
    chains, calls, probs = _run([r for r in ROWS if r[1] > 0.5])
    b = seeds.bound_check(seeds.seed_table(chains, calls, probs, 0.8, 10.0), n_boot=200)
    assert b.loc["p_u1", "estimate"] == 0 and np.isnan(b.loc["rho", "estimate"])
    assert b.loc["bound", "estimate"] == b.loc["acc_solo", "estimate"]


def test_missing_problems_are_a_clear_error():
    chains, calls, probs = _run(ROWS)
    with pytest.raises(DataError, match="problems_from_manifest"):
        seeds.seed_table(chains, calls, {}, 0.8, 10.0)
    with pytest.raises(DataError, match="not in `problems`"):
        seeds.seed_table(chains, calls, {"a": probs["a"]}, 0.8, 10.0)


def test_describe_assumptions_names_each_term_and_verdict():
    chains, calls, probs = _run(ROWS)
    check = seeds.bound_check(seeds.seed_table(chains, calls, probs, 0.8, 10.0), n_boot=300)
    text = seeds.describe_assumptions(check)
    assert "P(U=1) = 67%" in text and "of 6 problems" in text
    assert "in 50%" in text and "of the 4 escalated" in text
    assert "+25 points" in text and "-25 points" in text  # the paper's A.2 and A.3 terms
    assert "+50 points" in text and "-50 points" in text  # the within-group terms beside them
    assert f"**{seeds.a3_verdict(check)}**" in text and "law of total probability" in text
    quiet = seeds.bound_check(seeds.seed_table(*_run([r for r in ROWS if r[1] > 0.5]), 0.8, 10.0), n_boot=100)
    assert "Nothing escalates" in seeds.describe_assumptions(quiet) and seeds.a3_verdict(quiet) == "untested"


@pytest.mark.parametrize("est, lo, hi, verdict", [(0.1, 0.02, 0.3, "holds"), (0.0, 0.0, 0.0, "holds"),
                                                  (-0.2, -0.3, -0.05, "violated"), (0.0, -0.067, 0.067, "undetermined"),
                                                  (float("nan"), float("nan"), float("nan"), "untested")])
def test_a3_verdict_reads_the_interval(est, lo, hi, verdict):
    check = pd.DataFrame({"estimate": [est], "lo": [lo], "hi": [hi], "count": [5]}, index=["a3_paper"])
    assert seeds.a3_verdict(check) == verdict


def test_a_note_that_points_at_the_first_departure_holds_a_seed():
    from lase_nb.datasets import arithmetic_problems
    from lase_nb.organism.recipe import Step, gold_steps, solution_text

    p = next(q for q in arithmetic_problems(30, seed=3, levels=(2,)) if gold_steps(q)[1].op in "+-")
    gold = gold_steps(p)
    bad = solution_text([gold[0], Step(gold[1].a, gold[1].op, gold[1].b, gold[1].c + 10)])
    assert seeds.seed_values("Step 2 fails: redo it column by column.", bad, p) == ["step 2"]
    assert seeds.seed_values("Step 1 fails: redo it.", bad, p) == []  # the wrong step: no seed
    assert seeds.seed_values("Step 2 fails.", solution_text(gold), p) == []  # a right attempt holds none


def test_pick_fix_prefers_a_fix_by_the_rule():
    table = pd.DataFrame({"problem_id": ["a", "b", "c"], "solo_right": [False, False, False],
                          "seed": [True, True, True], "lase_right": [True, True, True],
                          "told": [True, False, False]})
    assert seeds.pick_fix(table) == "b"
    assert seeds.pick_fix(table.assign(told=True)) == "a"
