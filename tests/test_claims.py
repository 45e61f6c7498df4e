"""Chapter 07's verdicts: the rule is the one stated, on synthetic pairs; the paper's inconsistencies
are computed from the reference tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lase_nb.organism import preregistration
from lase_nb.tables import baseline_formats, off_format, strategy_tables
from lase_nb import reference
from lase_nb.chapters import claims
from lase_nb.stats import paired_test


def _test(a_right: int, b_right: int, both: int, neither: int) -> dict:
    a = np.array([True] * a_right + [False] * b_right + [True] * both + [False] * neither)
    b = np.array([False] * a_right + [True] * b_right + [True] * both + [False] * neither)
    return paired_test(a, b, n_boot=2000, seed=0)


def test_better_needs_both_tests():
    assert claims.accuracy_verdict(_test(20, 2, 50, 28)) == "reproduced"
    assert claims.accuracy_verdict(_test(2, 20, 50, 28)) == "refuted"
    assert claims.accuracy_verdict(_test(5, 3, 60, 32)) == "not shown"
    # 6 vs 1: the bootstrap interval may clear zero while McNemar's p = 0.125 does not: not shown
    t = _test(6, 1, 60, 33)
    assert t["p_value"] > 0.05
    assert claims.accuracy_verdict(t) == "not shown"
    # 12 problems, or 80 with only 3 changed answers: the exact test cannot clear at all
    assert claims.accuracy_verdict(_test(5, 0, 4, 3)) == "too few problems"
    assert claims.accuracy_verdict(_test(3, 0, 40, 37)) == "too few problems"


def test_no_worse_is_non_inferiority():
    assert claims.accuracy_verdict(_test(3, 3, 150, 44), "no worse") == "reproduced"  # tight interval around 0
    assert claims.accuracy_verdict(_test(1, 5, 20, 4), "no worse") == "not shown"  # wide interval
    assert claims.accuracy_verdict(_test(1, 5, 6, 0), "no worse") == "too few problems"  # 12 problems
    assert claims.accuracy_verdict(_test(1, 25, 50, 24), "no worse") == "refuted"


def test_closeness_claims_rest_on_enough_discordant_problems():
    """Issue 56: the shuffled order's +1.7 [+0.0, +5.0] on 60 problems and +2.5 [+0.0, +7.5] on 40
    each rest on one or two discordant problems: "too few problems", like any accuracy claim; and
    LASE vs MV at +0.0 [-5.8, +5.8] on 120 is "not shown" by the interval rule chapter 04 uses too."""
    assert claims.accuracy_verdict(_test(1, 0, 40, 19), "about equal") == "too few problems"
    assert claims.accuracy_verdict(_test(1, 0, 20, 19), "about equal") == "too few problems"
    even = _test(7, 7, 60, 46)
    assert even["diff"] == 0 and even["diff_lo"] < -0.03
    assert claims.accuracy_verdict(even, "no worse") == "not shown"
    from lase_nb.stats import within_margin
    assert not within_margin(even["diff_lo"]) and claims.MARGIN == 0.03


def test_about_equal_and_unknown_kind():
    assert claims.accuracy_verdict(_test(4, 4, 300, 92), "about equal") == "reproduced"
    assert claims.accuracy_verdict(_test(30, 2, 40, 28), "about equal") == "refuted"
    edge = {"n": 120, "b": 6, "c": 0, "diff": 0.05, "diff_lo": 0.0, "diff_hi": 6 / 120, "p_value": 0.031}
    assert claims.accuracy_verdict(edge, "about equal") == "reproduced"  # [0, +5] lies in the band the figure draws
    assert claims.accuracy_verdict({**edge, "diff_hi": 0.0501}, "about equal") == "not shown"
    with pytest.raises(ValueError, match="kind"):
        claims.accuracy_verdict(_test(1, 1, 1, 1), "worse")


def test_calibration_claim_reads_the_auroc():
    rng = np.random.default_rng(0)
    ok = rng.random(300) < 0.6
    p = np.where(ok, rng.uniform(0.7, 1.0, 300), rng.uniform(0.2, 0.9, 300))
    frame = pd.DataFrame({"p_min": p, "correct": ok, "answered": True})
    assert claims.calibration_claim(frame)["verdict"] == "reproduced"
    frame["p_min"] = rng.uniform(0, 1, 300)
    assert claims.calibration_claim(frame)["verdict"] == "not shown"
    # a strong model on 12 problems (issue 50): 2 wrong answers, both less sure than every right one,
    # separate by the test (p = 0.03) but are too few for a verdict; an answer without a confidence is left out
    few = pd.DataFrame({"p_min": [1.0] * 10 + [0.3, 0.4, np.nan], "correct": [True] * 10 + [False, False, True],
                        "answered": True})
    c = claims.calibration_claim(few)
    assert (c["verdict"], c["errors"], c["right"], c["n"]) == ("too few problems", 2, 10, 12) and c["separates"]


def test_inconsistencies_come_from_the_reference_tables():
    box = claims.paper_inconsistencies()
    falls = box[box["what"].str.startswith("Table 5")]
    sweep = reference.THRESHOLD_SWEEP.sort_values("tau_lp")
    assert len(falls) == int((np.diff(sweep["escalation_rate"].to_numpy()) < 0).sum()) >= 1
    assert "21.4%" in falls["numbers"].iloc[0] and "21.2%" in falls["numbers"].iloc[0]
    assert box["what"].str.contains("default thresholds").any()


def test_claims_table_on_the_recordings_has_a_verdict_per_model():
    from lase_nb import runs, strategies

    models = runs.load_models({"base": "data/traces/arith-smollm2"}, strategies.compared(), require=["lase"])
    table = claims.claims_by_model({m: strategy_tables(r, 0.8, 0.5) for m, r in models.items()},
                                   {m: r["lase"] for m, r in models.items()})
    assert set(table["base: verdict"]) <= set(claims.VERDICTS)
    assert table.loc[claims.MAD_CLAIM, "paper"].startswith("MAD")
    counts = claims.verdict_counts(table)
    assert int(counts.loc["base"].sum()) == len(table)
    assert "**base**" in claims.describe_verdicts(table)


def test_describe_primary_reports_both_tests_and_the_prediction():
    r = {"n": 600, "escalated": 300, "acc_a": 0.61, "acc_b": 0.60, "diff": 0.01, "diff_lo": -0.01, "diff_hi": 0.03,
         "b": 20, "c": 14, "p_value": 0.39, "claimed": False, "predicted_lower_bound": 0.0, "prediction_met": True}
    text = preregistration.describe_primary(r, {"date": "2026-12-01", "thresholds": {"tau_lp": 0.8, "tau_h": 0.5}})
    assert "+1.0 points [-1.0, +3.0]" in text and "p = 0.39" in text and "**not claimed**" in text and "met" in text


def test_claims_figure_draws_each_tested_accuracy_claim():
    import matplotlib

    matplotlib.use("Agg")
    from lase_nb import runs, strategies

    models = runs.load_models({"base": "data/traces/arith-smollm2"}, strategies.compared(), require=["lase"])
    table = claims.claims_by_model({m: strategy_tables(r, 0.8, 0.5) for m, r in models.items()},
                                   {m: r["lase"] for m, r in models.items()})
    fig = claims.plot_claims(table)
    tested = table.attrs["why"]["kind"].notna().sum()
    assert len(fig.axes[0].get_yticks()) == tested


def test_lase_vs_moa_is_not_testable_on_the_organisms_trained_for_lases_roles_only():
    """The organisms' MoA follow-ups write LASE's revision text (baseline_formats): "LASE beats
    MoA" on them measures the training, so its verdict is "not testable here" with the reason, while
    the base model's row keeps its test."""
    from lase_nb import runs, strategies

    folders = {"base": "data/traces/arith-smollm2", "v5": "data/traces/arith-organism-point",
               "v4": "data/traces/arith-organism-tell"}
    models = runs.load_models(folders, strategies.compared(), require=["lase"])
    off = {m: off_format(baseline_formats(r)) for m, r in models.items()}
    assert off["base"] == {} and set(off["v5"]) == set(off["v4"]) == {"mad", "moa", "down"}
    table = claims.claims_by_model({m: strategy_tables(r, 0.8, 0.5) for m, r in models.items()},
                                   {m: r["lase"] for m, r in models.items()}, off)
    moa = "LASE beats Mixture-of-Agents (Section 4.4)"
    assert table.loc[moa, "v5: verdict"] == table.loc[moa, "v4: verdict"] == "not testable here"
    assert table.loc[moa, "v5: ours"] == "not comparable" and table.loc[moa, "base: verdict"] != "not testable here"
    assert table.loc["LASE is more accurate than the single agent (Table 1)", "v5: verdict"] != "not testable here"
    words = claims.describe_verdicts(table)
    assert "not testable here (not a verdict): " in words
    assert "LASE beats Mixture-of-Agents (trained for LASE's roles only; " in words
    for m in ("v5", "v4"):  # each reason keeps its count of follow-ups in LASE's format
        fmt = baseline_formats(models[m]).loc["moa"]
        assert f"{int(fmt['with_lase_revision_text'])} of {int(fmt['follow_ups'])} MoA follow-ups" in words
    assert ", so it rests on the training alone" in words  # v4: none off format, the exclusion is the training
    fig = claims.plot_claims(table)  # the forest plot draws only the tested claims
    assert len(fig.axes[0].get_yticks()) == table.attrs["why"]["kind"].notna().sum()


def test_accuracy_verdicts_are_decided_on_holm_adjusted_p():
    """A study's paired accuracy claims are one family (issue 51): a claim that clears both tests
    only before the adjustment is "not shown", and its reason says so."""
    from lase_nb import runs, stats, strategies

    models = runs.load_models({"base": "data/traces/arith-smollm2"}, strategies.compared(), require=["lase"])
    table = claims.claims_by_model({m: strategy_tables(r, 0.8, 0.5) for m, r in models.items()},
                                   {m: r["lase"] for m, r in models.items()})
    long = table.attrs["why"].dropna(subset=["p_value"])
    assert np.allclose(long["p_holm"], stats.holm(long["p_value"].to_numpy()))
    for _, r in long.iterrows():
        adjusted = {"n": r["n"], "diff": r["diff"], "diff_lo": r["diff_lo"], "diff_hi": r["diff_hi"],
                    "p_value": r["p_holm"]}
        if r["verdict"] != "too few problems":
            assert r["verdict"] == claims.accuracy_verdict(adjusted, r["kind"])
        assert f"Holm p = {r['p_holm']:.3g}" in r["ours"]
    mad = long[long["claim"] == "LASE is more accurate than MAD (Table 1)"].iloc[0]
    if mad["p_value"] < 0.05 < mad["p_holm"]:
        assert mad["verdict"] == "not shown" and "unadjusted: reproduced" in mad["why"]
