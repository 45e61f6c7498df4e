"""Statistics against hand-computable cases: Wilson, reliability bins, AUROC, ECE, bootstrap, McNemar.

lase_nb.stats is a leaf: it imports no other module of the package (tests/test_layout.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lase_nb import stats

from lase_nb.stats import (
    auroc_for_errors,
    auroc_with_ci,
    bootstrap_ci,
    ece,
    paired_test,
    reliability_table,
    wilson_interval,
)


def _wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


# ---- Wilson -----------------------------------------------------------------------------------

def test_wilson_known_value():
    lo, hi = wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4)
    assert hi == pytest.approx(0.7634, abs=1e-4)


@pytest.mark.parametrize("k,n", [(0, 7), (3, 20), (19, 20), (50, 50), (123, 400)])
def test_wilson_matches_formula(k, n):
    assert wilson_interval(k, n) == pytest.approx(_wilson_by_hand(k, n), abs=1e-9)


def test_wilson_empty_is_nan():
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


# ---- reliability table ------------------------------------------------------------------------

def test_reliability_counts_and_edges():
    conf = np.array([0.1, 0.3, 0.5, 0.95, 0.99, 1.0, np.nan])
    ok = np.array([0, 1, 1, 1, 1, 1, 0], bool)
    t = reliability_table(conf, ok, [0, 0.5, 0.9, 0.99, 1.0])
    assert list(t["bin"]) == ["[0, 0.5)", "[0.5, 0.9)", "[0.9, 0.99)", "[0.99, 1]", "no answer"]
    assert list(t["count"]) == [2, 1, 1, 2, 1]  # 0.5 -> [0.5, 0.9); 0.99 and 1.0 -> top bin
    assert t["count"].sum() == len(conf)
    assert t["accuracy"].iloc[0] == 0.5 and t["accuracy"].iloc[3] == 1.0
    assert t["mean_confidence"].iloc[3] == pytest.approx(0.995)
    assert math.isnan(t["mean_confidence"].iloc[4]) and t["accuracy"].iloc[4] == 0.0
    assert t["share"].sum() == pytest.approx(1.0)
    lo, hi = wilson_interval(1, 2)
    assert (t["ci_lo"].iloc[0], t["ci_hi"].iloc[0]) == pytest.approx((lo, hi))


def test_reliability_empty_bin_kept_and_no_nan_row_when_complete():
    t = reliability_table([0.1, 0.2], [True, False], [0, 0.5, 1])
    assert len(t) == 2
    assert t["count"].iloc[1] == 0 and math.isnan(t["accuracy"].iloc[1]) and math.isnan(t["ci_lo"].iloc[1])


def test_reliability_lower_is_confident_entropy():
    h = np.array([0.0, 0.5, 1.0, 1.5, 3.0])
    ok = np.array([1, 1, 1, 0, 0], bool)
    t = reliability_table(h, ok, [0, 0.5, 1.0, np.inf], higher_is_confident=False)
    # least confident first; a value on an edge goes to the confident (lower-entropy) side
    assert list(t["bin"]) == ["(1, inf]", "(0.5, 1]", "[0, 0.5]"]
    assert list(t["count"]) == [2, 1, 2]
    assert list(t["accuracy"]) == [0.0, 1.0, 1.0]


def test_reliability_rejects_out_of_range_and_bad_bins():
    with pytest.raises(ValueError, match="outside"):
        reliability_table([1.5], [True], [0, 1])
    with pytest.raises(ValueError, match="increasing"):
        reliability_table([0.5], [True], [1, 0])
    with pytest.raises(ValueError, match="length"):
        reliability_table([0.5, 0.6], [True], [0, 1])


# ---- AUROC ------------------------------------------------------------------------------------

def _auroc_brute(score, correct):
    err, right = score[~correct], score[correct]
    d = err[:, None] - right[None, :]
    return ((d > 0).sum() + 0.5 * (d == 0).sum()) / d.size


def test_auroc_perfect_reversed_ties():
    correct = np.array([1, 1, 1, 0, 0], bool)
    score = np.array([0.1, 0.2, 0.3, 0.8, 0.9])  # errors score higher
    assert auroc_for_errors(score, correct) == 1.0
    assert auroc_for_errors(-score, correct) == 0.0
    assert auroc_for_errors(np.zeros(5), correct) == 0.5


def test_auroc_hand_case_with_ties():
    # errors {2, 1} vs right {1, 0}: 2>1, 2>0, 1=1 (one half), 1>0 -> 3.5 / 4
    assert auroc_for_errors([2, 1, 1, 0], [False, False, True, True]) == pytest.approx(0.875)


def test_auroc_matches_pairwise_definition():
    rng = np.random.default_rng(3)
    score = rng.integers(0, 5, 200).astype(float)  # many ties
    correct = rng.uniform(size=200) < 0.6
    assert auroc_for_errors(score, correct) == pytest.approx(_auroc_brute(score, correct), abs=1e-12)


def test_auroc_random_near_half_and_one_class_nan():
    rng = np.random.default_rng(0)
    assert auroc_for_errors(rng.normal(size=4000), rng.uniform(size=4000) < 0.5) == pytest.approx(0.5, abs=0.04)
    assert math.isnan(auroc_for_errors([0.1, 0.2], [True, True]))


def test_auroc_nan_scores():
    score = np.array([np.nan, 0.1, 0.2, 0.9])
    correct = np.array([False, True, True, False])
    assert auroc_for_errors(score, correct, nan="worst") == 1.0  # no answer = most error-like
    assert auroc_for_errors(score, correct, nan="drop") == 1.0
    assert auroc_for_errors([np.nan, 0.5, 0.1], [True, False, True], nan="worst") == 0.5
    with pytest.raises(ValueError):
        auroc_for_errors(score, correct, nan="zero")


def test_auroc_with_ci_brackets_and_is_seeded():
    rng = np.random.default_rng(1)
    correct = rng.uniform(size=300) < 0.7
    score = rng.normal(size=300) + (~correct) * 1.0
    auc, lo, hi = auroc_with_ci(score, correct, n_boot=500, seed=4)
    assert auc == pytest.approx(auroc_for_errors(score, correct))
    assert lo < auc < hi and 0.5 < lo
    assert auroc_with_ci(score, correct, n_boot=500, seed=4) == (auc, lo, hi)
    assert all(math.isnan(x) for x in auroc_with_ci([1, 2], [True, True]))


# ---- ECE --------------------------------------------------------------------------------------

def test_ece_calibrated_is_small():
    rng = np.random.default_rng(0)
    n = 20000
    p = rng.uniform(size=n)
    ok = rng.uniform(size=n) < p
    # per-bin sampling noise ~ sqrt(0.25 / (n / 10)) ~ 0.011
    assert ece(p, ok) < 0.03


def test_ece_overconfident_exact_and_nan_excluded():
    p = np.array([0.9] * 10 + [np.nan] * 3)
    ok = np.array([1] * 5 + [0] * 5 + [1] * 3, bool)
    assert ece(p, ok) == pytest.approx(0.4)
    assert ece([0.0, 1.0], [False, True]) == 0.0  # 1.0 falls in the last (closed) bin
    assert math.isnan(ece([np.nan], [True]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ece([1.2], [True])


# ---- bootstrap --------------------------------------------------------------------------------

def test_bootstrap_contains_mean_and_narrows():
    rng = np.random.default_rng(2)
    small = rng.uniform(size=50) < 0.6
    big = rng.uniform(size=2000) < 0.6
    e1, lo1, hi1 = bootstrap_ci(small, n_boot=1000)
    e2, lo2, hi2 = bootstrap_ci(big, n_boot=1000)
    assert e1 == pytest.approx(small.mean()) and lo1 <= e1 <= hi1
    assert lo2 <= e2 <= hi2
    assert (hi2 - lo2) < (hi1 - lo1) / 3
    assert bootstrap_ci(small, n_boot=1000, seed=7) == bootstrap_ci(small, n_boot=1000, seed=7)


def test_bootstrap_degenerate_and_other_stats():
    assert bootstrap_ci(np.ones(30)) == (1.0, 1.0, 1.0)
    assert bootstrap_ci([0.3]) == (0.3, 0.3, 0.3)
    assert all(math.isnan(x) for x in bootstrap_ci([]))
    est, lo, hi = bootstrap_ci(np.arange(101.0), stat=np.median, n_boot=500)
    assert est == 50.0 and lo <= 50.0 <= hi


# ---- McNemar ----------------------------------------------------------------------------------

def test_mcnemar_known_p_values():
    a = np.array([1] * 10 + [1] * 5, bool)
    b = np.array([0] * 10 + [1] * 5, bool)
    r = paired_test(a, b)
    assert (r["b"], r["c"], r["n"]) == (10, 0, 15)
    assert r["p_value"] == pytest.approx(2 * 0.5 ** 10)  # 0.001953
    assert r["diff"] == pytest.approx(10 / 15) and r["diff_lo"] <= r["diff"] <= r["diff_hi"]

    a = np.array([1] * 8 + [0] * 2 + [1] * 4, bool)
    b = np.array([0] * 8 + [1] * 2 + [1] * 4, bool)
    assert paired_test(a, b)["p_value"] == pytest.approx(112 / 1024)  # 2 * P(X <= 2 | 10, 1/2)
    assert paired_test(b, a)["p_value"] == pytest.approx(112 / 1024)


def test_mcnemar_no_discordant_pairs():
    a = np.array([True, False, True])
    r = paired_test(a, a)
    assert r["p_value"] == 1.0 and r["b"] == r["c"] == 0 and r["diff"] == 0.0
    with pytest.raises(ValueError):
        paired_test([True], [True, False])


def test_points_signs_a_difference_of_fractions():
    from lase_nb.stats import points
    assert (points(0.035), points(-0.025), points(0.0)) == ("+3.5", "-2.5", "+0.0")


def test_holm_by_hand():
    from lase_nb.stats import holm

    # p sorted: 0.01 (x3), 0.02 (x2), 0.04 (x1) -> 0.03, 0.04, 0.04 (running maximum), in input order
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    got = holm([0.01, float("nan"), 0.03])
    assert got[0] == pytest.approx(0.02) and np.isnan(got[1]) and got[2] == pytest.approx(0.03)


def test_auroc_test_needs_interval_and_p():
    rng = np.random.default_rng(1)
    ok = rng.random(200) < 0.5
    score = np.where(ok, rng.normal(0, 1, 200), rng.normal(1.5, 1, 200))  # errors score higher
    t = stats.auroc_test(score, ok)
    assert t["separates"] and t["lo"] > 0.5 and t["p_value"] < 0.05 and t["n"] == 200
    t = stats.auroc_test(rng.normal(0, 1, 200), ok)
    assert not t["separates"]
    assert not stats.auroc_test(np.arange(5.0), np.ones(5, bool))["separates"]


def test_p_text_never_prints_zero():
    from lase_nb.stats import p_text

    assert p_text(0.2191) == "p = 0.219" and p_text(0.0004) == "p < 0.001" and p_text(1.0) == "p = 1.000"
