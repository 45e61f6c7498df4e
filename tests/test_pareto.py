"""Chapter-05 logic: the fast grid equals replay, the oracle bounds every gate, readings, splits, figures."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb import reference  # noqa: E402
from lase_nb.chapters import pareto  # noqa: E402
from lase_nb.runs import common_ids, load_runs  # noqa: E402
from tests.synthetic import synthetic_chains  # noqa: E402
from lase_nb.replay import (Chains, fixed_policies, front_of, grid_metrics, operating_point, oracle_frontier,  # noqa: E402
                            replay, sweep)
from lase_nb.errors import ConfigError  # noqa: E402

NAN = np.nan


def hand_chains() -> Chains:
    """Three problems x 3 stages with numbers small enough to replay by hand.

    p0: confident and right at once (p=0.95, h=0.1).
    p1: unsure (p=0.6) and wrong at stage 0; stage 1 has no answer; stage 2 is right.
    p2: borderline (p=0.8 exactly, h=0.5 exactly) and right; stage 1 confident and wrong.
    """
    p = np.array([[0.95, 0.9, 0.9], [0.6, NAN, 0.99], [0.8, 0.97, 0.7]])
    h = np.array([[0.1, 0.2, 0.2], [0.9, NAN, 0.05], [0.5, 0.1, 1.2]])
    correct = np.array([[1, 1, 1], [0, 0, 1], [1, 0, 0]], bool)
    answers = np.array([["4", "4", "4"], ["7", None, "9"], ["3", "5", "5"]], dtype=object)
    prompt = np.array([[100, 300, 600], [100, 400, 800], [120, 300, 500]], float)
    completion = np.array([[10, 40, 70], [20, 50, 90], [10, 30, 50]], float)
    return Chains(np.array(["p0", "p1", "p2"], dtype=object), p, h, correct, answers, prompt, completion)


# ---- the grid is the same computation as replay --------------------------------------------------

def replay_grid(c: Chains, tl, th) -> dict[str, np.ndarray]:
    """Reference: :func:`replay` at every threshold pair, one at a time."""
    out = {k: np.empty((len(tl), len(th))) for k in ("accuracy", "avg_tokens", "escalation_rate")}
    for i, a in enumerate(tl):
        for j, b in enumerate(th):
            r = replay(c, a, b)
            out["accuracy"][i, j] = r["correct"].mean()
            out["avg_tokens"][i, j] = r["total_tokens"].mean()
            out["escalation_rate"][i, j] = (r["stop_stage"] > 0).mean()
    return out


def test_hand_chains_replay_by_hand():
    m = grid_metrics(hand_chains(), [0.8], [0.5])
    # p0 stops at 0 (right, 110); p1 runs to stage 2 (right, 890); p2 is certain at the boundary (right, 130)
    assert m["accuracy"][0, 0] == pytest.approx(1.0)
    assert m["avg_tokens"][0, 0] == pytest.approx((110 + 890 + 130) / 3)
    assert m["escalation_rate"][0, 0] == pytest.approx(1 / 3)
    m = grid_metrics(hand_chains(), [0.81], [0.5])  # p2 now escalates and stops, wrong, at stage 1
    assert m["accuracy"][0, 0] == pytest.approx(2 / 3)
    assert m["avg_tokens"][0, 0] == pytest.approx((110 + 890 + 330) / 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("chunk", [7, 1 << 22])
def test_grid_equals_replay_grid(seed, chunk):
    c = synthetic_chains(n=57, n_stages=4, seed=seed, no_answer=0.2)
    tl = np.r_[np.linspace(0, 1, 13), c.p_min[3, 0]]  # one threshold exactly on a recorded value
    th = np.r_[np.linspace(0, 1.5, 11), c.h_max[5, 0], np.inf]
    fast = grid_metrics(c, tl, th, chunk_elems=chunk)
    slow = replay_grid(c, tl, th)
    for k in ("accuracy", "avg_tokens", "escalation_rate"):
        np.testing.assert_allclose(fast[k], slow[k], rtol=1e-12)


def test_grid_matches_replay_at_each_pair():
    c = synthetic_chains(n=40, seed=3)
    tl, th = np.array([0.0, 0.7, 0.93, 1.0]), np.array([0.0, 0.3, 2.0])
    fast = grid_metrics(c, tl, th)
    for i, a in enumerate(tl):
        for j, b in enumerate(th):
            r = replay(c, a, b)
            assert fast["accuracy"][i, j] == r["correct"].mean()
            assert fast["avg_tokens"][i, j] == pytest.approx(r["total_tokens"].mean(), rel=1e-12)
            assert fast["escalation_rate"][i, j] == (r["stop_stage"] > 0).mean()


def test_grid_single_stage_and_large_tokens():
    c = synthetic_chains(n=10, n_stages=1)
    m = grid_metrics(c, [0.2, 0.9], [0.5])
    assert (m["escalation_rate"] == 0).all() and (m["accuracy"] == c.correct[:, 0].mean()).all()
    big = synthetic_chains(n=30, seed=4)
    big.prompt_tokens = big.prompt_tokens * 10_000 + 0.5  # not integers, sums beyond float32's exact range
    np.testing.assert_allclose(grid_metrics(big, [0.5, 0.95], [0.3])["avg_tokens"],
                               replay_grid(big, [0.5, 0.95], [0.3])["avg_tokens"], rtol=1e-12)


def test_sweep_rows_follow_the_grid():
    c = synthetic_chains(n=25, seed=5)
    tl, th = np.linspace(0, 1, 6), np.linspace(0, 1, 4)
    s, m = sweep(c, tl, th), grid_metrics(c, tl, th)
    row = s[(s.tau_lp == tl[2]) & (s.tau_h == th[3])].iloc[0]
    assert row.accuracy == m["accuracy"][2, 3] and row.avg_tokens == m["avg_tokens"][2, 3]


def test_grid_rejects_bad_thresholds():
    with pytest.raises(ConfigError):
        grid_metrics(hand_chains(), [1.5], [0.5])
    with pytest.raises(ConfigError):
        grid_metrics(hand_chains(), [0.5], [-1.0])


def test_threshold_axes_cover_recorded_entropy():
    c = hand_chains()
    tl, th = pareto.threshold_axes(c, 5)
    assert tl[0] == 0 and tl[-1] == 1 and len(th) == 5
    assert th[-1] >= np.nanmax(c.h_max) and th[-1] == pytest.approx(1.2)
    with pytest.raises(ValueError):
        pareto.threshold_axes(c, 1)


# ---- fronts and the oracle -----------------------------------------------------------------------

def test_front_is_not_dominated():
    g = sweep(synthetic_chains(n=80, seed=6), np.linspace(0, 1, 15), np.linspace(0, 1, 15))
    f = front_of(g)
    assert f["avg_tokens"].is_monotonic_increasing and f["accuracy"].is_monotonic_increasing
    for _, r in f.iterrows():
        better = (g["avg_tokens"] <= r["avg_tokens"]) & (g["accuracy"] > r["accuracy"])
        assert not better.any()


def test_oracle_frontier_by_hand():
    o = oracle_frontier(hand_chains())
    # only p1 can be fixed (wrong at 0, first right at stage 2: 890 tokens); p2 is already right at 0
    assert list(o["escalated"]) == [0, 1]
    assert list(o["accuracy"]) == pytest.approx([2 / 3, 1.0])
    assert list(o["avg_tokens"]) == pytest.approx([(110 + 120 + 130) / 3, (110 + 890 + 130) / 3])


@pytest.mark.parametrize("seed", [0, 7])
def test_no_threshold_pair_beats_the_oracle(seed):
    c = synthetic_chains(n=120, seed=seed)
    g = sweep(c, np.linspace(0, 1, 21), np.linspace(0, 2, 21))
    o = oracle_frontier(c)
    for _, r in g.iterrows():
        reachable = o[o["avg_tokens"] <= r["avg_tokens"] + 1e-9]["accuracy"].max()
        assert r["accuracy"] <= reachable + 1e-12
    assert o["accuracy"].iloc[-1] == pytest.approx((c.correct.any(axis=1)).mean())


def test_fixed_policies_have_intervals():
    p = fixed_policies(hand_chains())
    assert list(p["policy"]) == ["solo", "always-interact", "oracle"]
    assert (p["acc_lo"] <= p["accuracy"]).all() and (p["accuracy"] <= p["acc_hi"]).all() and (p["n"] == 3).all()


# ---- runs on disk ---------------------------------------------------------------------------------

def _write_run(folder: Path, rows: list[dict]) -> None:
    folder.mkdir(parents=True)
    (folder / "problems.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "calls.jsonl").write_text("")
    (folder / "stages.jsonl").write_text("")
    (folder / "manifest.json").write_text("{}")


def test_baselines_on_common_problems(tmp_path):
    def mk(pid: str, ok: bool, tok: int) -> dict:
        return {"problem_id": pid, "correct": ok, "total_tokens": tok, "completion_tokens": tok // 2}

    _write_run(tmp_path / "mv", [mk("p0", True, 700), mk("p1", True, 900), mk("p9", False, 5000)])
    _write_run(tmp_path / "mad", [mk("p0", False, 2000), mk("p1", True, 3000), mk("p2", True, 1000)])
    runs = load_runs(tmp_path, ["mv", "mad", "missing"])
    ids = common_ids(runs, ["p0", "p1", "p2"])
    assert list(ids) == ["p0", "p1"]
    b = pareto.baseline_points(runs, ids).set_index("strategy")
    assert list(b.index) == ["mv", "mad"]
    assert b.loc["mv", "n"] == 2 and b.loc["mv", "n_run"] == 3
    assert b.loc["mv", "accuracy"] == 1.0 and b.loc["mv", "avg_tokens"] == 800
    assert b.loc["mad", "accuracy"] == 0.5 and b.loc["mad", "avg_tokens"] == 2500


def test_recorded_gate_check_spots_a_mismatch():
    c = hand_chains()
    live = replay(c, 0.8, 0.5)[["problem_id", "stop_stage", "correct", "total_tokens"]]
    ok = pareto.recorded_gate_check(c, live.iloc[::-1], 0.8, 0.5)  # row order does not matter
    assert ok == {"n": 3, "stop_stage": 1.0, "correct": 1.0, "total_tokens": 1.0}
    bad = pareto.recorded_gate_check(c, live, 0.81, 0.5)  # p2 escalates under these thresholds
    assert bad["stop_stage"] == pytest.approx(2 / 3)


# ---- the paper beside us, and what the sweep says -------------------------------------------------

def test_paper_sweep_beside_uses_reference_and_replay():
    c = synthetic_chains(n=50, seed=8)
    t = pareto.paper_sweep_beside(c)
    ref = reference.as_fraction(reference.THRESHOLD_SWEEP)
    np.testing.assert_allclose(t["accuracy (paper)"], ref["accuracy"])
    np.testing.assert_allclose(t["avg_tokens (paper)"], ref["avg_tokens"])
    for _, r in t.iterrows():
        assert r["accuracy (this run)"] == replay(c, r["tau_lp"], r["tau_h"])["correct"].mean()
    h = pareto.tau_h_beside(c, 0.8)
    assert list(h["tau_h"]) == list(reference.TAU_H_SWEEP["tau_h"]) and (h["tau_lp"] == 0.8).all()


def test_knob_reading_of_the_paper_is_a_budget_knob():
    ref = reference.as_fraction(reference.THRESHOLD_SWEEP)
    r = pareto.knob_reading(ref["accuracy"], ref["avg_tokens"], ref["escalation_rate"], 500)
    assert r.verdict == "budget knob"
    assert r.token_ratio == pytest.approx(3100 / 1800) and r.esc_high == pytest.approx(0.428)


@pytest.mark.parametrize("acc,tokens,esc,verdict", [
    ([0.6, 0.5, 0.3], [300, 900, 2000], [0.1, 0.5, 0.9], "accuracy falls"),
    ([0.3, 0.5, 0.6], [300, 900, 2000], [0.1, 0.5, 0.9], "accuracy rises"),
    ([0.5, 0.5, 0.5], [300, 305, 310], [0.2, 0.21, 0.22], "inert"),
    ([0.5, 0.51, 0.5], [300, 900, 2000], [0.1, 0.5, 0.9], "budget knob"),
])
def test_knob_reading_branches(acc, tokens, esc, verdict):
    r = pareto.knob_reading(acc, tokens, esc, n=60)
    assert r.verdict == verdict
    assert f"{acc[0]:.1%}" in r.sentence and f"{acc[-1]:.1%}" in r.sentence


# ---- choose on one half, check on the other --------------------------------------------------------

def test_select_and_check_replays_the_choice_on_the_other_half():
    from lase_nb.replay import split_halves

    c = synthetic_chains(n=90, seed=9)
    tl, th = np.linspace(0, 1, 11), np.linspace(0, 1.5, 7)
    budget = 600.0
    chk = pareto.select_and_check(c, tl, th, budget, seed=3)
    a, b = split_halves(c.problem_ids, 3)
    assert chk.n_a == a.sum() and chk.n_b == b.sum() and chk.n_a + chk.n_b == 90
    assert chk.tokens_a <= budget
    on_a, on_b = replay(c.subset(a), chk.tau_lp, chk.tau_h), replay(c.subset(b), chk.tau_lp, chk.tau_h)
    assert chk.acc_a == on_a["correct"].mean() and chk.tokens_a == pytest.approx(on_a["total_tokens"].mean())
    assert chk.acc_b == on_b["correct"].mean() and chk.tokens_b == pytest.approx(on_b["total_tokens"].mean())
    best_a = sweep(c.subset(a), tl, th)
    assert chk.acc_a == best_a[best_a["avg_tokens"] <= budget]["accuracy"].max()
    assert chk.best_b_acc >= chk.acc_b or chk.tokens_b > budget


def test_split_checks_many_seeds():
    c = synthetic_chains(n=60, seed=10)
    many = pareto.split_checks(c, np.linspace(0, 1, 9), np.linspace(0, 1, 5), 700.0, range(12))
    assert len(many) == 12 and set(many["seed"]) == set(range(12))
    np.testing.assert_allclose(many["optimism"], many["acc_a"] - many["acc_b"])
    assert pareto.split_checks(c, [0.5], [0.5], 1.0, range(3)).empty  # nothing fits a 1-token budget


# ---- figures ---------------------------------------------------------------------------------------

def test_figures_draw(tmp_path):
    c = synthetic_chains(n=60, seed=11)
    tl, th = pareto.threshold_axes(c, 9)
    grid = sweep(c, tl, th)
    from lase_nb.replay import operating_point

    d = operating_point(c, 0.8, 0.5)
    base = pd.DataFrame({"strategy": ["mv", "mad"], "n": [30, 30], "n_run": [30, 30], "accuracy": [0.7, 0.6],
                         "avg_tokens": [1500.0, 5000.0], "avg_completion_tokens": [300.0, 900.0],
                         "acc_lo": [0.5, 0.4], "acc_hi": [0.85, 0.77]})
    cc = c.subset(np.arange(30))
    common = {"grid": sweep(cc, tl, th), "policies": fixed_policies(cc),
              "oracle": oracle_frontier(cc), "baselines": base, "default": operating_point(cc, 0.8, 0.5)}
    figs = [pareto.plot_frontier(grid, fixed_policies(c), oracle_frontier(c), d, common),
            pareto.plot_frontier(grid, fixed_policies(c), oracle_frontier(c), d),
            pareto.plot_escalation(tl, th, grid_metrics(c, tl, th), (0.8, 0.5), reference.THRESHOLD_SWEEP),
            pareto.plot_sweep_vs_paper(pareto.paper_sweep_beside(c))]
    chk = pareto.select_and_check(c, tl, th, float(grid["avg_tokens"].median()))
    figs.append(pareto.plot_split(c, tl, th, chk, pareto.split_checks(c, tl, th, chk.budget, range(5))))
    assert len(figs[0].axes) == 3  # two panels and a colour bar
    for i, f in enumerate(figs):
        f.savefig(tmp_path / f"{i}.png")
        plt.close(f)
    assert len(list(tmp_path.glob("*.png"))) == 5


def _never_fixed(n: int = 60, seed: int = 11) -> Chains:
    """Synthetic chains whose later stages are never right: every front is one point, the oracle is the leader."""
    c = synthetic_chains(n=n, seed=seed)
    correct = c.correct.copy()
    correct[:, 1:] = False
    return Chains(c.problem_ids, c.p_min, c.h_max, correct, c.answers, c.prompt_tokens, c.completion_tokens)


def test_split_legend_names_only_what_is_drawn():
    """A one-point front is drawn as a line to the right edge (it keeps its accuracy at any larger
    budget); the legend promised front lines that a one-point step did not draw."""
    c = _never_fixed()
    tl, th = pareto.threshold_axes(c, 9)
    chk = pareto.select_and_check(c, tl, th, float(sweep(c, tl, th)["avg_tokens"].median()))
    assert len(front_of(sweep(c, tl, th))) == 1  # the case the old figure drew nothing for
    fig = pareto.plot_split(c, tl, th, chk, pareto.split_checks(c, tl, th, chk.budget, range(3)))
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    for text in ax.get_legend().get_texts():
        line = lines[text.get_text()]
        points = {tuple(p) for p in np.asarray(line.get_xydata())}
        drawn_as_line = line.get_linestyle() not in ("None", "none", "", " ")
        assert len(points) >= (2 if drawn_as_line else 1), text.get_text()
    plt.close(fig)


def test_frontier_names_sit_off_the_error_bars_and_name_an_oracle_on_the_leader():
    from lase_nb.plots import touches

    c = _never_fixed()
    tl, th = pareto.threshold_axes(c, 9)
    base = pd.DataFrame({"strategy": ["mv", "mad"], "n": [60, 60], "n_run": [60, 60], "accuracy": [0.35, 0.18],
                         "avg_tokens": [1500.0, 2000.0], "avg_completion_tokens": [300.0, 500.0],
                         "acc_lo": [0.22, 0.09], "acc_hi": [0.5, 0.32]})
    common = {"grid": sweep(c, tl, th), "policies": fixed_policies(c), "oracle": oracle_frontier(c),
              "baselines": base, "default": operating_point(c, 0.8, 0.5)}
    fig = pareto.plot_frontier(common["grid"], common["policies"], common["oracle"], common["default"], common)
    for ax in fig.axes[:2]:
        names = [t for t in ax.texts if t.get_text()]
        assert any(t.get_text().startswith("oracle = leader alone") for t in names)
        bars = [a for cont in ax.containers for a in (*cont.lines[1], *cont.lines[2])]  # caps and bars
        for t in names:
            box = t.get_window_extent()
            assert not any(touches(a, box) for a in bars), t.get_text()
            assert not any(box.overlaps(o.get_window_extent()) for o in names if o is not t), t.get_text()
    plt.close(fig)


def test_stage_effects_by_hand():
    e = pareto.stage_effects(hand_chains()).set_index("stage")
    assert list(e["accuracy"]) == pytest.approx([2 / 3, 1 / 3, 2 / 3])
    assert list(e["no_answer"]) == pytest.approx([0, 1 / 3, 0])
    assert list(e["fixed_vs_leader"]) == [0, 0, 1] and list(e["broken_vs_leader"]) == [0, 1, 1]
    assert list(e["fixed_vs_previous"]) == [0, 0, 1] and list(e["broken_vs_previous"]) == [0, 1, 0]
    assert e.loc[2, "avg_tokens"] == pytest.approx((670 + 890 + 550) / 3)


def test_describe_functions_follow_the_chains():
    c = synthetic_chains(60, seed=3)
    tl, th = np.linspace(0, 1, 5), np.linspace(0, 2, 5)
    grid = sweep(c, tl, th)
    policies = fixed_policies(c)
    oracle = oracle_frontier(c)
    default = operating_point(c, 0.8, 0.5)
    effects = pareto.stage_effects(c)
    text = pareto.describe_frontier(grid, policies, oracle, default, effects)
    front = front_of(grid)
    assert ("a single point" in text) == (len(front) == 1)
    assert f"{len(grid):,} pairs" in text and "(strict" in text
    sweep_text = pareto.describe_sweep(pareto.paper_sweep_beside(c), grid, len(c.problem_ids))
    assert "accuracy 74.1% -> 75.1%" in sweep_text  # the paper's Table 5, first row to last
    small = c.subset(np.arange(len(c.problem_ids)) < 12)
    small_text = pareto.describe_sweep(pareto.paper_sweep_beside(small), sweep(small, tl, th), 12,
                                       pareto.sweep_test(small))
    assert "reproduces" not in small_text.replace("whether this run reproduces", "")
    one = hand_chains()
    g1 = sweep(one, [0.0, 1.0], [0.0, 2.0])
    t1 = pareto.describe_frontier(g1, fixed_policies(one), oracle_frontier(one),
                                  operating_point(one, 0.8, 0.5), pareto.stage_effects(one))
    assert "Leader alone: 66.7%" in t1 and "oracle" in t1
    # issue 67, item 8: the stage-by-stage breakdown is in the sentence, not in a section the path folds away
    e1 = pareto.stage_effects(one)
    assert "section 5.4" not in t1
    for r in e1.iloc[1:].itertuples():
        assert f"stage {r.stage} fixes {r.fixed_vs_previous}, breaks {r.broken_vs_previous}" in t1


def test_knob_reading_in_the_sweeps_own_order():
    ref = reference.as_fraction(reference.THRESHOLD_SWEEP)
    by_esc = pareto.knob_reading(ref["accuracy"], ref["avg_tokens"], ref["escalation_rate"], 500)
    ordered = pareto.knob_reading(ref["accuracy"], ref["avg_tokens"], ref["escalation_rate"], 500, ordered=True)
    assert "74.8% -> 75.1%" in by_esc.sentence  # least escalating row is tau_lp = 0.6 (21.2%)
    assert "74.1% -> 75.1%" in ordered.sentence and ordered.verdict == "budget knob"


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


_EXTRA = [f.name for f in __import__("dataclasses").fields(pareto.SplitCheck)
          if f.name not in ("seed", "budget", "n_a", "n_b", "tau_lp", "tau_h", "acc_a", "tokens_a", "acc_b", "tokens_b")]


def test_describe_split_calls_it_optimism_only_when_the_selection_half_flatters():
    check = pareto.SplitCheck(seed=0, budget=100.0, n_a=10, n_b=10, tau_lp=0.8, tau_h=0.5, acc_a=0.6, tokens_a=95.0,
                              acc_b=0.7, tokens_b=90.0, **{k: 0.7 for k in _EXTRA})
    flat = pd.DataFrame({"optimism": [-0.05, -0.03], "regret": [0.0, 0.01], "over_budget": [0.0, 0.0]})
    text = pareto.describe_split(check, flat, median_budget=False)
    assert "above the selection half's (no optimism here" in text and "price of choosing" not in text
    text = pareto.describe_split(check, flat.assign(optimism=[0.05, 0.03]), median_budget=False)
    assert "below the selection half's (that optimism is the price" in text


def test_gain_rows_and_figure_use_the_paired_tests():
    from tests.synthetic import model

    from lase_nb.chapters import pareto as P2

    rows = P2.gain_rows({"a": model(50, 30, n=100, fix=10), "b": model(50, 30, n=100, esc_right=10, brk=6)}, 0.8, 0.5)
    assert list(rows["model"]) == ["a", "a", "b", "b"]
    g = rows.iloc[0]
    assert g["fixed"] == 10 and g["lo"] <= g["gain"] <= g["hi"] and np.isclose(g["gain"], 0.10)
    fig = P2.plot_gains(rows, zoom=0.05)
    assert len(fig.axes) == 2 and fig.axes[1].get_xlim()[1] < 0.06
    reach = float(np.abs(rows[["lo", "hi"]].to_numpy()).max())  # issue 51: the left panel spans the intervals, not +-100
    assert reach <= fig.axes[0].get_xlim()[1] <= (np.ceil(reach * 10) / 10) * 1.05 + 1e-9
    plt.close(fig)
    fig = P2.plot_gains(rows)  # the default zoom holds every gated interval, in steps of 5 points, at least 8
    gated = rows[~rows["policy"].str.startswith("always")]
    inner = float(np.abs(gated[["lo", "hi"]].to_numpy()).max())
    limit = fig.axes[1].get_xlim()[1] / 1.05
    assert inner <= limit + 1e-9 and limit >= 0.08 and (limit <= 0.08 + 1e-9 or limit - inner < 0.05)
    plt.close(fig)


# ---- label placement (issue 37, item 6) -------------------------------------------------------------

RECORDED = Path(__file__).resolve().parents[1] / "data" / "traces"


def test_contour_label_spots_keep_clear_of_the_marked_points_and_of_each_other():
    line = np.column_stack([np.linspace(0, 1, 101), np.full(101, 0.5)])  # one level: a horizontal line
    spots = pareto.contour_label_spots([[line], [line + [0, 0.02]]], marked=[(0.5, 0.5)], extent=(0, 1, 0, 1))
    assert len(spots) == 2
    for x, y in spots:
        assert np.hypot(x - 0.5, y - 0.5) >= 0.12  # off the star
    assert np.hypot(spots[0][0] - spots[1][0], spots[0][1] - spots[1][1]) >= 0.12  # off each other
    # nowhere clear: the farthest point of the line, inside the axes
    (x, y), = pareto.contour_label_spots([[line[45:56]]], marked=[(0.5, 0.5)], extent=(0, 1, 0, 1))
    assert x in (0.45, 0.55)
    assert pareto.contour_label_spots([[]], marked=[], extent=(0, 1, 0, 1)) == []


def _texts(ax):
    from lase_nb.plots import text_extent

    return [(t.get_text(), text_extent(t)) for t in ax.texts if t.get_text() and t.get_visible()]


def test_escalation_map_writes_no_token_contour_label_on_the_default_star():
    """The '1.18k tok' label sat on the default star of the embedded model's map."""
    from lase_nb.plots import touches
    from lase_nb.replay import chains_from_stages

    c = chains_from_stages(load_runs(RECORDED / "arith-smollm2", ["lase"])["lase"].stages)
    tl, th = pareto.threshold_axes(c, 41)
    fig = pareto.plot_escalation(tl, th, grid_metrics(c, tl, th), (0.8, 0.5), reference.THRESHOLD_SWEEP)
    fig.canvas.draw()
    ax = fig.axes[0]
    star, rings = ax.lines[-2], ax.lines[-1]
    labels = [t for t in ax.texts if t.get_text().endswith("tok")]
    assert labels
    assert not [t.get_text() for t in labels if touches(star, t.get_window_extent()) or touches(rings, t.get_window_extent())]
    plt.close(fig)


def test_slider_panels_keep_the_oracle_and_always_interact_names_apart():
    """'oracle = leader alone' hid the start of 'always interact' in 4 of the 6 panels: the names'
    background boxes count, and the oracle's long name is placed first."""
    from lase_nb.chapters import sliders
    from lase_nb.replay import chains_from_stages

    c = chains_from_stages(load_runs(RECORDED / "arith-smollm2", ["lase"])["lase"].stages)
    fig = sliders.small_multiples(c)
    fig.canvas.draw()
    for ax in fig.axes:
        names = _texts(ax)
        clash = [(a, b) for i, (a, ea) in enumerate(names) for b, eb in names[i + 1:] if ea.overlaps(eb)]
        assert not clash, clash
    plt.close(fig)


def test_always_interact_is_named_beside_its_own_diamond_not_above_the_star():
    """In the two-model frontier the organism's always-interact name sat above the LASE star."""
    from lase_nb.runs import by_display_name, chains_by_model, load_models

    models = load_models(by_display_name([RECORDED / "arith-smollm2", RECORDED / "arith-organism-point"]), ["lase"],
                         require=["lase"])
    fronts = pareto.frontiers_by_model(chains_by_model(models), 0.8, 0.5, 21)
    fig = pareto.plot_frontier_by_model(fronts)
    fig.canvas.draw()
    for ax, f in zip(fig.axes, fronts.values()):
        pol = f["policies"].set_index("policy")
        to_px = ax.transData.transform
        diamond = to_px((pol.loc["always-interact", "avg_tokens"], pol.loc["always-interact", "accuracy"]))
        star = to_px((f["default"]["avg_tokens"], f["default"]["accuracy"]))
        (box,) = [e for t, e in _texts(ax) if t.startswith("always interact")]

        def gap(pt):  # from a marker's centre to the name's box (0 inside it), in pixels
            return np.hypot(max(box.x0 - pt[0], 0, pt[0] - box.x1), max(box.y0 - pt[1], 0, pt[1] - box.y1))

        assert gap(diamond) < gap(star), (ax.get_title(), box, diamond, star)
    plt.close(fig)


@pytest.mark.parametrize("diffs, verdict", [
    ((0.0, -0.03, 0.03, 1.0), "reproduces"),  # flat, and shown flat
    ((0.0, -0.25, 0.25, 1.0), "Too few problems to say"),  # 12 problems: flat in the point, not shown
    ((-0.2, -0.3, -0.1, 0.001), "lowers accuracy"),
])
def test_sweep_verdict_scales_with_the_data(diffs, verdict):
    d, lo, hi, p = diffs
    reading = pareto.knob_reading([0.5, 0.5], [100, 200], [0.1, 0.5], n=12, ordered=True)
    text = pareto.sweep_verdict(reading, {"diff": d, "diff_lo": lo, "diff_hi": hi, "p_value": p, "n": 12})
    assert verdict in text


def test_describe_gains_scales_with_the_data():
    rows = pd.DataFrame([
        {"model": "big", "policy": "gated", "n": 200, "gain": 0.05, "lo": 0.02, "hi": 0.08, "p_value": 0.001,
         "fixed": 12, "broken": 2},
        {"model": "flat", "policy": "gated", "n": 200, "gain": 0.01, "lo": -0.025, "hi": 0.045, "p_value": 0.6,
         "fixed": 10, "broken": 8},
        {"model": "small", "policy": "gated", "n": 12, "gain": 0.083, "lo": 0.0, "hi": 0.25, "p_value": 1.0,
         "fixed": 1, "broken": 0},
    ])
    text = pareto.describe_gains(rows)
    assert "**big**, gated: +5.0 points [+2.0, +8.0], p = 0.001, 200 problems: above the leader alone" in text
    assert "**flat**, gated: +1.0 points [-2.5, +4.5]" in text and "not shown to differ" in text
    assert "**small**, gated: +8.3 points [+0.0, +25.0], p = 1, 12 problems: too few problems to say" in text
