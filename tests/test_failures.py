"""Failure-mode selectors on a hand-built full-chain run: confident errors, revision outcomes,
the execution-failure heuristic, escalation and cost by level, unboxed answers, rendering."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb import reference  # noqa: E402
from lase_nb.replay import chains_from_stages  # noqa: E402
from lase_nb.chapters import failures as F  # noqa: E402
from lase_nb.confidence import confidence_frame  # noqa: E402
from tests.synthetic import model  # noqa: E402
from lase_nb.chapters import failures  # noqa: E402

SUP = {1: "devil", 2: "collaborator"}
# problem -> per stage (answer, correct, p_min, h_max); gold answers below
CHAINS = {
    "p1": [("3", False, 0.99, 0.05), ("4", True, 0.9, 0.1), ("4", True, 0.95, 0.1)],     # confident error, fixed
    "p2": [("5", False, 0.6, 0.9), ("5", False, 0.7, 0.8), (None, False, None, None)],   # same wrong, then unboxed
    "p3": [("7", True, 0.99, 0.01), ("8", False, 0.9, 0.2), ("7", True, 0.99, 0.01)],    # right, broke, right
    "p4": [("2", False, 0.95, 0.3), ("6", False, 0.9, 0.3), ("9", False, 0.9, 0.3)],     # confident error, new wrong
}
GOLD = {"p1": "4", "p2": "10", "p3": "7", "p4": "12"}
LEVEL = {"p1": 1, "p2": 2, "p3": 1, "p4": 2}
NOTES = {("p1", 1): "The sum is wrong: 1 + 3 is 4.", ("p1", 2): "Looks fine.",
         ("p2", 1): "The answer should be 10, not 5.", ("p2", 2): "Try again carefully.",
         ("p3", 1): "Step one has a mistake.", ("p3", 2): "Good.",
         ("p4", 1): "There is an error in step 2.", ("p4", 2): "Count 112 items."}


def _run() -> SimpleNamespace:
    stages, calls = [], []
    for pid, chain in CHAINS.items():
        for t, (ans, ok, p, h) in enumerate(chain):
            stages.append({"problem_id": pid, "strategy": "lase", "stage": t, "supporter": SUP.get(t),
                           "answer": ans, "correct": ok, "p_min": p, "h_max": h, "uncertain": False,
                           "prompt_tokens": 100 * (t + 1), "completion_tokens": 20 * (t + 1)})
            if t:
                calls.append({"problem_id": pid, "role": SUP[t], "stage": t, "text": NOTES[(pid, t)],
                              "answer": None, "leaked": int(pid == "p4" and t == 2), "finish_reason": "stop",
                              "used": False})
            text = f"work <b>$x</b> \\boxed{{{ans}}}" if ans else "rambling " * 30
            calls.append({"problem_id": pid, "role": "leader", "stage": t, "text": text, "answer": ans,
                          "p_min": p, "h_max": h, "leaked": 0,
                          "finish_reason": "stop" if ans else "length", "used": t == 0})
    problems = pd.DataFrame({"problem_id": list(CHAINS), "gold": [GOLD[k] for k in CHAINS],
                             "level": [LEVEL[k] for k in CHAINS],
                             "correct": [c[0][1] for c in CHAINS.values()]})
    return SimpleNamespace(path="fake", manifest={"dataset": "arith", "n": 4, "seed": 0},
                           stages=pd.DataFrame(stages), calls=pd.DataFrame(calls), problems=problems)


def test_flags_error_word_list():
    assert F.flags_error("This step is INCORRECT.")
    assert F.flags_error("It should be 12.")
    assert not F.flags_error("Looks fine to me.")
    assert not F.flags_error(None) and not F.flags_error("")


def test_mentions_whole_numbers_only():
    assert F.mentions("so the total is 12.", "12")
    assert not F.mentions("count 112 items", "12")
    assert not F.mentions("it is 12.5", "12")
    assert not F.mentions(None, "12") and not F.mentions("12", None)


def test_confident_errors_and_what_the_chain_would_have_done():
    ce = F.confident_errors(_run().stages, 0.8, 0.5)
    assert list(ce["problem_id"]) == ["p1", "p4"]  # sorted by p_min, most confident first
    assert ce.set_index("problem_id").loc["p1", "later_right"]
    assert ce.set_index("problem_id").loc["p1", "final_correct"]
    assert not ce.set_index("problem_id").loc["p4", "later_right"]
    assert F.confident_errors(_run().stages, 0.999, 0.5).empty  # a stricter gate escalates both


def test_revision_outcomes_labels():
    o = F.revision_outcomes(_run()).set_index(["problem_id", "stage"])["outcome"].to_dict()
    assert o == {("p1", 1): "fixed", ("p1", 2): "kept right",
                 ("p2", 1): "same wrong answer", ("p2", 2): "no boxed answer",
                 ("p3", 1): "broke: new wrong answer", ("p3", 2): "fixed",
                 ("p4", 1): "new wrong answer", ("p4", 2): "new wrong answer"}


def test_revision_outcomes_note_columns():
    o = F.revision_outcomes(_run()).set_index(["problem_id", "stage"])
    assert o.loc[("p2", 1), "note_has_gold"]  # "should be 10"
    assert not o.loc[("p4", 2), "note_has_gold"]  # "112" is not 12
    assert o.loc[("p1", 1), "note_flags_error"] and not o.loc[("p1", 2), "note_flags_error"]
    assert o.loc[("p4", 2), "leaked"] == 1
    assert o.loc[("p2", 2), "finish_reason"] == "length"


def test_gold_signals_exclude_numbers_already_in_question_or_attempt():
    run = _run()
    o = F.revision_outcomes(run).set_index(["problem_id", "stage"])
    assert o.loc[("p1", 1), "revision_has_gold"]  # the revision boxed 4, the gold
    assert not o.loc[("p2", 2), "revision_has_gold"]  # rambling, no number
    assert o.loc[("p1", 1), "note_has_gold"]  # "1 + 3 is 4": the attempt (boxed 3) had no 4
    asked = {"p2": SimpleNamespace(question="Add 10 and 0.")}  # the gold 10 is in the question
    o2 = F.revision_outcomes(run, asked).set_index(["problem_id", "stage"])
    assert not o2.loc[("p2", 1), "note_has_gold"]
    run.calls.loc[(run.calls["problem_id"] == "p2") & (run.calls["role"] == "leader") & (run.calls["stage"] == 0),
                  "text"] = "maybe 10? \\boxed{5}"  # the attempt already said 10
    assert not F.revision_outcomes(run).set_index(["problem_id", "stage"]).loc[("p2", 1), "note_has_gold"]


def test_execution_failures_heuristic():
    o = F.revision_outcomes(_run())
    strict = F.execution_failures(o)
    assert set(zip(strict["problem_id"], strict["stage"])) == {("p2", 1), ("p4", 1)}
    loose = F.execution_failures(o, require_flag=False)
    assert set(zip(loose["problem_id"], loose["stage"])) == {("p2", 1), ("p2", 2), ("p4", 1), ("p4", 2)}
    counts = F.outcome_counts(o)
    assert counts["count"].sum() == len(o)


def test_escalation_by_level():
    first = confidence_frame(_run(), stage=0)
    e = F.escalation_by_level(first, 0.8, 0.5).set_index("level")
    assert list(e.index) == ["1", "2", "all"]
    assert e.loc["1", "escalation_rate"] == 0.0 and e.loc["1", "accuracy"] == 0.5
    assert e.loc["2", "escalation_rate"] == 0.5  # p2 escalates, p4 does not
    assert e.loc["all", "n"] == 4
    assert e.loc["2", "esc_lo"] < 0.5 < e.loc["2", "esc_hi"]
    flat = F.escalation_by_level(first.assign(level=np.nan), 0.8, 0.5)  # a study without levels (GSM8K)
    assert flat["level"].tolist() == ["all"] and flat["n"].tolist() == [4]
    run = _run()
    run.problems["level"] = None
    cost = F.cost_by_level(chains_from_stages(run.stages), run.problems.set_index("problem_id")["level"], 0.8, 0.5)
    assert cost["level"].tolist() == ["all"]
    text = F.describe_escalation(flat, cost, F.paper_escalation(0.8, sweep=False))
    assert "This study's problems carry no difficulty levels, so escalation by difficulty is not shown." in text


def test_cost_by_level_matches_replay_by_hand():
    run = _run()
    chains = chains_from_stages(run.stages)
    c = F.cost_by_level(chains, run.problems.set_index("problem_id")["level"], 0.8, 0.5).set_index("level")
    # level 2: p2 escalates; it is uncertain at stages 0-1 and unanswered at 2, so it runs to the end
    # (360 total tokens); p4 stops at stage 0 (120). Solo: 120 each.
    assert c.loc["2", "lase_tokens"] == pytest.approx((360 + 120) / 2)
    assert c.loc["2", "multiplier"] == pytest.approx(240 / 120)
    assert c.loc["1", "multiplier"] == pytest.approx(1.0)
    assert c.loc["all", "escalation_rate"] == pytest.approx(0.25)


def test_paper_escalation_reads_reference():
    p = F.paper_escalation(0.9)
    sw = reference.THRESHOLD_SWEEP
    assert p["tau_lp"] == 0.9
    assert p["escalation_rate"] == pytest.approx(sw.loc[sw["tau_lp"] == 0.9, "escalation_rate"].iloc[0] / 100)
    assert p["multiplier_llama3_8b"] == 4.6  # the paper's stated figure (Appendix E.2)
    assert p["multiplier_llama3_8b"] > p["multiplier_gpt41mini"]


def test_unparsed_by_stage():
    u = F.unparsed_by_stage(_run()).set_index("stage")
    assert u.loc[0, "unparsed"] == 0
    assert u.loc[2, "unparsed"] == 1 and u.loc[2, "truncated"] == 1 and u.loc[2, "stopped"] == 0
    assert u.loc[2, "unparsed_rate"] == pytest.approx(0.25)


def test_render_exchange_escapes_and_clips():
    run = _run()
    h = F.render_exchange(run, "p2", 1, SimpleNamespace(question="Q <here>", gold="10"), max_chars=12)
    assert "&lt;b&gt;" in h and "<b>$x" not in h  # model text is escaped
    assert "Q &lt;here&gt;" in h and "gold answer: 10" in h
    assert "more characters]" in h  # clipped
    t = F.render_exchange(run, "p2", 1, fmt="text", max_chars=1000)
    assert "The answer should be 10, not 5." in t and "Stage 1 · devil's advocate" in t
    with pytest.raises(ValueError):
        F.render_exchange(run, "p2", 1, fmt="pdf")
    a = F.render_answer(run, "p2", 2, fmt="text")
    assert "none boxed" in a and "finish reason: length" in a


def test_figures_and_sentences():
    import matplotlib.pyplot as plt

    run = _run()
    first = confidence_frame(run, stage=0)
    o = F.revision_outcomes(run)
    esc = F.escalation_by_level(first, 0.8, 0.5)
    cost = F.cost_by_level(chains_from_stages(run.stages), run.problems.set_index("problem_id")["level"], 0.8, 0.5)
    unp = F.unparsed_by_stage(run)
    for fig in (F.plot_confident_errors(first, 0.8, 0.5), F.plot_revision_outcomes(o),
                F.plot_escalation(esc, cost, F.paper_escalation(0.8), 0.8, 0.5), F.plot_unparsed(unp, ["devil"])):
        assert fig.axes
        plt.close(fig)
    text = F.describe_revisions(o, F.execution_failures(o))
    assert text.startswith("**6 revisions started from a wrong or missing answer; 2 of them (33%)")
    assert "2 of those" in text
    revisions = unp[unp["stage"] > 0]
    assert revisions["truncated"].sum() == 1 and revisions["looped"].sum() == 0


def test_load_runs_requires_named_runs(tmp_path):
    from lase_nb.errors import DataError
    from lase_nb.runs import load_runs

    (tmp_path / "single").mkdir()  # unfinished: no manifest
    assert load_runs(tmp_path) == {}
    with pytest.raises(DataError, match="lase-full"):
        load_runs(tmp_path, require=["lase-full"])
    with pytest.raises(DataError, match="lase-full"):  # "lase" is read from the full-chain folder
        load_runs(tmp_path, require=["lase"])
    with pytest.raises(DataError):
        load_runs(tmp_path / "missing")


def test_confident_errors_figure_spreads_the_corner_and_counts_regions():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame({"problem_id": [f"p{i}" for i in range(6)], "stage": 0,
                          "answer": ["1", "2", "3", "4", "5", None],
                          "answered": [True] * 5 + [False],
                          "p_min": [0.9999, 0.999, 0.99, 0.5, 0.95, np.nan],
                          "h_max": [0.0, 0.01, 0.05, 1.5, 0.2, np.nan],
                          "correct": [True, False, True, False, False, False], "level": 1})
    counts = F.gate_counts(frame, 0.8, 0.5)
    assert counts.loc["accepted (U = 0)"].tolist() == [2, 2] and counts.loc["escalated (U = 1)"].tolist() == [0, 1]
    x, y = F.confidence_coords(frame[frame["answered"]])
    assert x[0] == pytest.approx(1e-4) and x[1] == pytest.approx(1e-3) and y[0] == pytest.approx(1e-3)
    fig = F.plot_confident_errors(frame, 0.8, 0.5)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and ax.get_xlim()[0] > ax.get_xlim()[1]
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "accepted: 2 right, 2 wrong" in texts and "+1 without a boxed answer" in ax.get_xlabel()
    plt.close(fig)


def test_jitter_never_carries_a_point_across_the_gate():
    """Issue 51: confident errors (accepted) sat in the shaded escalate region after jitter."""
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0.79, 0.81, 200), rng.uniform(0.3, 1.0, 100)])
    h = np.concatenate([rng.uniform(0.45, 0.55, 200), rng.uniform(0.0, 2.0, 100)])
    frame = pd.DataFrame({"problem_id": [f"p{i}" for i in range(len(p))], "stage": 0, "answer": "1", "answered": True,
                          "p_min": p, "h_max": h, "correct": rng.random(len(p)) < 0.5, "level": 1})
    fig = F.plot_confident_errors(frame, 0.8, 0.5)
    ax = fig.axes[0]
    accepted = next(c for c in ax.collections if c.get_label().startswith("confident error"))
    xy = accepted.get_offsets()
    assert len(xy) and (xy[:, 0] < 1 - 0.8).all() and (xy[:, 1] <= 0.5).all()
    escalated = next(c for c in ax.collections if c.get_label().startswith("wrong, escalated")).get_offsets()
    assert ((escalated[:, 0] > 1 - 0.8) | (escalated[:, 1] > 0.5)).all()
    plt.close(fig)


def test_unparsed_counts_loops_and_extracted_answers():
    calls = pd.DataFrame([
        {"problem_id": "p1", "role": "leader", "stage": 0, "answer": "4", "finish_reason": "stop"},
        {"problem_id": "p1", "role": "leader", "stage": 1, "answer": None, "finish_reason": "repeat"},
        {"problem_id": "p1", "role": "extract", "stage": 1, "answer": "4", "finish_reason": "stop"},
        {"problem_id": "p2", "role": "leader", "stage": 0, "answer": "5", "finish_reason": "stop"},
        {"problem_id": "p2", "role": "leader", "stage": 1, "answer": None, "finish_reason": "length"},
    ])
    from types import SimpleNamespace
    unp = F.unparsed_by_stage(SimpleNamespace(calls=calls)).set_index("stage")  # it reads only the calls
    assert unp.loc[1, "looped"] == 1 and unp.loc[1, "truncated"] == 1 and unp.loc[1, "stopped"] == 0
    assert unp.loc[1, "extracted"] == 1 and unp.loc[0, "unparsed"] == 0


def test_describe_escalation_with_one_level_and_with_several():
    from lase_nb.chapters.failures import describe_escalation
    paper = {"escalation_min": 0.2, "escalation_max": 0.4, "multiplier_gpt41mini": 1.8, "multiplier_llama3_8b": 4.6}
    cost = pd.DataFrame({"level": ["all"], "multiplier": [2.0], "lase_tokens": [300.0], "solo_tokens": [100.0]})
    one = pd.DataFrame({"level": [1, "all"], "accuracy": [0.45, 0.45], "escalation_rate": [0.2, 0.2]})
    text = describe_escalation(one, cost, paper)
    assert "one difficulty level" in text and "from 45% at level 1 to" not in text
    assert "escalates 20% of the problems" in text and "2.0x the solo tokens" in text
    two = pd.DataFrame({"level": [1, 2, "all"], "accuracy": [0.9, 0.5, 0.7], "escalation_rate": [0.1, 0.4, 0.25]})
    assert "escalation rises level by level" in describe_escalation(two, cost, paper)
    bump = pd.DataFrame({"level": [1, 2, 3, "all"], "accuracy": [0.9, 0.7, 0.6, 0.7],
                         "escalation_rate": [0.1, 0.46, 0.36, 0.3]})
    text = describe_escalation(bump, cost, paper)
    assert "does not rise steadily with difficulty" in text and "level 2 46%, level 3 36%" in text
    # the organism's recording: level 2 below level 1, level 3 above (issue 43: never "higher on the harder levels")
    dip = bump.assign(escalation_rate=[0.54, 0.42, 0.6, 0.52])
    text = describe_escalation(dip, cost, paper)
    assert "harder levels" not in text and "does not rise steadily" in text and "level 2 42%" in text
    flat = bump.assign(escalation_rate=[0.3, 0.2, 0.1, 0.2])
    assert "does not rise with difficulty here" in describe_escalation(flat, cost, paper)


def test_plot_escalation_draws_a_single_level_once():
    import matplotlib.pyplot as plt
    from lase_nb.chapters.failures import plot_escalation
    paper = {"escalation_min": 0.2, "escalation_max": 0.4, "multiplier_gpt41mini": 1.8, "multiplier_llama3_8b": 4.6}
    esc = pd.DataFrame({"level": [1, "all"], "accuracy": [0.45, 0.45], "acc_lo": [0.3, 0.3], "acc_hi": [0.6, 0.6],
                        "escalation_rate": [0.2, 0.2], "esc_lo": [0.1, 0.1], "esc_hi": [0.3, 0.3]})
    cost = pd.DataFrame({"level": [1, "all"], "multiplier": [4.8, 4.8], "lase_tokens": [300.0, 300.0],
                         "solo_tokens": [100.0, 100.0]})
    fig = plot_escalation(esc, cost, paper, 0.8, 0.5, model="base")
    # one level: its bars once, named by what they measure, not a "by level" axis of one level
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["solo accuracy", "escalation\nrate P(U=1)"]
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == ["this run"]
    assert "only level 1 occurs" in fig._suptitle.get_text() and fig._suptitle.get_text().startswith("base: ")
    from lase_nb.plots import style
    bars = [b for c in fig.axes[1].containers for b in c.patches]
    assert bars and all(matplotlib.colors.same_color(b.get_facecolor()[:3], style("lase")["color"]) for b in bars)
    plt.close(fig)


def test_level_view_is_escalation_and_cost_by_level_of_one_run():
    from pathlib import Path

    from lase_nb.replay import chains_from_stages
    from lase_nb.chapters import failures
    from lase_nb.runs import load_runs

    run = load_runs(Path(__file__).resolve().parents[1] / "data" / "traces" / "arith-organism-tell", ["lase"])["lase"]
    esc, cost = failures.level_view(run, 0.8, 0.5)
    levels = run.problems.set_index(run.problems["problem_id"].astype(str))["level"]
    pd.testing.assert_frame_equal(esc, failures.escalation_by_level(confidence_frame(run, stage=0), 0.8, 0.5))
    pd.testing.assert_frame_equal(cost, failures.cost_by_level(chains_from_stages(run.stages), levels, 0.8, 0.5))
    assert esc["level"].tolist() == ["1", "2", "3", "all"] and cost["level"].tolist() == ["1", "2", "3", "all"]


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
    assert "escalates 70%" in s and "escalates 10%" in s and "weaker minus stronger +60 points" in s


def test_describe_escalation_by_model_is_honest():
    weak_keeps = failures.escalation_by_model({"a": model(30, 10), "b": model(80, 50, esc_right=40)}, 0.8, 0.5)
    s = failures.describe_escalation_by_model(weak_keeps)
    assert "**the weaker model escalates less**" in s and "a (leader accuracy 30%)" in s
    close = failures.escalation_by_model({"a": model(3, 5, n=10), "b": model(6, 4, n=10, esc_right=2)}, 0.8, 0.5)
    s = failures.describe_escalation_by_model(close)
    assert "cannot tell whether the weaker model escalates more" in s and "Fisher's exact p = 1.000" in s
    assert "**the weaker model escalates" not in s  # issue 51: no verdict word on overlapping samples
    same = failures.escalation_by_model({"a": model(5, 5, n=10), "b": model(5, 2, n=10)}, 0.8, 0.5)
    assert "equally accurate" in failures.describe_escalation_by_model(same)
    assert "two" in failures.describe_escalation_by_model(same.iloc[:1])


def _h_run():
    """Two arith problems through devil, collaborator, expert: on the first the devil names the right
    step and the revision is still wrong; on the second the expert turns a right answer wrong."""
    import random

    from lase_nb.datasets import arithmetic_problems
    from lase_nb.organism.recipe import devil_note, gold_steps, label_attempt, slipped_attempt, solution_text

    probs = [p for p in arithmetic_problems(40, seed=5, levels=[2], split="eval")]
    rng = random.Random(0)
    p1, wrong = next((p, w) for p in probs if (w := slipped_attempt(p, rng)))
    p2 = next(p for p in probs if p.id != p1.id)
    right2 = solution_text(gold_steps(p2))
    note1 = devil_note(p1, label_attempt(p1, wrong), wrong)
    w_ans = str(label_attempt(p1, wrong).steps[-1].c)
    sup = {1: "devil", 2: "collaborator", 3: "expert"}
    stages, calls = [], []
    chain = {p1.id: [(wrong, w_ans, False)] * 4,
             p2.id: [(right2, p2.gold, True)] * 3 + [("oops \\boxed{1}", "1", p2.gold == "1")]}
    notes = {(p1.id, 1): note1, (p1.id, 2): "use the method", (p1.id, 3): "the concept",
             (p2.id, 1): "fine", (p2.id, 2): "fine", (p2.id, 3): "Think again about the concept at step 1."}
    for pid, rows in chain.items():
        for t, (text, ans, ok) in enumerate(rows):
            stages.append({"problem_id": pid, "stage": t, "supporter": sup.get(t), "answer": ans, "correct": ok})
            calls.append({"problem_id": pid, "role": "leader", "stage": t, "text": text, "answer": ans,
                          "leaked": 0, "finish_reason": "stop"})
            if t:
                calls.append({"problem_id": pid, "role": sup[t], "stage": t, "text": notes[(pid, t)],
                              "answer": None, "leaked": 0, "finish_reason": "stop"})
    run = SimpleNamespace(path="fake", stages=pd.DataFrame(stages), calls=pd.DataFrame(calls),
                          problems=pd.DataFrame({"problem_id": [p1.id, p2.id], "gold": [p1.gold, p2.gold]}))
    return run, {p1.id: p1, p2.id: p2}, note1


def test_appendix_h_cases_by_rule():
    run, problems, note1 = _h_run()
    cases = F.appendix_h_cases(run, problems)
    crit = cases[cases["kind"] == "right critique, failed execution"]
    assert len(crit) == 1 and crit["stage"].item() == 1 and crit["named"].item() == crit["departure"].item()
    undo = cases[cases["kind"] == "expert undoes a right answer"]
    assert len(undo) == 1 and undo["stage"].item() == 3 and not undo["fixed_earlier"].item()
    assert set(cases["kind"]) <= set(F.APPENDIX_H_RULES)


def test_describe_separation_reads_the_numbers():
    frame = pd.DataFrame({"p_min": [0.99, 0.98, 0.97] * 4 + [0.3, 0.4, 0.5] * 4, "correct": [True] * 12 + [False] * 12,
                          "answered": True})
    text = F.describe_separation("m", frame)
    assert "AUROC of exp(LP_min) for errors 1.00" in text and "sees its errors" in text
    # issue 56: separation on average says nothing about which level escalates more
    assert "does not make a level where it fails more often escalate more often" in text
    assert "so a level where it fails more often escalates more often" not in text
    frame["correct"] = [True, False] * 12
    frame["p_min"] = np.repeat([0.9, 0.8, 0.7, 0.6], 6)
    assert "cannot be shown" in F.describe_separation("m", frame)


def test_figure_legends_list_only_what_occurs():
    """A legend entry for a category with no data is dropped; a panel with one category says so in
    its title instead of drawing a one-entry legend."""
    import matplotlib.pyplot as plt

    o = pd.DataFrame({"stage": [1, 1, 2, 2], "supporter": ["devil", "devil", "expert", "expert"],
                      "prev_correct": [False, False, True, True],
                      "outcome": ["fixed", "same wrong answer", "kept right", "kept right"]})
    fig = F.plot_revision_outcomes(o)
    wrong, right = fig.axes
    assert [t.get_text() for t in wrong.get_legend().get_texts()] == ["fixed", "same wrong answer"]
    assert right.get_legend() is None and 'only "kept right" occurs' in right.get_title()
    plt.close(fig)
    unp = pd.DataFrame({"stage": [0, 1], "answers": [10, 10], "unparsed": [1, 6], "unparsed_rate": [0.1, 0.6],
                        "ci_lo": [0.02, 0.3], "ci_hi": [0.4, 0.85], "truncated": [0, 0], "looped": [1, 4],
                        "stopped": [0, 2], "extracted": [0, 0]})
    fig = F.plot_unparsed(unp, ["devil"])
    shown = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "ran out of tokens (max_tokens)" not in shown and "answer recovered by the extraction step" not in shown
    assert {"stopped as a verbatim loop", "stopped without a box"} <= set(shown)
    fig.canvas.draw()  # the legend lies below the axis label, not over it
    assert fig.legends[0].get_window_extent().y1 <= fig.axes[0].xaxis.label.get_window_extent().y0
    plt.close(fig)


def test_escalation_figure_shows_the_paper_band_through_the_bars_and_names_a_lone_level():
    import matplotlib.pyplot as plt

    paper = {"escalation_min": 0.2, "escalation_max": 0.4, "multiplier_gpt41mini": 1.8, "multiplier_llama3_8b": 4.6}
    esc = pd.DataFrame({"level": [1, "all"], "accuracy": [0.45, 0.45], "acc_lo": [0.3, 0.3], "acc_hi": [0.6, 0.6],
                        "escalation_rate": [0.2, 0.2], "esc_lo": [0.1, 0.1], "esc_hi": [0.3, 0.3]})
    cost = pd.DataFrame({"level": [1, "all"], "multiplier": [4.8, 4.8], "lase_tokens": [300.0, 300.0],
                         "solo_tokens": [100.0, 100.0]})
    fig = F.plot_escalation(esc, cost, paper, 0.8, 0.5)
    ax = fig.axes[0]
    assert "only level 1 occurs" in fig._suptitle.get_text()
    bars = [b for c in ax.containers if hasattr(c, "patches") for b in c.patches]
    band = next(p for p in ax.patches if p.get_label().startswith("paper"))
    assert bars and all(b.get_alpha() < 1 and b.get_zorder() > band.get_zorder() for b in bars)
    edges = [c for c in ax.collections if c.get_zorder() > bars[0].get_zorder()
             and sorted(round(p.vertices[0, 1], 6) for p in c.get_paths()) == [0.2, 0.4]]
    assert edges, "the band's edges are drawn over the bars"
    plt.close(fig)


def _why(**over):
    base = {"first_answers": 200, "auroc": 0.8, "auroc_lo": 0.74, "auroc_hi": 0.86, "auroc_p": 3e-13, "separates": True,
            "located": 80, "named": 44, "named_fixed": 6, "named_still_wrong": 38, "notes_on_wrong": 250,
            "notes_stating": 2, "test": {"n": 600, "b": 27, "c": 31, "diff": -4 / 600, "diff_lo": -0.03,
                                         "diff_hi": 0.018, "p_value": 0.69, "claimed": False},
            "test_source": "the held-out gated run", "examples": {}}
    return {**base, **over}


def test_why_no_gain_is_said_step_by_step_and_only_where_each_step_holds():
    text = failures.describe_why_no_gain(_why(), "the organism")
    assert "1. **The gate separates**: the AUROC of exp(LP_min) for the leader's wrong first answers is 0.80 [0.74, 0.86]" in text
    assert "2. **The notes name the failing step in 44 of 80, 55% [44%, 65%] and keep the rule**: on 80 wrong" in text
    assert "names that step in 44; 2 of the 250 notes on wrong attempts (all three supporters, every stage) state the answer." in text
    assert "names the failing step in 44 of 80, 55% [44%, 65%] located wrong answers" in text  # issue 51: no bare "point"
    assert "3. **The leader does not act on the pointer**: after a note that names the right step the revision fixes " \
           "the answer 6 times and stays wrong 38 times." in text
    assert "gated LASE fixes 27 answers and breaks 31: -0.7 points [-3.0, +1.8], McNemar p = 0.69, not claimed" in text
    assert "the leader cannot act on the pointer**" in text
    weak = failures.describe_why_no_gain(_why(separates=False, named=10, notes_stating=40), "x")
    assert "does not detectably separate" in weak and "name the failing step in 10 of 80, 12% [" in weak
    assert "break the rule" in weak
    assert "the chain breaks earlier" in weak and "cannot act on the pointer**" not in weak
    won = failures.describe_why_no_gain(_why(test={**_why()["test"], "claimed": True}), "y")
    assert "escalation pays" in won
    assert "preregistered test" not in failures.describe_why_no_gain(_why(test=None), "z")


def test_why_no_gain_on_the_pointing_organisms_recordings():
    """Issue 37's three numbers, from the committed recordings: the gate separates (AUROC), the notes
    point and keep the rule, and the preregistered test's fixes and breaks cancel."""
    from pathlib import Path

    from lase_nb.organism import preregistration
    from lase_nb.runs import load_runs, problems_from_manifest

    folder = Path(__file__).resolve().parents[1] / "data" / "traces" / "arith-organism-point"
    runs = load_runs(folder, ["lase", "lase-large"])
    probs = problems_from_manifest(runs["lase"].manifest)
    w = failures.why_no_gain(runs["lase"], probs, preregistration.load(), runs["lase-large"])
    assert w["separates"] and w["auroc_lo"] > 0.5 and w["first_answers"] == 200
    assert w["located"] >= w["named"] > w["located"] / 2 and w["named_fixed"] < w["named_still_wrong"]
    assert w["notes_stating"] <= 0.05 * w["notes_on_wrong"]
    t = w["test"]
    assert (t["n"], t["b"], t["c"], t["claimed"]) == (600, 27, 31, False)
    fixed, wrong = w["examples"].values()
    out = failures.revision_outcomes(runs["lase"], probs).set_index(["problem_id", "stage"])
    assert out.loc[fixed, "correct"] and not out.loc[wrong, "correct"]
    assert not failures.why_no_gain(runs["lase"], probs)["test"]
    # the AUROC interval is chapter 07's (and chapter 02's), whatever the paired tests resample
    from lase_nb.chapters import claims
    from lase_nb.confidence import confidence_frame

    cal = claims.calibration_claim(confidence_frame(runs["lase"], stage=0))
    assert (w["auroc"], w["auroc_lo"], w["auroc_hi"]) == (cal["auroc"], cal["lo"], cal["hi"])


def test_the_paper_sweep_is_left_out_of_chapter_06_when_asked():
    """Table 5 is shown in chapter 05 only: without the sweep, chapter 06's escalation figure has no
    band and its sentence no sweep; the cost references stay."""
    import matplotlib.pyplot as plt

    costs = F.paper_escalation(0.8, sweep=False)
    assert set(costs) == {"multiplier_gpt41mini", "multiplier_llama3_8b"}
    assert F.paper_escalation(0.8, sweep=True).items() >= costs.items()
    cost = pd.DataFrame({"level": [1, "all"], "multiplier": [4.8, 4.8], "lase_tokens": [300.0, 300.0],
                         "solo_tokens": [100.0, 100.0]})
    esc = pd.DataFrame({"level": [1, "all"], "accuracy": [0.45, 0.45], "acc_lo": [0.3, 0.3], "acc_hi": [0.6, 0.6],
                        "escalation_rate": [0.2, 0.2], "esc_lo": [0.1, 0.1], "esc_hi": [0.3, 0.3]})
    text = F.describe_escalation(esc, cost, costs)
    assert "threshold sweep" not in text and "(paper: 1.8x on GPT-4.1-mini, 4.6x on Llama-3-8B)" in text
    fig = F.plot_escalation(esc, cost, costs, 0.8, 0.5)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert not any("sweep" in lab for lab in labels) and fig.axes[0].patches  # the bars, no band
    assert any("Llama-3-8B" in lab for lab in fig.axes[1].get_legend_handles_labels()[1])
    plt.close(fig)


def test_describe_unparsed_by_hand():
    from lase_nb.chapters.failures import describe_unparsed
    t = pd.DataFrame({"stage": [0, 1, 2], "answers": [10, 10, 10], "unparsed": [1, 6, 4], "unparsed_rate": [0.1, 0.6, 0.4],
                      "truncated": [0, 1, 0], "looped": [0, 5, 3], "stopped": [1, 0, 1], "extracted": [1, 6, 3]})
    text = describe_unparsed(t)
    assert text.startswith("First answers: 1 of 10 (10%) box no answer.")
    assert "Revisions: 10 of 20 (50%) box none of their own (8 looped, 1 truncated, 1 stopped)" in text
    assert "recovers an answer for 9 of them" in text
