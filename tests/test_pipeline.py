"""Chapter 03's logic (lase_nb.chapters.pipeline) on small hand-built tables."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lase_nb import plots  # noqa: E402
from lase_nb.chapters import comparison, pipeline  # noqa: E402
from lase_nb.replay import chains_from_stages, replay, sweep  # noqa: E402
from lase_nb.tables import comparison_table  # noqa: E402
from lase_nb.errors import DataError  # noqa: E402
from tests.tables import _call, lase_calls, mad_calls, problems_frame, stages_frame  # noqa: E402


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
    # the rescue last: the rule, not the fall-back to the first problem, must find it
    last = chains_from_stages(chain_stages.assign(problem_id=chain_stages["problem_id"].replace({"p1": "p9"})))
    assert list(last.problem_ids)[-1] == "p9" and list(last.problem_ids)[0] != "p9"
    assert pipeline.pick_walkthrough(last, 0.8, 0.5) == "p9"
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


def test_leak_table_counts_notes_that_state_the_answer():
    from lase_nb.types import Problem

    calls = pd.concat([lase_calls("p1"), lase_calls("p2")], ignore_index=True)
    calls.loc[(calls["problem_id"] == "p1") & (calls["role"] == "devil"), "text"] = "Step 1 is wrong: it should be 8."
    problems = {pid: Problem(pid, "Ana has 3 pens and gets 5 more. How many pens?", "8") for pid in ("p1", "p2")}
    # each chain: 7 (wrong) alone, then 8 (right) after every revision
    stages = stages_frame([(pid, t, a, ok, 0.5, 1.0, 100, 10) for pid in ("p1", "p2")
                           for t, a, ok in ((0, "7", False), (1, "8", True), (2, "8", True), (3, "8", True))])
    with pytest.raises(DataError, match="needs the run's stages"):
        pipeline.leak_table(calls, problems=problems)
    t = pipeline.leak_table(calls, problems=problems, stages=stages).set_index("role")
    # the devil read the wrong first attempt (7) and wrote 8: one note states the answer
    assert t.loc["devil", "states_answer"] == 1 and t.loc["devil", "notes_on_wrong"] == 2
    # the collaborator's boxed 8 comes after a revision that already says 8: not a new statement,
    # and on a right attempt it hands over no other value
    assert t.loc["collaborator", "states_answer"] == 0 and t.loc["collaborator", "notes_on_wrong"] == 0
    assert t.loc["collaborator", "notes_on_right"] == 2 and t.loc["collaborator", "other_value_on_right"] == 0


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


def test_describe_texts_follow_the_data(chain_stages):
    chains = chains_from_stages(chain_stages)
    walk = pipeline.stage_table(chain_stages, "p1", 0.8, 0.5)
    text = pipeline.describe_walk(walk, pipeline.walkthrough_change(chains, "p1", 0.8, 0.5))
    assert "from a wrong answer to the right one" in text and "stops at stage 2" in text and "650" in text
    # issue 56: whether the gate stopped early is said from the walk (here stage 2 of 0-3: the expert never called)
    assert len(walk) == 4 and "so LASE stopped early: expert was never called" in text
    last = walk.assign(lase=["continues", "continues", "continues", "stops here"], uncertain=[True, True, True, True])
    ran = pipeline.describe_walk(last, pipeline.walkthrough_change(chains, "p1", 0.8, 0.5))
    assert "LASE ran every stage, and the leader was still unsure after it." in ran and "stopped early" not in ran
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


def test_fixes_by_rule_tells_a_told_fix_from_a_pointed_one():
    from types import SimpleNamespace

    from lase_nb.types import Problem

    probs = {f"p{i}": Problem(f"p{i}", f"Tom has 3 apples and gets 4 more (case {i}).", gold="7", kind="number")
             for i in (1, 2, 3)}
    # (stage-0 right?, stage-1 right?): p1 and p2 fixed at stage 1, p3 broken; stage 0 unsure, stage 1 sure
    outcome = {"p1": (False, True), "p2": (False, True), "p3": (True, False)}
    note = {"p1": "The total should be 7.", "p2": "Step 1 fails: redo the addition.", "p3": "Check step 1."}
    stages, calls = [], []
    for pid, oks in outcome.items():
        for t, ok in enumerate(oks):
            stages.append({"problem_id": pid, "stage": t, "answer": "7" if ok else "6", "correct": ok,
                           "p_min": 0.3 if t == 0 else 0.99, "h_max": 0.1, "prompt_tokens": 10, "completion_tokens": 5})
            calls.append({"problem_id": pid, "stage": t, "role": "leader", "text": f"3 + 4 = \\boxed{{{7 if ok else 6}}}"})
        calls.append({"problem_id": pid, "stage": 1, "role": "devil", "text": note[pid]})
    run = SimpleNamespace(stages=pd.DataFrame(stages), calls=pd.DataFrame(calls))
    r = pipeline.fixes_by_rule(run, probs, 0.8, 0.5)
    assert (r["fixed"], r["fixed_told"], r["fixed_pointed"], r["broken"], r["escalated"]) == (2, 1, 1, 1, 3)
    assert (r["notes_on_wrong"], r["stating_on_wrong"]) == (2, 1)
    t = pipeline.telling_vs_pointing({"m": run}, {"m": probs}, 0.8, 0.5)
    assert t.loc["m", "stating_share"] == 0.5


def test_fix_walk_gives_the_stage_table_the_words_and_the_transcript_up_to_the_stop() -> None:
    from lase_nb.chapters import correct_seeds
    from lase_nb.replay import chains_from_stages
    from lase_nb.runs import COMMITTED_DIR, load_runs, problems_from_manifest

    run = load_runs(COMMITTED_DIR / "arith-organism-point", ["lase"])["lase"]
    chains, problems = chains_from_stages(run.stages), problems_from_manifest(run.manifest)
    pid = correct_seeds.pick_fix(correct_seeds.seed_table(chains, run.calls, problems, 0.8, 0.5))
    walk, words, transcript = pipeline.fix_walk(run, chains, problems, pid, 0.8, 0.5)
    stop = int((walk["lase"] == "stops here").to_numpy().argmax())
    assert words == pipeline.describe_walk(walk, pipeline.walkthrough_change(chains, pid, 0.8, 0.5))
    assert stop >= 1 and "devil" in transcript.lower()
