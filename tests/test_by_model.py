"""The chapters' side-by-side views of several models (issue 19): each built from the one-model functions."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb.replay import Chains, outcomes_at, replay  # noqa: E402
from lase_nb.chapters import calibration as C  # noqa: E402
from lase_nb.chapters import comparison, failures, pareto  # noqa: E402
from lase_nb import regimes  # noqa: E402
from lase_nb.runs import chains_by_model, load_models  # noqa: E402
from tests.synthetic import synthetic_chains  # noqa: E402

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "arith-smollm2"


def gated(solo, esc, final) -> Chains:
    """Two-stage chains: the leader's answer (``solo``), unsure (p_min 0.5) where ``esc``, and the
    answer after one supporter (``final`` where escalated; kept otherwise)."""
    solo, esc = np.asarray(solo, bool), np.asarray(esc, bool)
    after = np.where(esc, np.asarray(final, bool), solo)
    n = len(solo)
    p = np.column_stack([np.where(esc, 0.5, 0.99), np.full(n, 0.99)])
    return Chains(np.array([f"q{i}" for i in range(n)], dtype=object), p, np.full((n, 2), 0.05),
                  np.column_stack([solo, after]), np.full((n, 2), "1", dtype=object),
                  np.tile([100.0, 500.0], (n, 1)), np.tile([20.0, 60.0], (n, 1)))


def model(n_right: int, n_esc: int, n: int = 100, esc_right: int = 0, fix: int = 0, brk: int = 0) -> Chains:
    """``n`` problems, ``n_right`` right alone; ``n_esc`` escalated, of which the first ``esc_right``
    were right alone; escalation fixes ``fix`` wrong ones and breaks ``brk`` right ones."""
    solo, esc = np.zeros(n, bool), np.zeros(n, bool)
    esc[:n_esc] = True
    solo[:esc_right] = True
    solo[n_esc:n_esc + n_right - esc_right] = True
    final = solo.copy()
    wrong_esc = np.flatnonzero(esc & ~solo)[:fix]
    right_esc = np.flatnonzero(esc & solo)[:brk]
    final[wrong_esc], final[right_esc] = True, False
    return gated(solo, esc, final)


# ---- escalation across models (failures) ---------------------------------------------------------

def test_escalation_by_model_counts_and_ranks():
    weak, strong = model(30, 70, esc_right=5, fix=10), model(80, 10, esc_right=2)
    t = failures.escalation_by_model({"strong": strong, "weak": weak}, 0.8, 0.5).set_index("model")
    assert list(t.index) == ["strong", "weak"]
    w = t.loc["weak"]
    assert w["leader_accuracy"] == pytest.approx(0.3) and w["escalation_rate"] == pytest.approx(0.7)
    assert w["acc_escalated"] == pytest.approx(5 / 70) and w["acc_kept"] == pytest.approx(25 / 30)
    assert t.loc["weak", "lase_acc_escalated"] == pytest.approx(15 / 70)
    assert t.loc["strong", "esc_lo"] < 0.1 < t.loc["strong", "esc_hi"]
    s = failures.describe_escalation_by_model(t.reset_index())
    assert "**the weaker model escalates more**" in s and s.index("weak (leader accuracy 30%)") < s.index("strong")
    assert "escalates 70%" in s and "escalates 10%" in s and "do not overlap" in s


def test_describe_escalation_by_model_is_honest():
    weak_keeps = failures.escalation_by_model({"a": model(30, 10), "b": model(80, 50, esc_right=40)}, 0.8, 0.5)
    s = failures.describe_escalation_by_model(weak_keeps)
    assert "does not escalate more" in s and "a (leader accuracy 30%)" in s
    close = failures.escalation_by_model({"a": model(3, 5, n=10), "b": model(6, 4, n=10, esc_right=2)}, 0.8, 0.5)
    s = failures.describe_escalation_by_model(close)
    assert "escalates more" in s and "intervals overlap" in s
    same = failures.escalation_by_model({"a": model(5, 5, n=10), "b": model(5, 2, n=10)}, 0.8, 0.5)
    assert "equally accurate" in failures.describe_escalation_by_model(same)
    assert "two" in failures.describe_escalation_by_model(same.iloc[:1])


# ---- frontiers (pareto) ---------------------------------------------------------------------------

def test_frontiers_by_model_table_and_figure():
    ch = {"base": synthetic_chains(n=60, seed=1), "organism": synthetic_chains(n=50, seed=2)}
    fr = pareto.frontiers_by_model(ch, 0.8, 0.5, grid_size=7)
    t = pareto.frontier_table(fr).set_index("model")
    for name, c in ch.items():
        assert t.loc[name, "n"] == len(c.problem_ids)
        assert t.loc[name, "leader_accuracy"] == pytest.approx(c.correct[:, 0].mean())
        assert t.loc[name, "lase_accuracy"] == pytest.approx(replay(c, 0.8, 0.5)["correct"].mean())
        assert t.loc[name, "oracle_accuracy"] >= t.loc[name, "best_pair_accuracy"] >= t.loc[name, "leader_accuracy"]
        assert len(fr[name]["grid"]) == 49
    fig = pareto.plot_frontier_by_model(fr)
    panels = [a for a in fig.axes if a.get_title()]
    assert [a.get_title() for a in panels] == ["base: 60 problems", "organism: 50 problems"]
    assert panels[0].get_xlim() == panels[1].get_xlim() and panels[0].get_ylim() == panels[1].get_ylim()
    plt.close(fig)


# ---- reliability (calibration) --------------------------------------------------------------------

def _frame(p, ok) -> pd.DataFrame:
    n = len(p)
    return C.confidence_frame(pd.DataFrame({"problem_id": [f"q{i}" for i in range(n)], "stage": 0, "answer": "1",
                                            "p_min": p, "h_max": 1 - np.asarray(p), "correct": ok}))


def test_calibration_by_model_and_its_sentence():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.3, 1.0, 80)
    sharp = _frame(p, p > 0.65)  # errors are exactly the unsure answers
    blind = _frame(p, rng.random(80) < 0.5)
    frames = C.frames_by_model({"sharp": sharp, "blind": blind})
    t = C.calibration_by_model(frames, 0.8, 0.5, n_boot=200).set_index("model")
    assert list(t.index) == ["sharp", "blind"]
    assert t.loc["sharp", "auroc_p_min"] == pytest.approx(1.0) and t.loc["sharp", "auroc_h_max"] == pytest.approx(1.0)
    assert t.loc["blind", "auroc_p_min_lo"] < 0.5 < t.loc["blind", "auroc_p_min_hi"]
    assert t.loc["sharp", "accuracy"] == pytest.approx((p > 0.65).mean()) and t.loc["sharp", "n"] == 80
    assert t.loc["sharp", "escalation_rate"] == pytest.approx((p < 0.8).mean())
    s = C.describe_calibration_by_model(t.reset_index())
    assert "sharp 1.00 [1.00, 1.00]" in s and f"blind {t.loc['blind', 'auroc_p_min']:.2f}" in s
    assert "sharp's confidence separates right from wrong answers better than blind's" in s
    fig = C.plot_reliability_by_model(frames, 0.8, 0.5, t.reset_index())
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert len(titles) == 2 and titles[0].startswith("sharp: AUROC 1.00") and "80 answers" in titles[1]
    plt.close(fig)


def test_frames_by_model_reads_runs_or_stage_tables():
    st = pd.DataFrame({"problem_id": ["a", "a", "b", "b"], "stage": [0, 1, 0, 1], "answer": ["1", "2", None, "3"],
                       "p_min": [0.9, 0.5, np.nan, 0.7], "h_max": [0.1, 0.2, np.nan, 0.3],
                       "correct": [True, False, True, False]})
    f = C.frames_by_model({"m": {"lase-full": st}})["m"]
    assert f["stage"].tolist() == [0, 0] and f["answered"].tolist() == [True, False]
    assert f["correct"].tolist() == [True, False]  # no answer counts as wrong
    with pytest.raises(Exception, match="full-chain"):
        C.frames_by_model({"m": {"single": st}})


# ---- comparison, on the committed recording loaded under two labels --------------------------------

@pytest.fixture(scope="module")
def two():
    if not (TRACES / "lase-full" / "manifest.json").exists():
        pytest.skip("no committed recording")
    return load_models({"base": TRACES, "again": TRACES}, ["single", "mv", "mad", "lase"], require=["lase"])


def test_comparison_by_model_stacks_the_one_model_tables(two):
    from lase_nb.runs import comparison_table

    tables = {m: comparison.strategy_tables(r, 0.8, 0.5) for m, r in two.items()}
    assert list(tables["base"]) == ["single", "mv", "mad", "lase", "lase-full"]
    t = comparison.comparison_by_model(tables)
    assert list(t.columns[:2]) == ["model", "strategy"] and t["model"].tolist() == ["base"] * 5 + ["again"] * 5
    one = comparison_table(tables["base"])
    got = t[t["model"] == "again"].set_index("strategy").drop(columns="model")
    pd.testing.assert_frame_equal(got, one, check_names=False)
    assert t.attrs["short"] == {"base": [], "again": []}
    few = comparison.comparison_by_model({"m": {k: tables["base"][k] for k in ("single", "lase", "lase-full")}})
    assert few["strategy"].tolist() == ["lase", "lase-full"] and few.attrs["short"] == {"m": ["single"]}
    alone = comparison.short_tables(tables["base"], ["mad"])
    assert list(alone) == ["mad"] and alone["mad"].index.tolist() == ["single", "mv", "lase", "mad"]
    pd.testing.assert_frame_equal(alone["mad"], comparison_table(
        {k: tables["base"][k] for k in ("single", "mv", "lase", "mad")}))
    assert set(comparison.SHORT_COLUMNS) <= set(comparison.comparison_display(alone["mad"]).columns)
    shown = comparison.comparison_display_by_model(t)
    assert shown.columns[0] == "model" and len(shown) == 10 and "accuracy % [95% CI]" in shown
    fig = comparison.plot_accuracy_vs_tokens_by_model(t)
    panels = [a for a in fig.axes if a.get_title()]
    assert [a.get_title() for a in panels] == [f"{m} ({int(one['n'].iloc[0])} problems)" for m in ("base", "again")]
    assert panels[0].get_xlim() == panels[1].get_xlim()
    plt.close(fig)


def test_the_recording_twice_is_in_one_regime(two):
    ch = chains_by_model(two)
    r = {m: regimes.gain_regime(c, 0.8, 0.5) for m, c in ch.items()}
    assert r["base"] == r["again"]
    lase = replay(ch["base"], 0.8, 0.5)["correct"].mean()
    assert r["base"]["acc_lase"] == pytest.approx(lase)
    assert r["base"]["acc_solo"] == pytest.approx(outcomes_at(ch["base"], 0)["correct"].mean())
    t = failures.escalation_by_model(ch, 0.8, 0.5)
    assert "equally accurate" in failures.describe_escalation_by_model(t)


# ---- the paper's headline on one model (comparison.aim_check) ----------------------------------

def _mv_table(n: int, right: int, tokens: float) -> pd.DataFrame:
    return pd.DataFrame({"problem_id": [f"q{i}" for i in range(n)], "correct": np.arange(n) < right,
                         "total_tokens": np.full(n, tokens)})


def test_aim_check_scores_both_operating_points_against_single_and_mv():
    chains = model(30, 40, fix=20)  # 100 problems: stage 0 costs 120 tokens, the escalated stage 560 in all
    check = comparison.aim_check(chains, _mv_table(100, 50, 840.0), 0.8, 0.5, n_boot=500)
    rec = check.loc["recorded"]
    assert rec["n"] == 100 and rec["n_mv"] == 100 and rec["escalated"] == pytest.approx(0.4)
    assert (rec["acc_single"], rec["acc_lase"], rec["acc_mv"]) == pytest.approx((0.3, 0.5, 0.5))
    assert rec["gain"] == pytest.approx(0.2) and rec["gain_lo"] > 0 and rec["beats_single"]
    assert rec["tokens_lase"] == pytest.approx(0.6 * 120 + 0.4 * 560) and rec["tokens_single"] == 120
    assert rec["x_single"] == pytest.approx(296 / 120) and not rec["within_budget"]
    assert rec["lase_minus_mv"] == pytest.approx(0.0) and rec["near_mv"]
    assert rec["share_of_mv"] == pytest.approx(296 / 840) and not rec["cheap_vs_mv"] and not rec["aim_met"]
    # every escalation costs 440 tokens on an unsure (p_min 0.5) answer: within 1.5x, the pair chosen
    # on half A escalates nothing, so on half B LASE is the leader alone
    bud = check.loc["budget"]
    assert bud["tau_lp"] <= 0.5 and bud["escalated"] == 0 and bud["x_single"] == pytest.approx(1.0)
    assert bud["within_budget"] and not bud["beats_single"] and bud["gain"] == 0
    assert bud["n"] == 50 and "half A (50 problems)" in bud["chosen on"]
    part = comparison.aim_check(chains, _mv_table(60, 30, 840.0), 0.8, 0.5, n_boot=500).loc["recorded"]
    assert part["n"] == 100 and part["n_mv"] == 60  # the gain on every problem, MV on those it answered
    assert part["gain"] == pytest.approx(0.2) and part["acc_mv"] == pytest.approx(0.5)
    assert part["acc_lase_mv"] == pytest.approx(np.mean(replay(chains.subset(np.arange(100) < 60), 0.8, 0.5)["correct"]))


def test_aim_check_meets_the_aim_only_when_all_four_hold():
    chains = model(30, 40, fix=20)
    cheap = comparison.aim_check(chains, _mv_table(100, 52, 3000.0), 0.8, 0.5, budget=2.5, n_boot=500)
    assert cheap.loc["recorded", "aim_met"]  # +20 points, 2.47x <= 2.5x, 2 points below MV, 0.10 of its tokens
    far = comparison.aim_check(chains, _mv_table(100, 54, 3000.0), 0.8, 0.5, budget=2.5, n_boot=500)
    assert not far.loc["recorded", "near_mv"] and not far.loc["recorded", "aim_met"]  # 4 points below MV
    no_mv = comparison.aim_check(chains, None, 0.8, 0.5, n_boot=500)
    assert "acc_mv" not in no_mv.columns and not no_mv["near_mv"].any() and not no_mv["aim_met"].any()
    shown = comparison.aim_display(cheap)
    assert shown.loc["recorded", "aim met"] == "yes" and shown.loc["recorded", "x leader's tokens"] == "2.47"
    assert shown.loc["recorded", "gain, points [95% CI]"].startswith("+20.0 [")
    paper = shown.loc["paper (Table 1, average over data sets)"]
    assert paper["x leader's tokens"] == "1.3" and paper["share of MV's tokens"] == "0.18"
    with pytest.raises(Exception, match="at least two problems"):
        comparison.aim_check(chains.subset(np.arange(100) < 1), None, 0.8, 0.5)
