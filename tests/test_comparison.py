"""Chapter 04's logic (lase_nb.chapters.comparison) and the comparison table, on small hand-built tables."""

from __future__ import annotations

from lase_nb.stats import within_margin

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb import reference  # noqa: E402
from lase_nb.chapters import comparison  # noqa: E402
from lase_nb.errors import DataError  # noqa: E402
from lase_nb.replay import chains_from_stages, outcomes_at, replay, sweep  # noqa: E402
from lase_nb.tables import comparison_table, main_comparison, split_by_coverage, strategy_tables  # noqa: E402
from tests.tables import mv_run, problems_frame  # noqa: E402
from tests.synthetic import model  # noqa: E402


def test_comparison_table_pairs_on_common_ids():
    n = 10
    single = problems_frame("single", [False] * 6 + [True] * 4)
    mv = problems_frame("mv", [True] * 10, completion=70, prompt=700)
    lase = problems_frame("lase", [True] * 10 + [False], ids=[f"q{i}" for i in range(11)], completion=20,
                          stop_stage=[1] * 6 + [0] * 5)
    t = comparison_table({"single": single, "mv": mv, "lase": lase})
    assert list(t.index) == ["single", "mv", "lase"] and (t["n"] == n).all()  # q10 dropped
    assert t.loc["lase", "accuracy"] == 1.0 and t.loc["single", "accuracy"] == 0.4
    assert t.loc["lase", "wins_vs_single"] == 6 and t.loc["lase", "losses_vs_single"] == 0
    assert t.loc["lase", "p_vs_single"] == pytest.approx(2 * 0.5 ** 6)
    assert t.loc["lase", "p_vs_mv"] == 1.0 and np.isnan(t.loc["mv", "p_vs_mv"])
    assert t.loc["mv", "token_multiplier"] == pytest.approx(7.0)
    assert t.loc["lase", "completion_multiplier"] == pytest.approx(2.0)
    assert t.loc["lase", "token_multiplier"] == pytest.approx(120 / 110)
    assert t.loc["lase", "escalation_rate"] == pytest.approx(0.6)
    assert t.loc["single", "acc_lo"] < 0.4 < t.loc["single", "acc_hi"]
    with pytest.raises(DataError):
        comparison_table({"a": single, "b": problems_frame("b", [True], ids=["zzz"])})
    shown = comparison.comparison_display(t, comparison.paper_reference())
    assert shown.loc["lase", "vs single: +wins/-losses"] == "+6/-0"
    assert shown.loc["single", "accuracy % [95% CI]"].startswith("40.0 [")


def test_paper_reference_comes_from_the_reference_module():
    p = comparison.paper_reference("Gemini-2.0-Flash", "MATH-500")
    t1 = reference.TABLE1.set_index(["model", "dataset", "method"])
    assert p.loc["lase", "paper accuracy %"] == t1.loc[("Gemini-2.0-Flash", "MATH-500", "lase"), "accuracy"]
    assert p.loc["mv", "paper avg tokens"] == t1.loc[("Gemini-2.0-Flash", "MATH-500", "mv"), "avg_tokens"]
    assert p.loc["mad", "paper multiplier, all datasets"] == \
        reference.TOKEN_MULTIPLIERS.set_index("method").loc["mad", "token_multiplier"]
    assert pd.isna(p.loc["moa", "paper accuracy %"]) and "MoA" in p.loc["moa", "paper, other settings"]
    with pytest.raises(ValueError, match="no row"):
        comparison.paper_reference("GPT-5", "MATH-500")


def test_claims_table_signs():
    t = comparison_table({
        "single": problems_frame("single", [True] * 5 + [False] * 5),
        "mv": problems_frame("mv", [True] * 7 + [False] * 3, prompt=700, completion=70),
        "lase": problems_frame("lase", [True] * 4 + [False] * 6, completion=20),
    })
    c = comparison.claims_table(t, comparison.paper_reference()).set_index("claim")["holds here"]
    assert not c["LASE is more accurate than the single agent"]
    assert not c["LASE matches or beats MV(7)"]
    assert c["LASE costs less than half of MV(7) (x single-agent tokens)"]


def test_claims_filter_and_coverage_split():
    big = [f"q{i}" for i in range(10)]
    tables = {"single": problems_frame("single", [True] * 10, ids=big),
              "mv": problems_frame("mv", [True] * 10, ids=big, prompt=700, completion=70),
              "lase": problems_frame("lase", [True] * 10, ids=big),
              "lase-mv": problems_frame("lase-mv", [True, False], ids=big[:2], prompt=600, completion=60)}
    main, short = split_by_coverage(tables)
    assert main == ["single", "mv", "lase"] and short == ["lase-mv"]
    sub = comparison_table({k: tables[k] for k in ("single", "mv", "lase", "lase-mv")})
    c = comparison.claims_table(sub, comparison.paper_reference(), about=["lase-mv"])
    assert list(c["about"]) == ["lase-mv"] and c["n"].item() == 2 and not c["holds here"].item()
    assert "0.86x MV's tokens" in c["this run"].item()  # 660 / 770


def test_mv_subsample_votes_over_the_first_k_samples():
    calls, probs = mv_run()
    per = comparison.mv_subsample(calls, probs).set_index(["problem_id", "k"])
    assert per.loc[("p_a", 1), "answer"] == "5" and not per.loc[("p_a", 1), "correct"]
    assert per.loc[("p_a", 2), "answer"] == "5"  # 1-1 tie: the surer sample (0.9) wins
    assert per.loc[("p_a", 3), "answer"] == "6"
    assert per.loc[("p_b", 2), "answer"] == "2"  # tie broken by confidence 0.9 > 0.2
    assert per.loc[("p_a", 2), "completion_tokens"] == 30 and per.loc[("p_a", 3), "total_tokens"] == 360
    curve = comparison.mv_curve(per.reset_index())
    assert list(curve["accuracy"]) == [0.0, 0.5, 1.0]
    assert list(comparison.mv_curve(per.reset_index(), ["p_b"])["accuracy"]) == [0.0, 1.0, 1.0]
    rows = comparison.mv_sample_rows(calls, probs)
    assert rows.groupby("problem_id")["correct"].sum().to_dict() == {"p_a": 2, "p_b": 1}


def test_compute_matched_respects_the_budget(chain_stages):
    chains = chains_from_stages(chain_stages)
    grid = sweep(chains, [0.0, 0.8, 1.0], [0.5, math.inf])
    assert grid.loc[1, "escalation_rate"] == 0.0 and grid.loc[1, "avg_tokens"] == 110  # gate off
    assert grid.loc[0, "escalation_rate"] == 0.5  # entropies 1.0 (p1), 2.0 (p3) > 0.5 escalate even at tau_lp = 0
    mv = pd.DataFrame({"k": [1, 2, 3], "accuracy": [0.2, 0.4, 0.6], "avg_tokens": [100.0, 500.0, 2000.0]})
    m = comparison.compute_matched(mv, grid).set_index("k")
    assert np.isnan(m.loc[1, "lase_accuracy"])  # nothing costs <= 100
    assert m.loc[2, "lase_tokens"] <= 500 and m.loc[2, "tau_lp"] == 0.0
    assert m.loc[3, "lase_accuracy"] == grid["accuracy"].max()


def test_compute_matched_labels_budgets_where_lase_is_the_single_agent(chain_stages):
    chains = chains_from_stages(chain_stages)
    grid = sweep(chains, [0.0, 0.8, 1.0], [0.5, math.inf])
    only_gate_off = grid[grid["escalation_rate"] == 0]
    mv = pd.DataFrame({"k": [1, 2], "accuracy": [0.2, 0.9], "avg_tokens": [120.0, 5000.0]})
    m = comparison.compute_matched(mv, grid).set_index("k")
    assert m.loc[1, "lase_is_single"] and m.loc[1, "lase_escalation"] == 0  # only the gate-off pair fits
    assert not m.loc[2, "lase_is_single"]
    text = comparison.describe_matched(m.reset_index(), mv, grid)
    assert "At 1 budget (k = 1) the best pick escalates no problem: there LASE is the single agent" in text
    assert "at 1 MV budgets where the best LASE pick actually escalates" in text.replace("At the", "at")
    assert "88.0% at 5400 tokens vs 86.4% at 5200" in text and "table below" not in text  # the paper's pair, in place
    assert len(only_gate_off)
    none = comparison.describe_matched(m.loc[[1]].reset_index(), mv, grid)
    assert "At no MV budget does the best LASE pick escalate anything." in none and "at 0" not in none


def test_comparison_display_and_claims_follow_the_table():
    single = problems_frame("single", [True] * 5 + [False] * 5)
    lase = problems_frame("lase", [True] * 6 + [False] * 4, stop_stage=[1] * 10,
                          correct_strict=[True] * 3 + [False] * 7)
    mv = problems_frame("mv", [True] * 7 + [False] * 3, prompt=700, completion=70)
    t = comparison_table({"single": single, "mv": mv, "lase": lase})
    assert t.loc["lase", "accuracy_strict"] == pytest.approx(0.3)
    shown = comparison.comparison_display(t)
    assert shown.loc["lase", "strict accuracy %"] == pytest.approx(30.0)
    claims = comparison.claims_table(t, comparison.paper_reference()).set_index("claim")
    assert claims.loc["LASE is more accurate than the single agent", "holds here"]
    assert not claims.loc["LASE matches or beats MV(7)", "holds here"]


def test_comparison_figure_shows_the_paper_as_a_table():
    t = comparison_table({"single": problems_frame("single", [True, False]),
                                "lase": problems_frame("lase", [True, True], stop_stage=[0, 1])})
    fig = comparison.plot_accuracy_vs_tokens(t, comparison.paper_reference())
    ax2 = fig.axes[1]
    assert not ax2.axison and ax2.tables, "the paper's row is drawn as a table on its own panel"
    texts = [c.get_text().get_text() for c in ax2.tables[0].get_celld().values()]
    assert "94.8" in texts and "93.2" in texts  # GPT-4.1-mini, GSM-Symbolic: LASE and MAD
    plt.close(fig)


def test_run_overview_lists_each_run():
    from types import SimpleNamespace

    runs = {"single": SimpleNamespace(problems=problems_frame("single", [True, False]), calls=pd.DataFrame({"x": [1, 2]}),
                                      manifest={"backend": "local", "model": "m", "config": {}}),
            "down": SimpleNamespace(problems=problems_frame("down", [True]), calls=pd.DataFrame({"x": [1]}),
                                    manifest={"backend": "openai", "model": "g", "config": {"tau_lp": 0.7, "tau_h": 0.4}})}
    o = comparison.run_overview(runs).set_index("strategy")
    assert o.loc["single", "problems"] == 2 and o.loc["single", "calls"] == 2 and o.loc["single", "run thresholds"] == ""
    assert o.loc["down", "model"] == "openai:g" and o.loc["down", "run thresholds"] == "(0.7, 0.4)"


def test_points_sit_at_their_token_counts_and_coincident_ones_are_named():
    """No jitter on the token axis: each marker is drawn at its strategy's average tokens, and two
    strategies on one point are named together instead of being moved apart."""
    t = comparison_table({"single": problems_frame("single", [True, False]),
                          "down": problems_frame("down", [True, False]),
                          "lase": problems_frame("lase", [True, True], completion=50)})
    mv = pd.DataFrame({"k": [1, 2, 3], "accuracy": [0.1, 0.3, 0.4], "avg_tokens": [110.0, 220.0, 330.0]})
    fig = comparison.plot_accuracy_vs_tokens(t, None, mv=mv, mv_temperature=0.7)
    ax = fig.axes[0]
    drawn = [float(c.lines[0].get_xdata()[0]) for c in ax.containers]
    assert drawn == t["avg_tokens"].tolist() and drawn[0] == drawn[1]  # single and DOWN share a point
    texts = [x.get_text() for x in ax.texts]
    assert "same point: single, down" in texts
    assert any(x.startswith("MV(k=1): one sample at temperature 0.7") for x in texts)
    assert comparison.coincident(np.array([100.0, 100.0, 105.0, 5000.0]), np.array([40.0, 40.0, 60.0, 40.0])) \
        == [[0, 1], [2], [3]]
    plt.close(fig)


def test_graded_calls_take_the_extraction_steps_answer_and_cost():
    calls = pd.DataFrame([
        {"problem_id": "p", "stage": 0, "role": "sample", "agent": "sample0", "answer": "4", "p_min": 0.9,
         "prompt_tokens": 10, "completion_tokens": 5},
        {"problem_id": "p", "stage": 0, "role": "sample", "agent": "sample1", "answer": None, "p_min": np.nan,
         "prompt_tokens": 10, "completion_tokens": 7},
        {"problem_id": "p", "stage": 0, "role": "extract", "agent": "sample1", "answer": "5", "p_min": 0.4,
         "prompt_tokens": 20, "completion_tokens": 2},
    ])
    g = comparison.graded_calls(calls).set_index("agent")
    assert list(g.index) == ["sample0", "sample1"]  # one row per sample: the step is not a vote of its own
    assert g.loc["sample1", "answer"] == "5" and g.loc["sample1", "p_min"] == 0.4
    assert g.loc["sample1", "prompt_tokens"] == 30 and g.loc["sample1", "completion_tokens"] == 9
    assert g.loc["sample0", "answer"] == "4" and g.loc["sample0", "prompt_tokens"] == 10
    per = comparison.mv_subsample(calls, pd.DataFrame({"problem_id": ["p"], "gold": ["5"]}))
    assert per["k"].max() == 2


def test_outcomes_at_and_seed_table(chain_stages):
    chains = chains_from_stages(chain_stages)
    r = replay(chains, 0.8, 0.5)
    again = outcomes_at(chains, r["stop_stage"].to_numpy())
    pd.testing.assert_frame_equal(r.reset_index(drop=True), again[r.columns].reset_index(drop=True), check_dtype=False)
    last = outcomes_at(chains, chains.n_stages - 1)
    assert (last["stop_stage"] == 3).all() and list(last["correct"]) == [True, True, False, False]
    samples = pd.DataFrame({"problem_id": ["p1", "p1", "p3"], "correct": [False, True, False]})
    seeds = comparison.seed_table(chains, r["stop_stage"].to_numpy(), samples)["problems"].tolist()
    assert seeds == [2, 1, 1, 1]  # p1 and p3 escalate wrong; only p1 ever right; p1's samples hold a right one


def test_comparison_by_model_stacks_the_one_model_tables(two):
    from lase_nb.tables import comparison_table

    tables = {m: strategy_tables(r, 0.8, 0.5) for m, r in two.items()}
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
    assert fig.get_size_inches()[0] <= 10  # legible at a notebook's width
    plt.close(fig)
    # three models, two a row: the panel above another still labels its ticks (issue 56: SmolLM2's had none)
    fig = comparison.plot_accuracy_vs_tokens_by_model(pd.concat([t, t[t["model"] == "base"].assign(model="third")]))
    fig.canvas.draw()
    for ax in (a for a in fig.axes if a.get_title()):
        assert any(x.get_visible() and x.get_text() for x in ax.get_xticklabels()), ax.get_title()
    plt.close(fig)
    # a baseline that is not comparable on one model is drawn hollow there, and the figure says so
    fig = comparison.plot_accuracy_vs_tokens_by_model(t, not_comparable={"again": {"mad"}})
    faces = {ax.get_title().split()[0]: [matplotlib.colors.to_hex(c.lines[0].get_markerfacecolor())
                                         for c in ax.containers] for ax in fig.axes if ax.get_title()}
    mad = list(t[t["model"] == "base"]["strategy"]).index("mad")
    assert faces["again"][mad] == "#ffffff" and faces["base"][mad] != "#ffffff"
    assert sum(f == "#ffffff" for fs in faces.values() for f in fs) == 1
    assert any("not comparable" in x.get_text() for ax in fig.axes for x in ax.texts)
    plt.close(fig)


def test_one_interval_rule_judges_closeness_in_04_and_07():
    """Issue 56: "no worse than" needs the interval's lower end at or above -3 points; "about equal"
    the whole interval within the margin; a point estimate of 0 with a wide interval is neither."""
    assert within_margin(-0.03) and within_margin(-0.0299999999999)
    assert not within_margin(-0.058) and not within_margin(float("nan"))
    assert within_margin(0.0, 0.05, 0.05) and not within_margin(-0.01, 0.0501, 0.05)
    from lase_nb.chapters import claims
    assert claims.within_margin is comparison.within_margin


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
    assert rec["lase_minus_mv"] == pytest.approx(0.0) and rec["lase_minus_mv_lo"] < -0.03 and not rec["near_mv"]
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
    lase = replay(chains, 0.8, 0.5)
    mv = pd.DataFrame({"problem_id": lase["problem_id"], "correct": lase["correct"].to_numpy(bool),
                       "total_tokens": 3000.0})
    cheap = comparison.aim_check(chains, mv, 0.8, 0.5, budget=2.5, n_boot=500)
    assert cheap.loc["recorded", "aim_met"]  # +20 points, 2.47x <= 2.5x, MV right on the same problems, 0.10 of its tokens
    better = mv["correct"].to_numpy(bool) | (np.arange(100) % 10 == 9)  # MV also right on about one problem in ten more
    far = comparison.aim_check(chains, mv.assign(correct=better), 0.8, 0.5, budget=2.5, n_boot=500).loc["recorded"]
    assert far["lase_minus_mv_lo"] < -0.03 and not far["near_mv"] and not far["aim_met"]
    no_mv = comparison.aim_check(chains, None, 0.8, 0.5, n_boot=500)
    assert "acc_mv" not in no_mv.columns and not no_mv["near_mv"].any() and not no_mv["aim_met"].any()
    shown = comparison.aim_display(cheap)
    assert shown.loc["recorded", "aim met"] == "yes" and shown.loc["recorded", "x leader's tokens"] == "2.47"
    assert shown.loc["recorded", "gain, points [95% CI]"].startswith("+20.0 [")
    paper = shown.loc["paper (Table 1, average over data sets)"]
    assert paper["x leader's tokens"] == "1.3" and paper["share of MV's tokens"] == "0.18"
    with pytest.raises(Exception, match="at least two problems"):
        comparison.aim_check(chains.subset(np.arange(100) < 1), None, 0.8, 0.5)


def test_describe_down_says_when_it_never_debates():
    zero = {"down_threshold": {"theta": 0.0, "calibration_n": 20, "calibration_seed": 1000}}
    assert "never debates on this model and its row is the single agent's" in comparison.describe_down(zero)
    some = {"down_threshold": {"theta": 0.951, "calibration_n": 20, "calibration_seed": 1008}}
    text = comparison.describe_down(some)
    assert "theta = 0.951" in text and "never debates" not in text
    assert "not in its manifest" in comparison.describe_down({})


def test_describe_mad_cost_sets_ours_beside_the_papers_ratio():
    t = pd.DataFrame({"avg_tokens": [100.0, 700.0, 1120.0]}, index=["single", "mv", "mad"])
    text = comparison.describe_mad_cost(t)
    assert "1.6x MV's tokens here, 2.2x in the paper (15.7x vs 7.1x" in text
    assert comparison.describe_mad_cost(t.drop(index="mad")) == ""
    calls = {"mad": pd.DataFrame({"problem_id": ["a"] * 7 + ["b"] * 6, "role": ["debater"] * 6 + ["extract"] + ["debater"] * 6,
                                  "used": True}),
             "mv": pd.DataFrame({"problem_id": ["a"] * 7 + ["b"] * 8, "role": ["sample"] * 14 + ["extract"], "used": True})}
    text = comparison.describe_mad_cost(t, calls)  # issue 51: the design's counts beside the measured ones
    assert "by design 6 calls, against MV(7)'s 7; measured here 6.5 and 7.5 calls per problem, of which 0.5 and 0.5" in text


def test_describe_comparison_scales_with_the_data():
    import numpy as np
    import pandas as pd

    from lase_nb.chapters import comparison as C

    def t(ok):
        return pd.DataFrame({"problem_id": [f"p{i}" for i in range(len(ok))], "correct": ok,
                             "total_tokens": 100.0, "completion_tokens": 50.0})

    small = {"single": t(np.array([True, False] * 6)), "lase": t(np.array([True] * 12))}
    text = C.describe_comparison(small, main_comparison(small))
    assert "12 problems: too few problems to say" in text and "1.0x its tokens" in text
    big = {"single": t(np.array([True, False] * 40)), "lase": t(np.array([True] * 80))}
    assert "above the single agent" in C.describe_comparison(big, main_comparison(big))
    same = {**big, "down": t(np.array([True, False] * 40))}  # DOWN at theta 0 is the single agent by construction
    text = C.describe_comparison(same, main_comparison(same), {"down": {"down_threshold": 0.0}})
    assert "DOWN never debates, so its answers are the single agent's first answers by construction: no test" in text
    assert "not shown to differ" not in text.split("never debates")[1].split("\n")[0]
    text = C.describe_comparison(same, main_comparison(same), {"down": {"down_threshold": {"theta": 0.9}}})
    assert "by construction" not in text
