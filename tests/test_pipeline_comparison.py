"""Chapter logic of the pipeline (03) and comparison (04) notebooks, and the shared transcript
renderer and comparison table, on small hand-built tables."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb import plots, reference  # noqa: E402
from lase_nb.runs import comparison_table  # noqa: E402
from lase_nb import transcripts  # noqa: E402
from lase_nb.chapters import comparison, pipeline  # noqa: E402
from lase_nb.replay import chains_from_stages, escalation_rate, outcomes_at, replay, sweep  # noqa: E402
from lase_nb.errors import DataError  # noqa: E402

NAN = float("nan")


def _call(pid, stage, role, reads=(), text="", answer=None, p=None, h=None, leaked=0, used=True,
          strategy="lase", agent=None, prompt=100, completion=10):
    return {"problem_id": pid, "strategy": strategy, "used": used, "role": role, "stage": stage,
            "agent": agent or role, "prompt_tokens": prompt, "completion_tokens": completion, "latency_s": 0.1,
            "cached": False, "finish_reason": "stop", "reads": list(reads), "text": text, "answer": answer,
            "p_min": p, "h_max": h, "leaked": leaked}


def lase_calls(pid="p1", stop=3):
    """A full LASE chain: leader, then (supporter, revision) x 3, with one leaking collaborator."""
    rows = [_call(pid, 0, "leader", text="3 + 4 = 7\n\\boxed{7}", answer="7", p=0.5, h=1.0)]
    notes = {"devil": ("leader",), "collaborator": ("leader", "devil"), "expert": ("leader", "devil", "collaborator")}
    for t, (role, reads) in enumerate(notes.items(), start=1):
        leak = "the answer is \\boxed{8}" if role == "collaborator" else "check the sum <carefully>"
        rows.append(_call(pid, t, role, reads, text=leak, leaked=int(role == "collaborator"), used=t <= stop))
        rows.append(_call(pid, t, "leader", (role,), text=f"revision {t}\n\\boxed{{8}}", answer="8",
                          p=0.95 if t >= 2 else 0.6, h=0.1, used=t <= stop))
    return pd.DataFrame(rows)


def stages_frame(rows):
    """rows: (pid, stage, answer, correct, p_min, h_max, cum_prompt, cum_completion)."""
    cols = ["problem_id", "stage", "answer", "correct", "p_min", "h_max", "prompt_tokens", "completion_tokens"]
    df = pd.DataFrame(rows, columns=cols)
    df["strategy"] = "lase"
    df["supporter"] = df["stage"].map({0: None, 1: "devil", 2: "collaborator", 3: "expert"})
    df["uncertain"] = False
    return df


@pytest.fixture
def chain_stages():
    # p1: unsure, sure at stage 2 (wrong -> right: a rescue); p2: sure at once, right;
    # p3: never boxes after stage 0 (stops at the last stage, wrong); p4: unsure, right -> wrong at stage 1.
    rows = [
        ("p1", 0, "7", False, 0.5, 1.0, 100, 10), ("p1", 1, "8", True, 0.6, 0.1, 300, 30),
        ("p1", 2, "8", True, 0.95, 0.1, 600, 50), ("p1", 3, "8", True, 0.99, 0.0, 900, 70),
        ("p2", 0, "5", True, 0.99, 0.05, 100, 10), ("p2", 1, "5", True, 0.99, 0.05, 300, 30),
        ("p2", 2, "5", True, 0.99, 0.05, 600, 50), ("p2", 3, "5", True, 0.99, 0.05, 900, 70),
        ("p3", 0, "1", False, 0.3, 2.0, 100, 10), ("p3", 1, None, False, NAN, NAN, 300, 30),
        ("p3", 2, None, False, NAN, NAN, 600, 50), ("p3", 3, None, False, NAN, NAN, 900, 70),
        ("p4", 0, "4", True, 0.7, 0.2, 100, 10), ("p4", 1, "6", False, 0.9, 0.2, 300, 30),
        ("p4", 2, "6", False, 0.9, 0.2, 600, 50), ("p4", 3, "6", False, 0.9, 0.2, 900, 70),
    ]
    return stages_frame(rows)


# ------------------------------------------------------------------ transcripts


def test_transcript_marks_leaks_stop_and_verdicts():
    calls = lase_calls(stop=3)
    entries = transcripts.transcript_entries(calls, "p1", stop_stage=1, tau_lp=0.8, tau_h=0.5, gold="8")
    assert [(e["stage"], e["role"]) for e in entries] == [
        (0, "leader"), (1, "devil"), (1, "leader"), (2, "collaborator"), (2, "leader"), (3, "expert"), (3, "leader")]
    assert [e["used"] for e in entries] == [True, True, True, False, False, False, False]
    assert entries[0]["correct"] is False and entries[2]["correct"] is True
    assert entries[0]["uncertain"] is True and entries[4]["uncertain"] is False
    md = transcripts.render_transcript(entries, fmt="markdown")
    assert md.count("⟦LEAK") == 1 and "⟦LEAK \\boxed{8}⟧" in md  # the collaborator's box, not the leader's
    assert md.count("recorded for replay only") == 4
    assert md.index("Stage 0 · leader") < md.index("Stage 1 · devil's advocate") < md.index("Stage 1 · leader (revision)")
    assert "U = 1: unsure, ask the next supporter" in md and "U = 0: confident, stop" in md
    unsure_last = transcripts.transcript_entries(calls.assign(p_min=0.1), "p1", tau_lp=0.8, tau_h=0.5)
    assert "no supporter is left: stop" in transcripts.render_transcript(unsure_last[-1:])
    assert "no supporter is left" not in transcripts.render_transcript(unsure_last[:-1])
    html = transcripts.render_transcript(entries, fmt="html")
    assert "&lt;carefully&gt;" in html and "<carefully>" not in html
    assert html.count("<mark") == 1


def test_transcript_clips_and_rejects_unknown_format():
    calls = pd.DataFrame([_call("p", 0, "leader", text="x" * 50, answer=None)])
    entries = transcripts.transcript_entries(calls, "p")
    assert "[40 more characters]" in transcripts.render_transcript(entries, max_chars=10)
    assert "answer: none boxed" in transcripts.render_transcript(entries)
    with pytest.raises(ValueError):
        transcripts.render_transcript(entries, fmt="latex")
    with pytest.raises(DataError):
        transcripts.transcript_entries(calls, "missing")


# ------------------------------------------------------------------ one chain and the batch


def test_stage_table_stops_where_replay_stops(chain_stages):
    chains = chains_from_stages(chain_stages)
    stops = replay(chains, 0.8, 0.5).set_index("problem_id")["stop_stage"]
    for pid in ("p1", "p2", "p3", "p4"):
        t = pipeline.stage_table(chain_stages, pid, 0.8, 0.5)
        assert list(t["lase"]).index("stops here") == stops[pid]
        assert (t["lase"].iloc[: stops[pid]] == "continues").all()
        assert (t["lase"].iloc[stops[pid] + 1:] == "not reached").all()
    t = pipeline.stage_table(chain_stages, "p3", 0.8, 0.5)
    assert t["uncertain"].all() and t["answer"].iloc[1] is None  # no boxed answer = unsure
    assert list(t["total_tokens"]) == [110, 330, 650, 970]


def test_pick_walkthrough_prefers_a_rescue(chain_stages):
    chains = chains_from_stages(chain_stages)
    assert pipeline.pick_walkthrough(chains, 0.8, 0.5) == "p1"
    # with the gate off nothing escalates: the first problem
    assert pipeline.pick_walkthrough(chains, 0.0, math.inf) == "p1"
    no_rescue = chains.subset(np.isin(chains.problem_ids, ["p2", "p3", "p4"]))
    assert pipeline.pick_walkthrough(no_rescue, 0.8, 0.5) == "p4"  # two distinct answers beats none
    assert pipeline.pick_unboxed(chains, 0.8, 0.5) == "p3"
    assert pipeline.pick_unboxed(chains, 0.0, math.inf) is None  # nothing escalates


def test_pick_unboxed_counts_answers_the_extraction_step_supplied(chain_stages):
    """Revisions whose answer came from the extraction step have a confidence but no box of their
    own: the typical chain is still found when every revision's answer was extracted."""
    st = chain_stages.assign(extracted=False)
    st.loc[(st["problem_id"] == "p4") & (st["stage"] > 0), "extracted"] = True
    st["p_min"] = st["p_min"].fillna(0.5)  # the extraction step fills every confidence
    chains = chains_from_stages(st)
    assert pipeline.unboxed_revisions(chains).tolist() == [0, 0, 0, 3]
    assert pipeline.pick_unboxed(chains, 0.8, 0.5) == "p4"


def test_stop_distribution_flips_and_stage_confidence(chain_stages):
    chains = chains_from_stages(chain_stages)
    dist = pipeline.stop_distribution(chains, 0.8, 0.5)
    assert list(dist["problems"]) == [1, 1, 1, 1]  # p2 at 0, p4 at 1, p1 at 2, p3 at 3
    assert dist["problems"].sum() == len(chains.problem_ids)
    assert dist.loc[2, "accuracy"] == 1.0 and dist.loc[3, "avg_tokens"] == 970
    flips = pipeline.outcome_flips(chains, 0.8, 0.5).set_index("outcome")["problems"]
    assert flips["wrong -> right (rescued)"] == 1 and flips["right -> wrong (talked out of it)"] == 1
    assert flips["right -> right"] == 1 and flips["wrong -> wrong"] == 1
    per = pipeline.stage_confidence(chains, 0.8, 0.5)
    assert list(per["reached"]) == [1.0, 0.75, 0.5, 0.25]
    assert per["boxed"].iloc[1] == 0.75 and per["accuracy"].iloc[0] == 0.5
    assert per["changed"].iloc[1] == 0.75  # p1 7->8, p3 1->none, p4 4->6; p2 keeps 5


def test_leak_table_counts_only_supporters():
    calls = pd.concat([lase_calls("p1"), lase_calls("p2")])
    t = pipeline.leak_table(calls).set_index("role")
    assert list(t.index) == ["devil", "collaborator", "expert"]
    assert t.loc["collaborator", "calls_with_leak"] == 2 and t.loc["devil", "boxes_removed"] == 0
    assert t.loc["collaborator", "leak_rate"] == 1.0
    only_stage1 = pipeline.leak_table(calls, stops={"p1": 1, "p2": 1})
    assert only_stage1["calls_with_leak"].sum() == 0


# ------------------------------------------------------------------ inclusions


def mad_calls(pid="m1", drop_read=False):
    rows = [_call(pid, 0, "debater", agent=f"agent{i}", strategy="mad") for i in range(3)]
    for t in (1, 2):
        for i in range(3):
            reads = [f"agent{j}" for j in range(3) if j != i]
            if drop_read and t == 2 and i == 0:
                reads = reads[:1]
            rows.append(_call(pid, t, "debater", reads, agent=f"agent{i}", strategy="mad"))
    return pd.DataFrame(rows)


def test_inclusions_match_the_formulas():
    calls = pd.concat([lase_calls("p1"), mad_calls("m1")], ignore_index=True)
    counts = pipeline.inclusion_counts(calls, stops=None)
    lase = counts.set_index("strategy").loc["lase"]
    assert (lase["star"], lase["relay"], lase["counted"]) == (6, 3, 9)
    assert counts.set_index("strategy").loc["mad", "counted"] == 12
    s = pipeline.inclusion_summary(counts, {"mad": {"n_agents": 3, "rounds": 3}}).set_index("strategy")
    assert s.loc["mad", "bound"] == 12 and s.loc["mad", "obeys_formula"]
    assert s.loc["lase", "star_bound_2kT"] == 6 and s.loc["lase", "star_within_2kT"]
    # a stop at stage 1: one supporter consulted, two inclusions
    early = pipeline.inclusion_counts(lase_calls("p1"), stops={"p1": 1})
    assert early["counted"].item() == 2 and early["star"].item() == 2 and early["calls"].item() == 3


def test_inclusion_summary_flags_a_broken_topology():
    counts = pipeline.inclusion_counts(mad_calls("m1", drop_read=True))
    s = pipeline.inclusion_summary(counts, {"mad": {"n_agents": 3, "rounds": 3}})
    assert not s["obeys_formula"].item()
    assert pipeline.inclusion_bounds("mad", {"n_agents": 5, "rounds": 4})["bound"] == 3 * 5 * 4
    assert pipeline.inclusion_bounds("lase-mv", {"lase_chains": 5})["star_bound"] == 30


# ------------------------------------------------------------------ comparison


def problems_frame(strategy, correct, ids=None, completion=10, prompt=100, **extra):
    ids = ids or [f"q{i}" for i in range(len(correct))]
    return pd.DataFrame({"problem_id": ids, "strategy": strategy, "correct": correct,
                         "prompt_tokens": prompt, "completion_tokens": completion,
                         "total_tokens": prompt + completion, **extra})


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


def test_escalation_rate_variants():
    assert escalation_rate(problems_frame("down", [True, False], x_debated=[True, False])) == 0.5
    lmv = problems_frame("lase-mv", [True, True], x_escalated=[1, 4], x_chain_answers=[["1"] * 5, ["2"] * 5])
    assert escalation_rate(lmv) == pytest.approx(0.5)
    assert np.isnan(escalation_rate(problems_frame("mv", [True])))


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
    main, short = comparison.split_by_coverage(tables)
    assert main == ["single", "mv", "lase"] and short == ["lase-mv"]
    sub = comparison_table({k: tables[k] for k in ("single", "mv", "lase", "lase-mv")})
    c = comparison.claims_table(sub, comparison.paper_reference(), about=["lase-mv"])
    assert list(c["about"]) == ["lase-mv"] and c["n"].item() == 2 and not c["holds here"].item()
    assert "0.86x MV's tokens" in c["this run"].item()  # 660 / 770


# ------------------------------------------------------------------ compute-matched view


def mv_run():
    """Two problems, 3 samples each; p_a: 5, 6, 6 (gold 6); p_b: 1, 2, None with p 0.2/0.9 (gold 2)."""
    rows = []
    for pid, answers, ps in (("p_a", ["5", "6", "6"], [0.9, 0.5, 0.5]), ("p_b", ["1", "2", None], [0.2, 0.9, None])):
        for i, (a, p) in enumerate(zip(answers, ps)):
            rows.append(_call(pid, 0, "sample", answer=a, p=p, agent=f"sample{i}", strategy="mv",
                              prompt=100, completion=10 * (i + 1)))
    calls = pd.DataFrame(rows).iloc[::-1]  # order in the table must not matter
    probs = pd.DataFrame({"problem_id": ["p_a", "p_b"], "gold": ["6", "2"], "correct": [True, True]})
    return calls, probs


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
    assert len(only_gate_off)
    none = comparison.describe_matched(m.loc[[1]].reset_index(), mv, grid)
    assert "At no MV budget does the best LASE pick escalate anything." in none and "at 0" not in none


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


# ------------------------------------------------------------------ figures and roles


def test_figures_draw(chain_stages):
    chains = chains_from_stages(chain_stages)
    t = pipeline.stage_table(chain_stages, "p3", 0.8, 0.5)
    figs = [pipeline.plot_stage_walk(t, 0.8, 0.5),
            pipeline.plot_batch(pipeline.stop_distribution(chains, 0.8, 0.5), pipeline.stage_confidence(chains, 0.8, 0.5)),
            pipeline.plot_inclusions(pipeline.inclusion_summary(pipeline.inclusion_counts(lase_calls()))),
            comparison.plot_accuracy_vs_tokens(
                comparison_table({"single": problems_frame("single", [True, False]),
                                         "lase": problems_frame("lase", [True, True])}),
                comparison.paper_reference(), mv=pd.DataFrame({"k": [1, 2], "accuracy": [0.5, 0.5],
                                                           "avg_tokens": [110, 220]}),
                grid=sweep(chains, [0.5, 0.9], [0.5]))]
    for f in figs:
        assert f.axes
        plt.close(f)


def test_role_table_shows_the_prompts_module():
    from lase_nb import prompts
    t = pipeline.role_table()
    assert len(t) == 4 and t["instruction"].iloc[1] == prompts.SUPPORTER_SYSTEM["devil"]
    assert plots.label("mv", {"n_samples": 5}) == "MV(5)" and plots.label("mad") == "MAD(3x2)"


# ------------------------------------------------------------------ walkthrough rule, Theorem 3.7 terms


def test_walkthrough_change_kinds(chain_stages):
    chains = chains_from_stages(chain_stages)
    assert pipeline.walkthrough_change(chains, "p1", 0.8, 0.5) == {
        "problem_id": "p1", "kind": "wrong -> right", "stage": 1, "stop": 2}
    assert pipeline.walkthrough_change(chains, "p4", 0.8, 0.5)["kind"] == "right -> wrong"
    assert pipeline.walkthrough_change(chains, "p3", 0.8, 0.5)["kind"] == "escalated, no change"
    assert pipeline.walkthrough_change(chains, "p2", 0.8, 0.5)["kind"] == "not escalated"
    # a change after LASE's stop does not count: p1 stops at once when the gate accepts anything
    assert pipeline.walkthrough_change(chains, "p1", 0.0, math.inf)["kind"] == "not escalated"
    only_p3 = chains.subset(np.isin(chains.problem_ids, ["p2", "p3"]))
    assert pipeline.pick_walkthrough(only_p3, 0.8, 0.5) == "p3"  # any escalated problem beats none


def test_replay_strict_grading_uses_correct_strict(chain_stages):
    st = chain_stages.assign(correct_strict=chain_stages["correct"], extracted=False)
    st.loc[(st["problem_id"] == "p1") & (st["stage"] == 2), ["correct_strict", "extracted"]] = [False, True]
    chains = chains_from_stages(st)
    assert replay(chains, 0.8, 0.5)["correct_strict"].tolist() == [False, True, False, False]

def test_describe_texts_follow_the_data(chain_stages):
    chains = chains_from_stages(chain_stages)
    walk = pipeline.stage_table(chain_stages, "p1", 0.8, 0.5)
    text = pipeline.describe_walk(walk, pipeline.walkthrough_change(chains, "p1", 0.8, 0.5))
    assert "from a wrong answer to the right one" in text and "stops at stage 2" in text and "650" in text
    batch = pipeline.describe_batch(chains, 0.8, 0.5)
    assert "escalates **75%** of the 4 problems" in batch and "rescued **1**" in batch


def test_prompt_table_and_caps():
    t = pipeline.prompt_table()
    assert list(t["part"][:4]) == ["leader", "devil's advocate", "collaborator", "senior expert"]
    assert "never simply approves" in t.loc[1, "paper's intent"] and "Never just say" in t.loc[1, "ours (as sent)"]
    assert "zero-shot" in t["paper's intent"].iloc[-1]
    calls = lase_calls().assign(finish_reason=["length", "length", "stop", "stop", "stop", "length", "stop"])
    calls = pd.concat([calls, pd.DataFrame([_call("p1", 1, "extract")])], ignore_index=True)
    caps = pipeline.role_calls(calls).set_index("role")
    assert caps.loc["leader", "calls"] == 4 and caps.loc["leader", "cap_hits"] == 1
    assert caps.loc["devil", "rate"] == 1.0 and caps.loc["extract", "calls"] == 1


# ------------------------------------------------------------------ the comparison chapter's sentences


def test_reading_rounds_count_the_rounds_after_the_first_answers():
    assert pipeline.reading_rounds({"n_agents": 3, "rounds": 2, "examples": 2}) == 1
    assert pipeline.reading_rounds({"n_agents": 3, "rounds": 3}) == 2
    assert pipeline.reading_rounds({}) == 1
    b = pipeline.inclusion_bounds("mad", {"n_agents": 3, "rounds": 2, "examples": 0})
    assert b["bound"] == 6 and b["formula"] == "T n(n-1) = 1*3*2"
    calls = mad_calls("m1")
    counts = pipeline.inclusion_counts(calls[calls["stage"] <= 1])  # Du et al.'s 3 x 2: one reading round
    s = pipeline.inclusion_summary(counts, {"mad": {"n_agents": 3, "rounds": 2, "examples": 2}})
    assert s["obeys_formula"].item() and s["mean_counted"].item() == 6
    calls = pd.DataFrame({"problem_id": ["a"] * 6 + ["b"] * 6, "used": [True] * 6 + [True] * 5 + [False]})
    assert comparison.calls_per_problem(calls) == pytest.approx(5.5)


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


def test_boxing_separates_own_answers_from_extracted_ones(chain_stages):
    stages = chain_stages.copy()
    stages["extracted"] = stages["stage"] > 0  # every revision's answer came from the extraction step
    chains = chains_from_stages(stages)
    per = pipeline.stage_confidence(chains, 0.8, 0.5)
    assert (per["boxed_own"].iloc[1:] == 0).all() and per["boxed_own"].iloc[0] == per["boxed"].iloc[0]


def test_gate_reads_counts_which_call_the_gate_read(chain_stages):
    st = chain_stages.assign(extracted=False)
    st.loc[(st["problem_id"].isin(["p3", "p4"])) & (st["stage"] > 0), "extracted"] = True
    reads = pipeline.gate_reads(chains_from_stages(st))
    assert reads["read_extraction"].tolist() == [0, 2, 2, 2]
    assert (reads["read_reply"] + reads["read_extraction"] == 4).all()


def test_dodge_spreads_close_points_and_keeps_far_ones():
    x = np.array([930.0, 980.0, 220.0, 5000.0])
    d = comparison.dodge(x)
    assert d[2] == pytest.approx(220.0) and d[3] == pytest.approx(5000.0)
    assert np.log10(d[1]) - np.log10(d[0]) == pytest.approx(0.035)
    assert d[0] < d[1] and np.isclose(np.log10(d[:2]).mean(), np.log10(x[:2]).mean())


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
