"""Calibration chapter logic on hand-built frames and generations: frames, bins, paper conditions,
AUROC/ECE table, gate split, exact vs top-k entropy, figures and sentences."""

from __future__ import annotations

import math
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb import reference  # noqa: E402
from lase_nb.chapters import calibration as C  # noqa: E402
from lase_nb.confidence import confidence_frame, gate_split  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from lase_nb.errors import DataError  # noqa: E402
from lase_nb.stats import ece  # noqa: E402
from lase_nb.strategies import CallRecord, ProblemResult, StageRecord  # noqa: E402
from lase_nb.types import Generation, TokenLogprob  # noqa: E402


def _frame(p, h, ok, answered=None, level=None) -> pd.DataFrame:
    n = len(p)
    answered = [True] * n if answered is None else answered
    return pd.DataFrame({"problem_id": [f"q{i}" for i in range(n)], "stage": 0,
                         "answer": [("1" if a else None) for a in answered], "answered": answered,
                         "p_min": np.where(answered, p, np.nan), "h_max": np.where(answered, h, np.nan),
                         "correct": np.asarray(ok, bool) & np.asarray(answered, bool),
                         "level": level if level is not None else [1] * n})


def _stages() -> pd.DataFrame:
    rows = []
    for pid, s0, s1 in (("a", ("7", True, 0.99, 0.05), ("7", True, 0.98, 0.1)),
                        ("b", ("3", False, 0.95, 0.2), (None, False, None, None))):
        for t, (ans, ok, p, h) in enumerate((s0, s1)):
            rows.append({"problem_id": pid, "strategy": "lase", "stage": t, "supporter": None if t == 0 else "devil",
                         "answer": ans, "correct": ok, "p_min": p, "h_max": h, "uncertain": False,
                         "prompt_tokens": 10, "completion_tokens": 5})
    return pd.DataFrame(rows)


# ---- confidence_frame -------------------------------------------------------------------------

def test_confidence_frame_from_stages_keeps_stage_and_blanks_unanswered():
    f = confidence_frame(_stages(), stage=None)
    assert len(f) == 4
    one = confidence_frame(_stages(), stage=1)
    assert list(one["problem_id"]) == ["a", "b"]
    b = one.set_index("problem_id").loc["b"]
    assert not b["answered"] and np.isnan(b["p_min"]) and np.isnan(b["h_max"]) and not b["correct"]
    assert one.set_index("problem_id").loc["a", "answered"]


def test_confidence_frame_unanswered_is_never_correct():
    st = _stages()
    st.loc[3, "correct"] = True  # a corrupt row: no answer but marked right
    f = confidence_frame(st, stage=1).set_index("problem_id")
    assert not f.loc["b", "correct"] and f.loc["a", "correct"]


def test_confidence_frame_from_run_without_stages_uses_leader_call_and_problem_grade():
    calls = pd.DataFrame({"problem_id": ["a", "b"], "role": ["solver", "solver"], "stage": [0, 0],
                          "answer": ["5", "6"], "p_min": [0.9, 0.6], "h_max": [0.1, 0.9], "used": True})
    probs = pd.DataFrame({"problem_id": ["a", "b"], "correct": [True, False], "level": [1, 3]})
    run = SimpleNamespace(path="x", manifest={"strategy": "single"}, stages=pd.DataFrame(), calls=calls,
                          problems=probs)
    f = confidence_frame(run)
    assert list(f["correct"]) == [True, False]
    assert list(f["level"]) == [1, 3]
    assert f.loc[1, "p_min"] == pytest.approx(0.6)


def test_confidence_frame_rejects_run_without_leader_answers():
    calls = pd.DataFrame({"problem_id": ["a"], "role": ["sample"], "stage": [0], "answer": ["5"],
                          "p_min": [0.9], "h_max": [0.1]})
    run = SimpleNamespace(path="x", manifest={"strategy": "mv"}, stages=pd.DataFrame(), calls=calls,
                          problems=pd.DataFrame({"problem_id": ["a"], "correct": [True]}))
    with pytest.raises(DataError):
        confidence_frame(run)


def test_confidence_frame_from_live_results():
    rec = CallRecord("solver", 0, "leader", 1, 1, 0.0, False, "stop", (), "x", answer="4", p_min=0.7, h_max=0.3)
    single = ProblemResult("p1", "single", "4", True, calls=[rec])
    st = [StageRecord(0, None, "2", False, 0.99, 0.01, False, 1, 1)]
    lase = ProblemResult("p2", "lase", "2", False, calls=[rec], stages=st, stop_stage=0)
    probs = [SimpleNamespace(id="p1", meta={"level": 2}), SimpleNamespace(id="p2", meta={"level": 3})]
    f = confidence_frame([single, lase], problems=probs)
    assert list(f["correct"]) == [True, False]
    assert list(f["p_min"]) == [0.7, 0.99]
    assert list(f["level"]) == [2, 3]


# ---- bins and paper conditions ----------------------------------------------------------------

def test_default_bins_hold_paper_cuts_and_tau():
    for proxy in ("p_min", "h_max"):
        cuts = reference.CALIBRATION.loc[reference.CALIBRATION["proxy"] == proxy, "threshold"]
        edges = C.default_bins(proxy, tau=0.77)
        assert set(cuts) <= set(edges)
        assert 0.77 in edges
        assert edges == sorted(edges)
    assert 5.0 not in C.default_bins("p_min", tau=5.0)  # outside [0, 1]: not an edge
    with pytest.raises(ValueError):
        C.default_bins("nope")


def test_reliability_puts_tau_on_a_bin_edge():
    f = _frame([0.79, 0.81, 0.995], [0.1, 0.1, 0.1], [False, True, True])
    t = C.reliability(f, "p_min", tau=0.8)
    row = t[t["lo"] == 0.8].iloc[0]
    assert row["count"] == 1 and row["accuracy"] == 1.0  # 0.81 sits on the confident side of 0.8


def test_paper_conditions_counts_by_hand():
    # p >= 0.99: q0 (right), q1 (wrong); p < 0.5: q2 (wrong), q3 (right); h > 1.0: q2, q4 (right)
    f = _frame([0.995, 0.999, 0.3, 0.4, 0.7, np.nan], [0.1, 0.2, 1.5, 0.3, 1.2, np.nan],
               [True, False, False, True, True, False], answered=[True] * 5 + [False])
    t = C.paper_conditions(f).set_index("condition")
    ref = reference.CALIBRATION.set_index("condition")
    got = {c: (t.loc[c, "n"], t.loc[c, "accuracy"]) for c in t.index}
    expect = {"min token prob >= 0.99": (2, 0.5), "min token prob < 0.50": (2, 0.5), "answer entropy > 1.0": (2, 0.5)}
    assert got == expect
    assert t["paper_accuracy"].tolist() == pytest.approx((ref.loc[t.index, "accuracy"] / 100).tolist())
    assert t["share"].tolist() == pytest.approx([0.4, 0.4, 0.4])  # of the 5 answered rows


def test_is_monotone():
    ok = pd.DataFrame({"bin": ["a", "b", "c"], "count": [3, 0, 2], "accuracy": [0.2, np.nan, 0.5]})
    bad = pd.DataFrame({"bin": ["a", "b"], "count": [3, 2], "accuracy": [0.6, 0.5]})
    assert C.is_monotone(ok)
    assert not C.is_monotone(bad)


# ---- scores and gate --------------------------------------------------------------------------

def test_proxy_scores_perfect_and_reversed():
    ok = [True, True, False, False]
    good = _frame([0.99, 0.95, 0.6, 0.5], [0.1, 0.2, 0.8, 0.9], ok)
    s = C.proxy_scores(good, 0.8, 0.5, n_boot=50).set_index("proxy")
    assert s.loc["exp(LP_min)", "auroc"] == pytest.approx(1.0)
    assert s.loc["H_max", "auroc"] == pytest.approx(1.0)
    assert s.iloc[2]["auroc"] == pytest.approx(1.0)  # the gate escalates exactly the errors
    assert s.loc["exp(LP_min)", "ece"] == pytest.approx(ece(good["p_min"], good["correct"]))
    rev = _frame([0.5, 0.6, 0.95, 0.99], [0.9, 0.8, 0.2, 0.1], ok)
    assert C.proxy_scores(rev, 0.8, 0.5, n_boot=50).loc[0, "auroc"] == pytest.approx(0.0)


def test_proxy_scores_unanswered_counts_only_in_the_with_unanswered_column():
    f = _frame([0.9, 0.9, 0.9, 0.0], [0.1, 0.1, 0.1, 0.0], [True, False, True, False],
               answered=[True, True, True, False])
    s = C.proxy_scores(f, 0.8, 0.5, n_boot=20).set_index("proxy")
    assert s.loc["exp(LP_min)", "auroc"] == pytest.approx(0.5)  # ties among answered rows
    assert s.loc["exp(LP_min)", "auroc_with_unanswered"] > 0.5  # the missing answer ranks as worst
    assert s.loc["exp(LP_min)", "n_answered"] == 3


def test_gate_split_counts_confident_errors():
    f = _frame([0.99, 0.99, 0.5, 0.95, 0.0], [0.1, 0.1, 0.1, 0.9, 0.0], [True, False, False, True, False],
               answered=[True, True, True, True, False])
    g = gate_split(f, 0.8, 0.5)
    assert g["answers"] == 5 and g["errors"] == 3
    assert g["confident_errors"] == 1  # q1 only: q2 has low p, q4 has no answer
    assert g["escalation_rate"] == pytest.approx(3 / 5)
    assert g["accuracy_if_U0"] == pytest.approx(0.5)
    assert g["accuracy_if_U1"] == pytest.approx(1 / 3)
    assert g["unanswered"] == 1


# ---- entropy estimates ------------------------------------------------------------------------

def _gen() -> Generation:
    """'so \\boxed{7}': one reasoning token and one answer token with a known 3-way distribution."""
    ln = math.log
    dist = [0.5, 0.3, 0.2]
    exact = -sum(p * ln(p) for p in dist)
    top = (("7", ln(0.5)), ("8", ln(0.3)), ("9", ln(0.2)))
    toks = [TokenLogprob("so \\boxed{", ln(0.9), 0, (("so \\boxed{", ln(0.9)),), 0.4),
            TokenLogprob("7", ln(0.5), 10, top, exact),
            TokenLogprob("}", 0.0, 11, (("}", 0.0),), 0.0)]
    return Generation("so \\boxed{7}", toks, 5, 3, "stop", 0.1, "exact")


def test_entropy_estimates_exact_when_k_covers_support_and_lower_bound_otherwise():
    g = _gen()
    full = C.entropy_estimates([g], "number", k=3)
    assert len(full) == 1 and full["token"].iloc[0] == "7"
    assert full["estimate"].iloc[0] == pytest.approx(full["exact"].iloc[0])
    one = C.entropy_estimates([g], "number", k=1)
    # top-1 (0.5) plus one residual bucket (0.5): ln 2
    assert one["estimate"].iloc[0] == pytest.approx(math.log(2))
    assert one["error"].iloc[0] < 0
    assert one["covered"].iloc[0] == pytest.approx(0.5)
    every = C.entropy_estimates([g], "number", k=1, answer_only=False)
    assert len(every) == 3 and every["is_answer"].tolist() == [False, True, False]
    assert (every["error"] <= 1e-12).all()


def test_entropy_estimates_adds_chosen_token_missing_from_top_k():
    ln = math.log
    tok = TokenLogprob("7", ln(0.1), 7, (("8", ln(0.6)), ("9", ln(0.3))), 0.9)
    g = Generation("\\boxed{7}", [TokenLogprob("\\boxed{", 0.0, 0, (), 0.0), tok, TokenLogprob("}", 0.0, 8, (), 0.0)],
                   1, 3, "stop", 0.0, "exact")
    e = C.entropy_estimates([g], "number", k=2)
    assert e["covered"].iloc[0] == pytest.approx(1.0)
    assert e["estimate"].iloc[0] == pytest.approx(-sum(p * ln(p) for p in (0.6, 0.3, 0.1)))


def test_entropy_estimates_without_exact_entropy_is_nan():
    g = _gen()
    g.tokens = [TokenLogprob(t.token, t.logprob, t.offset, t.top, None) for t in g.tokens]
    e = C.entropy_estimates([g], "number", k=3)
    assert e["exact"].isna().all() and e["estimate"].notna().all()
    with pytest.raises(ValueError):
        C.entropy_estimates([g], "number", k=0)


def test_entropy_summary_counts_gate_flips():
    g = _gen()
    tokens = pd.concat([C.entropy_estimates([g], "number", k=k) for k in (1, 3)])
    exact = tokens["exact"].iloc[0]
    tau = (math.log(2) + exact) / 2  # between the k=1 estimate and the exact value
    s = C.entropy_summary(tokens, tau).set_index("k")
    assert s.loc[1, "gate_flips"] == 1 and s.loc[3, "gate_flips"] == 0
    assert s.loc[3, "max_abs_error"] == pytest.approx(0.0, abs=1e-12)
    assert s.loc[1, "h_max_max_abs_error"] == pytest.approx(exact - math.log(2))
    # no answer token at all (a model that never boxes, issue 50): no rows, the same columns
    empty = C.entropy_summary(tokens[tokens["k"] < 0], tau)
    assert empty.empty and list(empty.set_index("k").columns)[:2] == ["tokens", "mean_abs_error"]


# ---- figures and sentences --------------------------------------------------------------------

def test_figures_build():
    import matplotlib.pyplot as plt

    f = _frame([0.99, 0.6, 0.3, 0.95], [0.1, 0.7, 1.4, 0.2], [True, False, False, True],
               answered=[True, True, True, False])
    fig = C.plot_reliability(f, 0.8, 0.5)
    assert len(fig.axes) == 4  # two panels, each with a twin axis
    plt.close(fig)
    tokens = pd.concat([C.entropy_estimates([_gen()], "number", k=k, answer_only=False) for k in (1, 3)])
    fig = C.plot_entropy_estimate(tokens, C.entropy_summary(tokens, 0.5), 0.5, k=3)
    assert len(fig.axes) == 2
    plt.close(fig)


def test_paper_labels_sit_clear_of_bars_and_points():
    """The paper's numbers are written in a strip above accuracy 1, not over the bars, points and
    intervals they used to cover (a tall, accurate top bin, as the organism's)."""
    from lase_nb.plots import touches

    rng = np.random.default_rng(1)
    p = np.concatenate([np.full(60, 0.995), rng.uniform(0.3, 0.98, 40)])
    ok = np.concatenate([np.arange(60) < 54, rng.random(40) < 0.5])
    h = np.where(p > 0.99, 0.05, 1.2 * (1 - p))
    for fig in (C.plot_reliability(_frame(p, h, ok), 0.8, 0.5),
                C.plot_reliability_by_model({"m": _frame(p, h, ok)}, 0.8, 0.5)):
        fig.canvas.draw()
        twins = [a for a in fig.axes if a.get_ylabel() == "accuracy in bin"]
        assert twins
        for ax2 in twins:
            ax = next(a for a in fig.axes if a is not ax2 and a.bbox.bounds == ax2.bbox.bounds)
            labels = [t for t in ax2.texts if t.get_text().startswith("paper")]
            assert labels
            for t in labels:
                box = t.get_window_extent()
                drawn = [*ax.patches, *ax2.lines, *ax2.collections]
                assert not any(touches(a, box) for a in drawn), t.get_text()
        plt.close(fig)


def test_scores_survive_an_empty_class():
    all_wrong = _frame([0.9, 0.8], [0.1, 0.2], [False, False])
    s2 = C.proxy_scores(all_wrong, 0.8, 0.5, n_boot=20)
    assert s2["auroc"].isna().all() and (s2["errors_answered"] == 2).all()


def _frame_by_p(p, ok) -> pd.DataFrame:
    n = len(p)
    return confidence_frame(pd.DataFrame({"problem_id": [f"q{i}" for i in range(n)], "stage": 0, "answer": "1",
                                          "p_min": p, "h_max": 1 - np.asarray(p), "correct": ok}))


def test_calibration_by_model_and_its_sentence():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.3, 1.0, 80)
    sharp = _frame_by_p(p, p > 0.65)  # errors are exactly the unsure answers
    blind = _frame_by_p(p, rng.random(80) < 0.5)
    frames = C.frames_by_model({"sharp": sharp, "blind": blind})
    t = C.calibration_by_model(frames, 0.8, 0.5, n_boot=200).set_index("model")
    assert list(t.index) == ["sharp", "blind"]
    assert t.loc["sharp", "auroc_p_min"] == pytest.approx(1.0) and t.loc["sharp", "auroc_h_max"] == pytest.approx(1.0)
    assert t.loc["blind", "auroc_p_min_lo"] < 0.5 < t.loc["blind", "auroc_p_min_hi"]
    assert t.loc["sharp", "accuracy"] == pytest.approx((p > 0.65).mean()) and t.loc["sharp", "n"] == 80
    assert t.loc["sharp", "escalation_rate"] == pytest.approx((p < 0.8).mean())
    gap = C.auroc_gap(frames, n_boot=300)
    assert gap["paired"] and gap["a"] == "sharp" and gap["lo"] > 0 and gap["p_value"] < 0.05
    s = C.describe_calibration_by_model(t.reset_index(), gap)
    assert "sharp: AUROC 1.00 [1.00, 1.00]" in s and f"blind: AUROC {t.loc['blind', 'auroc_p_min']:.2f}" in s
    assert "sharp: AUROC 1.00 [1.00, 1.00], p < 0.001: better than chance" in s
    assert "blind: AUROC" in s and "not shown to differ from chance" in s
    assert "sharp's confidence separates right from wrong answers better" in s and "paired" in s
    same = C.auroc_gap({"x": blind, "y": blind.assign(problem_id=lambda f: "z" + f["problem_id"])}, n_boot=300)
    assert not same["paired"] and same["diff"] == 0 and same["p_value"] > 0.05
    assert "do not tell the two apart" in C.describe_calibration_by_model(t.reset_index(), same)
    fig = C.plot_reliability_by_model(frames, 0.8, 0.5, t.reset_index())
    titles = [a.get_title() for a in fig.axes if a.get_title()]
    assert len(titles) == 2 and titles[0].startswith("sharp: AUROC 1.00") and "80 answers" in titles[1]
    plt.close(fig)


def test_describe_reliability_reads_the_rows():
    rows = [("[0.00, 0.90)", 10, 0.2), ("[0.90, 0.95)", 5, 0.4), ("[0.95, 0.99)", 40, 0.55), ("[0.99, 1.00]", 26, 0.46)]
    t = pd.DataFrame({"bin": [r[0] for r in rows], "count": [r[1] for r in rows], "accuracy": [r[2] for r in rows]})
    s = C.describe_reliability(t)
    assert "most crowded bin is [0.95, 0.99), with 40 of 81" in s
    assert "[0.99, 1.00], is right on 46% of its 26 answers, below the bin below it" in s
    assert "dips 1 time" in s and "[0.95, 0.99) to [0.99, 1.00], is -9 points" in s
    assert "no dip is larger than chance" in s and "fails" not in s  # 12 of 26 vs 22 of 40 (issue 51)
    big = t.assign(count=[10, 5, 400, 260], accuracy=[0.2, 0.4, 0.9, 0.5])
    assert "a real dip, so Assumption 3.3, read bin by bin, fails here" in C.describe_reliability(big)
    # a strong model on a few problems (issue 50): two bins, both always right
    two = pd.DataFrame({"bin": ["[0.5, 0.8)", "[0.99, 1]"], "count": [2, 8], "accuracy": [1.0, 1.0]})
    s = C.describe_reliability(two)
    assert "level with the bin below it" in s and "100% in every bin" in s and "nor does it rise" in s
    assert "(10 answers: too few to take as support)" in s and "climbs" not in s
    rising = two.assign(count=[20, 80], accuracy=[0.5, 0.9])
    assert C.describe_reliability(rising).endswith("never falls from a bin to the next, as Assumption 3.3 asks.")
    one = pd.DataFrame({"bin": ["[0.5, 0.8)"], "count": [12], "accuracy": [0.0]})  # a constant model
    assert "every answer in one bin" in C.describe_reliability(one)


def test_proportions_test_by_hand():
    from lase_nb.stats import proportions_test

    t = proportions_test(6, 13, 16, 29)  # 46% of 13 vs 55% of 29
    assert t["diff"] == pytest.approx(6 / 13 - 16 / 29) and t["lo"] < 0 < t["hi"] and not t["differs"]
    assert t["p_value"] == pytest.approx(0.742, abs=0.01)
    far = proportions_test(90, 100, 50, 100)
    assert far["differs"] and far["lo"] > 0 and far["p_value"] < 1e-6
    with pytest.raises(ValueError, match="at least one trial"):
        proportions_test(0, 0, 1, 2)


def test_frames_by_model_reads_runs_or_stage_tables():
    st = pd.DataFrame({"problem_id": ["a", "a", "b", "b"], "stage": [0, 1, 0, 1], "answer": ["1", "2", None, "3"],
                       "p_min": [0.9, 0.5, np.nan, 0.7], "h_max": [0.1, 0.2, np.nan, 0.3],
                       "correct": [True, False, True, False]})
    f = C.frames_by_model({"m": {"lase-full": st}})["m"]
    assert f["stage"].tolist() == [0, 0] and f["answered"].tolist() == [True, False]
    assert f["correct"].tolist() == [True, False]  # no answer counts as wrong
    with pytest.raises(Exception, match="full-chain"):
        C.frames_by_model({"m": {"single": st}})


def test_auroc_sentence_scales_with_the_data():
    assert C.auroc_sentence(0.63, 0.50, 0.73, 0.054, 30, 50).endswith("not shown to differ from chance")
    assert C.auroc_sentence(0.80, 0.70, 0.90, 0.001, 30, 50).endswith("better than chance")
    assert "too few problems to say (3 wrong, 9 right answers)" in C.auroc_sentence(0.9, 0.6, 1.0, 0.01, 3, 9)
    assert "no AUROC" in C.auroc_sentence(float("nan"), float("nan"), float("nan"), float("nan"), 0, 12)


def test_auroc_gap_needs_two_studies():
    f = _frame_by_p(np.linspace(0.3, 1.0, 20), np.linspace(0.3, 1.0, 20) > 0.6)
    assert C.auroc_gap({"only": f}) is None
    assert C.describe_calibration_by_model(C.calibration_by_model({"only": f}, 0.8, 0.5, n_boot=50), None).startswith("**AUROC")


def test_describe_answers_and_gate_by_hand():
    p = np.array([0.99, 0.95, 0.5, 0.3, np.nan])
    f = _frame_by_p(p, np.array([True, False, True, False, False]))
    f["answered"] = ~np.isnan(p)
    s = C.describe_answers(f)
    assert s.startswith("5 first answers, 40% right") and "1 boxed no answer of their own." in s
    f["boxed"] = f["answered"] & (p != 0.5)  # one answer the extraction step supplied (issue 51: 02 and 06 agree)
    assert "2 boxed no answer of their own (the extraction step found one in 1, 1 have none)" in C.describe_answers(f)
    # an answer without log-probabilities (issue 50): said, and left out of the medians (which read nan)
    h = f.copy()
    h.loc[0, "p_min"] = np.nan
    s = C.describe_answers(h)
    assert "1 answered without log-probabilities" in s and "nan" not in s
    assert "Median exp(LP_min): 0.500 on right and 0.625 on wrong" in s
    g = C.describe_gate(gate_split(f, 0.8, 0.5), 0.8, 0.5)
    # escalated: 0.5, 0.3, NaN -> 1 of 3 right; accepted: 0.99, 0.95 -> 1 of 2 right; 1 of 3 errors passes
    assert "escalates 60% of 5 answers" in g and "right 33% of the time, less often than the accepted ones (50%)" in g
    assert "1 of the 3 wrong answers (33%)" in g


def test_describe_entropy_says_where_the_tail_matters_from_the_tokens():
    """Issue 56: the section's verdict on the top-k tail is printed from the tokens it measured
    (the gap on hesitant tokens against the rest, how many answer tokens hesitate), not asserted."""
    g = _gen()  # the answer token "7" has exact entropy 1.03 nats; the others 0.4 and 0.0
    tokens = pd.concat([C.entropy_estimates([g], "number", k=k, answer_only=False) for k in (1, 3)])
    summary = C.entropy_summary(tokens[tokens["is_answer"]], 0.5)
    text = C.describe_entropy(summary, tokens, 3, 0.5)
    assert "on the 1 tokens where the model hesitates (exact entropy above 0.5 nats) the mean gap is 0 nats" in text
    assert "on the other 2 0 " in text or "on the other 2 0." in text or "on the other 2 0;" in text
    assert "Here 1 of 1 answer tokens hesitate, too few to say how often answers do" in text
    assert "rarely" not in text
    calm = C.describe_entropy(summary, tokens, 3, 2.0)
    assert "none of them has an exact entropy above 2 nats" in calm and "Here 0 of 1 answer tokens" in calm
