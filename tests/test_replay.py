"""The replay's threshold choosers against hand-made operating points and chains: the budget
pick and its tie-break, the random halves, DOWN's threshold, the gate for a token budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lase_nb.replay import chains_from_stages, choose_thresholds, escalation_rate, replay, split_halves
from tests.tables import problems_frame


# ---- budgets and thresholds -------------------------------------------------------------------

def test_choose_thresholds():
    pts = pd.DataFrame({"name": ["a", "b", "c", "d"], "avg_tokens": [100, 200, 150, 400],
                        "accuracy": [0.5, 0.7, 0.7, 0.9]})
    assert choose_thresholds(pts, 250)["name"] == "c"  # tie at 0.7: the cheaper
    assert choose_thresholds(pts, 400)["name"] == "d"
    assert choose_thresholds(pts, 100)["name"] == "a"
    with pytest.raises(ValueError, match="cheapest"):
        choose_thresholds(pts, 50)


def _grid() -> pd.DataFrame:
    return pd.DataFrame({
        "tau_lp": [0.5, 0.6, 0.8, 0.9, 0.95, 0.7],
        "tau_h": [0.5] * 6,
        "accuracy": [0.741, 0.748, 0.742, 0.748, 0.751, 0.748],
        "avg_tokens": [1800, 1800, 1800, 2600, 3100, 1800],
        "escalation_rate": [0.214, 0.212, 0.226, 0.308, 0.428, 0.22],
    })


def test_choose_thresholds_budget_and_ties():
    g = _grid()
    best = choose_thresholds(g, 2000)
    # 0.6 and 0.7 tie on accuracy and tokens; the higher tau_lp wins. 0.9 is over budget.
    assert best["tau_lp"] == 0.7 and best["accuracy"] == 0.748
    assert choose_thresholds(g, 5000)["tau_lp"] == 0.95
    assert choose_thresholds(g, 3000)["tau_lp"] == 0.7  # 0.9 ties on accuracy at more tokens
    assert choose_thresholds(g, 1800)["tau_lp"] == 0.7  # budget is inclusive


def test_choose_thresholds_errors():
    g = _grid()
    with pytest.raises(ValueError, match="1800"):
        choose_thresholds(g, 1000)
    with pytest.raises(ValueError, match="escalation_rate"):
        choose_thresholds(g.drop(columns="escalation_rate"), 5000)


# ---- split halves -----------------------------------------------------------------------------

def test_split_halves_deterministic_disjoint_covering():
    ids = [f"q{i}" for i in range(11)]
    a, b = split_halves(ids, seed=3)
    a2, b2 = split_halves(ids, seed=3)
    assert np.array_equal(a, a2) and np.array_equal(b, b2)
    assert not (a & b).any() and (a | b).all()
    assert a.sum() == 6 and b.sum() == 5
    a3, _ = split_halves(ids, seed=4)
    assert not np.array_equal(a, a3)


def test_split_halves_order_free_and_repeated_ids_together():
    ids = [f"q{i}" for i in range(20)]
    a, _ = split_halves(ids, seed=0)
    side = dict(zip(ids, a))
    rev = ids[::-1]
    ar, _ = split_halves(rev, seed=0)
    assert all(side[i] == s for i, s in zip(rev, ar))
    long = ids + ids  # one row per strategy
    al, _ = split_halves(long, seed=0)
    assert all(side[i] == s for i, s in zip(long, al))


def test_down_threshold_is_the_most_accurate_with_ties_to_fewer_debates():
    from lase_nb.replay import choose_down_threshold, down_threshold_table

    scores = [0.2, 0.5, 0.7, 0.9]
    first = [False, False, True, True]
    debate = [True, True, False, True]
    # theta 0.5 accepts 0.7 and 0.9 (both right) and debates 0.2 and 0.5 (both fixed): 4/4
    assert choose_down_threshold(scores, first, debate) == 0.5
    t = down_threshold_table(scores, first, debate)
    assert t.loc[t.theta == 1.0, "debate_rate"].item() == 1.0 and t.loc[t.theta == 0.0, "debate_rate"].item() == 0.0
    # a tie in accuracy goes to fewer debates (the lower theta)
    assert choose_down_threshold([0.3, 0.6], [True, True], [True, True]) == 0.0
    # an unknown score always debates
    assert choose_down_threshold([None, 0.9], [True, True], [False, True]) == 0.0
    with pytest.raises(ValueError):
        choose_down_threshold([], [], [])


def test_gate_for_budget_stays_in_budget_and_beats_every_cheaper_pair():
    from lase_nb.replay import operating_point, sweep
    from lase_nb.replay import gate_for_budget
    from tests.synthetic import synthetic_chains

    chains = synthetic_chains(400, seed=2)
    alone = float(operating_point(chains, 0.0, np.inf)["avg_tokens"])
    for ratio in (1.0, 1.5, 3.0):
        row = gate_for_budget(chains, ratio, grid=11)
        assert row["leader_tokens"] == alone and row["avg_tokens"] <= ratio * alone + 1e-9
        replayed = operating_point(chains, row["tau_lp"], row["tau_h"])
        assert replayed["accuracy"] == row["accuracy"]  # the row is what replay gives at that pair
        grid = sweep(chains, np.linspace(0, 1, 11), [np.inf])  # pairs on its own grid too
        assert grid[grid["avg_tokens"] <= ratio * alone]["accuracy"].max() <= row["accuracy"] + 1e-12
    assert gate_for_budget(chains, 1.0, grid=11)["escalation_rate"] == 0.0
    with pytest.raises(ValueError, match="at least 1"):
        gate_for_budget(chains, 0.5)


def test_escalation_rate_variants():
    assert escalation_rate(problems_frame("down", [True, False], x_debated=[True, False])) == 0.5
    lmv = problems_frame("lase-mv", [True, True], x_escalated=[1, 4], x_chain_answers=[["1"] * 5, ["2"] * 5])
    assert escalation_rate(lmv) == pytest.approx(0.5)
    assert np.isnan(escalation_rate(problems_frame("mv", [True])))


def test_replay_strict_grading_uses_correct_strict(chain_stages):
    st = chain_stages.assign(correct_strict=chain_stages["correct"], extracted=False)
    st.loc[(st["problem_id"] == "p1") & (st["stage"] == 2), ["correct_strict", "extracted"]] = [False, True]
    chains = chains_from_stages(st)
    assert replay(chains, 0.8, 0.5)["correct_strict"].tolist() == [False, True, False, False]
