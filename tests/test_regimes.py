"""The regimes, defined once (lase_nb.organism.regimes): corrective by both tests, destructive when
always-interact loses by both tests, neutral otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lase_nb.organism import regimes
from lase_nb.errors import DataError
from lase_nb.replay import chains_from_stages
from tests.synthetic import model
from lase_nb.replay import outcomes_at, replay  # noqa: E402
from lase_nb.runs import chains_by_model  # noqa: E402
from lase_nb.chapters import failures  # noqa: E402



def test_corrective_destructive_neutral():
    fixes = regimes.gain_regime(model(30, 40, fix=20), 0.8, 0.5)
    breaks = regimes.gain_regime(model(60, 40, esc_right=30, brk=20), 0.8, 0.5)
    even = regimes.gain_regime(model(30, 40, esc_right=10, fix=1, brk=1), 0.8, 0.5)
    assert (fixes["regime"], breaks["regime"], even["regime"]) == ("corrective", "destructive", "neutral")
    assert fixes["gain"] == pytest.approx(0.2) and fixes["gain_lo"] > 0 and fixes["p_value"] < 0.05
    assert (fixes["fixed"], fixes["broken"]) == (20, 0)
    assert breaks["full_gain"] == pytest.approx(-0.2) and breaks["full_hi"] < 0 and breaks["full_p"] < 0.05
    assert even["gain"] == 0 and even["gain_lo"] < 0 < even["gain_hi"]
    assert fixes["acc_solo"] == pytest.approx(0.3) and fixes["acc_lase"] == pytest.approx(0.5)
    assert fixes["escalated"] == 40 and fixes["n"] == 100
    # nothing escalates: gated LASE is the leader alone, and always-interact gains: neutral
    assert regimes.gain_regime(model(30, 40, fix=20), 0.0, np.inf)["regime"] == "neutral"


def test_a_gain_needs_both_tests():
    """A bootstrap interval above zero with McNemar p above 0.05 is neutral, not corrective."""
    r = regimes.gain_regime(model(30, 40, fix=5), 0.8, 0.5)
    assert r["fixed"] == 5 and r["broken"] == 0 and r["p_value"] == pytest.approx(0.0625)
    assert r["gain_lo"] > 0 and r["regime"] == "neutral"
    r = regimes.gain_regime(model(30, 40, fix=6), 0.8, 0.5)
    assert r["p_value"] < 0.05 and r["regime"] == "corrective"


def test_regime_table_has_one_row_per_model():
    t = regimes.regime_table({"organism": model(30, 40, fix=20), "base": model(60, 40, esc_right=30, brk=20)},
                             0.8, 0.5)
    assert t.index.tolist() == ["organism", "base"] and t["regime"].tolist() == ["corrective", "destructive"]
    assert t.loc["organism", "gain, points [95% CI]"].startswith("+20.0 [") and t.loc["base", "broken"] == 20
    assert t.loc["organism", "escalated"] == "40 of 100" and t.loc["organism", "gated LASE %"] == 50.0
    assert t.loc["base", "always-interact %"] == 40.0 and t.loc["organism", "McNemar p"] < 0.05


def test_describe_gain_regime_states_the_numbers():
    r = regimes.gain_regime(model(30, 40, fix=20), 0.8, 0.5)
    s = regimes.describe_gain_regime("organism", r)
    assert "**organism**" in s and "**corrective**" in s and "+20.0 points" in s
    assert f"{100 * r['gain_lo']:+.1f}" in s and f"{100 * r['gain_hi']:+.1f}" in s
    assert "50.0%" in s and "30.0%" in s and "40 of 100" in s and "fixes 20, breaks 0" in s
    assert "McNemar p < 0.001" in s  # p = 2e-6: never printed as p = 0.000
    h = regimes.describe_gain_regime("base", regimes.gain_regime(model(60, 40, esc_right=30, brk=20), 0.8, 0.5))
    assert "**destructive**" in h and "-20.0 points" in h and "always-interact hurts" in h
    z = regimes.describe_gain_regime("x", regimes.gain_regime(model(30, 40, esc_right=10, fix=1, brk=1), 0.8, 0.5))
    assert "**neutral**" in z and "no claim clears both tests" in z


def test_describe_regime_reads_the_paired_gain(chain_stages):
    chains = chains_from_stages(chain_stages)
    # escalated: p1 (fixed), p3 (stays wrong), p4 (broken); p2 accepted at once: gain 0, neutral
    r = regimes.gain_regime(chains, 0.8, 0.5)
    assert (r["regime"], r["fixed"], r["broken"], r["escalated"]) == ("neutral", 1, 1, 3)
    # four problems name no regime (issue 50: a verdict scaled to n), in the line and the paragraph
    assert r["decided"] is False
    line = regimes.describe_regime(r)
    assert "too few problems to tell (4 problems)" in line and "**neutral**" not in line
    assert "+0.0 points" in line and "fixes 1 and breaks 1 answers" in line
    assert "section 3.4" in line and "McNemar p = 1.000" in line
    small = regimes.describe_regime(r, full=True)
    assert "On 4 problems no regime can be told" in small and "negative control" not in small
    assert regimes.REGIME_RULE in small and "Always-interact" in small
    assert "too few problems to tell on 4 problems" in regimes.describe_gain_regime("x", r)
    # the wording of each regime, as on enough problems
    line = regimes.describe_regime(dict(r, decided=True))
    assert "**neutral**" in line
    full = regimes.describe_regime(dict(r, decided=True), full=True)
    assert "negative control" in full and "record an API model" in full
    assert "--backend" not in full and "--backend openai --model gpt-4.1-mini" in regimes.OTHER_REGIME  # commands off the path
    good = dict(r, regime="corrective", decided=True)
    assert "supporters help" in regimes.describe_regime(good, full=True)
    assert "**corrective**" in regimes.describe_regime(good)
    assert "escalates 0 of 4" in regimes.describe_regime(regimes.gain_regime(chains, 0.0, math.inf), full=True)


def test_the_recording_twice_is_in_one_regime(two):
    ch = chains_by_model(two)
    r = {m: regimes.gain_regime(c, 0.8, 0.5) for m, c in ch.items()}
    assert r["base"] == r["again"]
    lase = replay(ch["base"], 0.8, 0.5)["correct"].mean()
    assert r["base"]["acc_lase"] == pytest.approx(lase)
    assert r["base"]["acc_solo"] == pytest.approx(outcomes_at(ch["base"], 0)["correct"].mean())
    t = failures.escalation_by_model(ch, 0.8, 0.5)
    assert "equally accurate" in failures.describe_escalation_by_model(t)


def test_gain_difference_is_a_sign_test_on_the_problems_that_differ():
    from lase_nb.stats import gain_difference

    old = np.zeros(20, bool)
    new_a = np.r_[np.ones(8, bool), np.zeros(12, bool)]  # A fixes 8
    r = gain_difference(new_a, old, old, old, n_boot=500)
    assert (r["up"], r["down"], r["n"]) == (8, 0, 20) and r["p_value"] < 0.01 and r["diff_lo"] > 0
    assert gain_difference(old, old, old, old)["p_value"] == 1.0


def test_compare_gains_uses_the_same_problems():
    from lase_nb.organism.regimes import compare_gains, same_problems

    a = model(50, 30, n=100, fix=15)
    b = model(50, 30, n=100, fix=0)
    b.problem_ids = np.array([f"q{i}" for i in range(50)] + list(a.problem_ids[:50]), dtype=object)
    sa, sb = same_problems(a, b)
    assert list(sa.problem_ids) == list(sb.problem_ids) and len(sa.problem_ids) == 50
    r = compare_gains(a, b, 0.8, 0.5, n_boot=300)
    assert r["n"] == 50 and r["difference"]["gain_a"] >= r["difference"]["gain_b"]
    b.problem_ids = np.array([f"z{i}" for i in range(100)], dtype=object)
    with pytest.raises(DataError, match="share no problem"):
        same_problems(a, b)


def test_control_table_and_its_words_follow_the_tests():
    from lase_nb.organism.regimes import compare_gains, control_table, describe_control

    a, b = model(30, 40, fix=20), model(30, 40, fix=0)
    c = compare_gains(a, b, 0.8, 0.5, n_boot=300)
    t = control_table(c, "A", "B")
    assert list(t.columns) == ["A", "B"] and t.loc["regime", "A"] == "corrective"
    assert t.loc["fixed / broken", "A"] == "20 / 0" and t.loc["gated LASE %", "A"] == pytest.approx(50.0)
    words = describe_control(c, "A", "B")
    assert "the gains differ (" in words and "20 problems favour A, 0 problems favour B" in words
    assert "escalation does not differ detectably" in words  # same escalated problems in both
    assert "exact McNemar p = 1.000" in words and "sign test p < 0.001" in words
    same = describe_control(compare_gains(a, a, 0.8, 0.5, n_boot=300), "A", "A2")
    assert "do not differ detectably" in same
