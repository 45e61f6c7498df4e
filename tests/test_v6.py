"""Organism v6's analysis and preregistration: the whole chain stage by stage, its paired test, the
prediction rule, the power of the exact test, and the preregistration's required fields."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lase_nb.organism import preregistration, revision
from lase_nb.errors import DataError
from lase_nb.replay import chains_from_stages
from lase_nb.stats import mcnemar_power


def test_stage_flow_counts_fixes_breaks_and_stops_by_hand(chain_stages) -> None:
    # p1 unsure at 0 (wrong), 1 (right, unsure) -> sure at 2; p2 sure at 0; p3 never sure (stops at 3);
    # p4 unsure at 0 (right) -> wrong and sure at 1
    chains = chains_from_stages(chain_stages)
    flow = revision.stage_flow(chains, 0.8, 0.5).set_index("stage")
    assert flow["reached"].tolist() == [4, 3, 2, 1]
    assert flow["stopped"].tolist() == [1, 1, 1, 1]
    assert flow.loc[1, "fixed"] == 1 and flow.loc[1, "broken"] == 1  # p1 fixed, p4 broken at stage 1
    assert flow.loc[2, "fixed"] == 0 and flow.loc[2, "broken"] == 0
    assert flow.loc[0, "mean tokens when stopped"] == 110.0  # p2 stops at 0: 100 + 10


def test_whole_chain_test_is_the_paired_test_of_the_gated_answer_against_stage_0(chain_stages) -> None:
    chains = chains_from_stages(chain_stages)
    t = revision.whole_chain_test(chains, 0.8, 0.5, n_boot=200)
    # gated: p1 right (stage 2), p2 right, p3 wrong, p4 wrong; alone: p2, p4 right
    assert (t["n"], t["b"], t["c"], t["escalated"]) == (4, 1, 1, 3)
    assert t["acc_a"] == t["acc_b"] == 0.5 and t["p_value"] == 1.0 and not t["claimed"]
    text = revision.describe_whole_chain({"v6": t}, 0.8, 0.5)
    assert "+0.0 points" in text and "1 fixed and 1 broken" in text and "not met" in text


def test_reproduces_counts_identical_texts_per_role_and_stage() -> None:
    a = pd.DataFrame({"problem_id": ["x", "x", "y", "y"], "role": ["leader", "devil"] * 2, "stage": [0, 1] * 2,
                      "text": ["1", "n1", "2", "n2"]})
    b = a.assign(text=["1", "n1", "2", "other"])
    assert revision.reproduces(a, b, [("leader", 0), ("devil", 1)]) == {"leader@0": (2, 2), "devil@1": (1, 2)}


def test_mcnemar_power_matches_a_simulation_and_the_audits_figures() -> None:
    rng = np.random.default_rng(0)
    from scipy import stats as st
    n, pg, pl, hits, reps, p_of = 120, 0.12, 0.04, 0, 4000, {}
    for _ in range(reps):
        u = rng.random(n)
        b, c = int((u < pg).sum()), int(((u >= pg) & (u < pg + pl)).sum())
        if (b, c) not in p_of:
            p_of[b, c] = st.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
        hits += b > c and p_of[b, c] < 0.05
    assert abs(mcnemar_power(n, pg, pl) - hits / reps) < 0.025
    # with 15% discordant and +5 points: about 80% at 470 problems, about 90% at 630 (the audit)
    assert 0.75 < mcnemar_power(470, 0.10, 0.05) < 0.82 and 0.86 < mcnemar_power(630, 0.10, 0.05) < 0.92
    assert mcnemar_power(1, 0.5, 0.0) == 0.0 and mcnemar_power(50, 0.0, 0.0) == 0.0
    with pytest.raises(ValueError):
        mcnemar_power(10, 0.7, 0.5)


def test_v6_prediction_rule() -> None:
    p = preregistration.v6_prediction({"diff": 0.09})
    assert p["effect"] == pytest.approx(0.065) and p["range"] == [0.03, 0.065]
    p = preregistration.v6_prediction({"diff": 0.01})
    assert p["effect"] == pytest.approx(-0.015) and p["range"] == [-0.015, 0.06]


def _spent() -> dict:
    return {"v5": {"n": 200, "diff": 0.01, "p_value": 0.77, "extra": 1}, "v6": {"n": 200, "diff": 0.05, "p_value": 0.01}}


def test_build_v6_names_both_adapters_and_fixes_the_primary_test() -> None:
    files = {"adapter_sha256": "a" * 64, "models": {"organism": {"adapter_sha256": "a" * 64},
                                                     "organism-revision": {"adapter_sha256": "b" * 64}}}
    out = preregistration.build_v6(model_files=files, problems={"n": 600, "sha256": "c"}, control={"n": 80},
                                   spent=_spent(), prediction=preregistration.v6_prediction({"diff": 0.05}), power=0.8)
    assert out["thresholds"]["tau_lp"] == 0.8 and out["thresholds"]["tau_h"] == 0.5
    assert out["primary"]["tests"]["mcnemar"]["exact"] and out["primary"]["tests"]["bootstrap"]["level"] == 0.95
    assert out["spent"]["v5"] == {"n": 200, "diff": 0.01, "p_value": 0.77}
    assert out["prediction"]["power"] == 0.8 and "if_not_claimed" in out
    with pytest.raises(DataError, match="both adapters"):
        preregistration.build_v6(model_files={"models": {"organism": {"adapter_sha256": "a"}}}, problems={},
                                 control={}, spent=_spent(), prediction={}, power=0.5)


def test_the_primary_result_reads_a_predicted_range() -> None:
    prereg = {"date": "2026-12-04", "thresholds": {"tau_lp": 0.8, "tau_h": 0.5},
              "primary": {"tests": {"mcnemar": {"alpha": 0.05}, "bootstrap": {"n_boot": 200, "seed": 0, "level": 0.95}}},
              "prediction": {"effect": 0.05, "range": [0.03, 0.06]}}
    a = np.array([True] * 10 + [False] * 10)
    b = np.array([True] * 9 + [False] * 11)
    res = preregistration._with_prediction(preregistration._test(a, b, prereg), prereg)
    assert res["predicted_range"] == [0.03, 0.06] and res["prediction_met"]  # +5.0 points
    res["escalated"] = 4
    assert "+3.0 to +6.0 points, is met" in preregistration.describe_primary(res, prereg)
    above = {**res, "diff": 0.093, "prediction_met": False}  # v6's fresh +9.3 points
    assert "is missed: the point estimate lies above its range" in preregistration.describe_primary(above, prereg)


def _rows(first: list[bool], outcomes: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"problem_id": [f"p{i}" for i in range(len(first))], "first_correct": first, "outcome": outcomes})


def test_note_leader_grid_has_one_denominator_and_the_rule_per_cell() -> None:
    first = [False] * 4 + [True] * 4
    sources = {revision.NOTE_LEADER[("v5", "v5's own devil note")]: _rows(first, ["fixed"] + ["kept"] * 6 + ["broken"]),
               revision.NOTE_LEADER[("pilot", "v5's own devil note")]: _rows(first, ["fixed"] * 2 + ["kept"] * 6)}
    grid = revision.note_leader_grid(sources)
    assert grid[["leader", "fixed", "wrong", "broken", "right", "net"]].values.tolist() == [
        ["v5", 1, 4, 1, 4, 0], ["pilot", 2, 4, 0, 4, 2]]
    text = revision.describe_note_leader(grid)
    assert "v5 reading v5's own devil note fixes 1 of 4 and breaks 1 of 4 (misses the round's bar)" in text
    assert "pilot reading v5's own devil note fixes 2 of 4 and breaks 0 of 4 (meets the round's bar)" in text


def test_rounds_table_reads_every_committed_organism_and_its_preregistered_test() -> None:
    from lase_nb.organism.preregistration import load, primary_from_gated_run
    from lase_nb.traces import load_run

    table = revision.rounds_table(prereg=load()).set_index("organism")
    committed = [k for k, f in revision.ROUNDS.items() if (revision.V6_STUDY.parent / f / "lase-full" / "manifest.json").is_file()]
    assert list(table.index) == committed
    p = primary_from_gated_run(load(), load_run(revision.V6_STUDY.parent / "arith-organism-point" / "lase-large"))
    cell = table.loc["v5 (pointing)", "preregistered test, fresh problems"]
    assert cell.endswith("not claimed") != p["claimed"] and f"on {p['n']}" in cell
    assert table.loc["v4 (telling)", "preregistered test, fresh problems"].startswith("none")


def test_pilot_audit_removes_trained_chains_and_fixes_after_a_told_answer() -> None:
    from lase_nb.organism import recipe as organism

    trained = organism.training_problems("sample", 1)[0]
    fresh = [p for p in organism.eval_problems(40, seed=5) if organism.chain_key(p) != organism.chain_key(trained)]
    a, b, c = fresh[:3]
    problems = {"t": trained, "a": a, "b": b, "c": c}
    told = f"Step 1 fails: it should be {a.gold}." if str(a.gold) not in a.question else "x"
    rows = pd.DataFrame({"problem_id": ["t", "a", "b", "c"], "first_correct": [False, False, False, True],
                         "outcome": ["fixed", "fixed", "fixed", "broken"], "correct": [True, True, True, False],
                         "note": ["Step 1 fails.", told, "Step 2 fails.", "Step 1 fails."]})
    first = pd.Series([False, False, False, True, True], index=["t", "a", "b", "c", "d"])
    audit = revision.pilot_audit(rows, problems, first)
    assert audit["overlap"] == 1 and audit["overlap_fixed"] == 1
    assert audit["told"] == (1 if told != "x" else 0)
    assert (audit["fixed"], audit["broken"], audit["right"]) == (2 - audit["told"], 1, 1)
    text = revision.describe_pilot_audit(rows, audit, first)
    assert "fixes 3 of 3 and breaks 1 of 1" in text and "Found after the fact" in text


def test_describe_v6_verdict_says_what_stands_in_the_way(tmp_path) -> None:
    assert "no committed preregistration" in revision.describe_v6_verdict(None)
    prereg = {"date": "2026-12-04", "prediction": {"effect": 0.045, "range": [0.03, 0.06], "power": 0.81},
              "problems": {"n": 600}}
    text = revision.describe_v6_verdict(prereg, tmp_path)
    assert "+4.5 points (+3.0 to +6.0), power 81% on 600 fresh problems" in text and "no verdict" in text


V6_FULL = revision.V6_STUDY / "lase-full"
needs_v6 = pytest.mark.skipif(not (V6_FULL / "manifest.json").is_file(), reason="v6's chain is not recorded")


@needs_v6
def test_v6s_recorded_chain_names_both_adapters_and_is_v5_for_first_answers_and_notes() -> None:
    import json

    from lase_nb.backends.local.files import ORGANISM_DIR, REVISION_DIR
    from lase_nb.traces import load_run

    v6 = load_run(V6_FULL)
    models = v6.manifest["model_files"]["models"]
    for name, folder in (("organism", ORGANISM_DIR), ("organism-revision", REVISION_DIR)):
        assert models[name]["adapter_sha256"] == json.loads((folder / "manifest.json").read_text())["adapter_sha256"]
    same = revision.reproduces(v6.calls, load_run(revision.V5_FULL).calls, [("leader", 0), ("devil", 1)])
    assert all(k == n == 200 for k, n in same.values()), same


@pytest.mark.slow
@pytest.mark.skipif(not preregistration.V6_PATH.is_file(), reason="no v6 preregistration")
def test_v6s_problem_lists_regenerate_as_preregistered() -> None:
    from lase_nb.organism import recipe as organism

    pre = preregistration.load(preregistration.V6_PATH)
    for which in ("problems", "control"):
        spec = pre[which]
        got = organism.v6_problems(which, spec["n"], seed=spec["seed"], levels=spec["levels"])
        assert organism.problems_sha256(got) == spec["sha256"]
        assert {str(lv): sum(p.meta["level"] == int(lv) for p in got) for lv in spec["per_level"]} == spec["per_level"]
    fresh = {organism.draw_key(p) for p in organism.v6_problems("problems", pre["problems"]["n"])}
    control = {organism.draw_key(p) for p in organism.v6_problems("control", pre["control"]["n"], levels=(1,))}
    spent = organism.recorded_chains(organism.RECORDED_BEFORE_V6) | organism.training_draw_keys()
    assert not fresh & spent and not control & spent and not fresh & control


def test_agrees_with_replay_counts_identical_revisions_and_answers() -> None:
    from types import SimpleNamespace

    calls = pd.DataFrame({"problem_id": ["a", "b", "c", "a"], "role": ["leader"] * 3 + ["devil"], "stage": [1, 1, 1, 1],
                          "text": ["x = \\boxed{4}", "y = \\boxed{5}", "z", "note"], "answer": ["4", "5", None, None]})
    rows = pd.DataFrame({"problem_id": ["a", "b", "c", "d"], "revision": ["x = \\boxed{4}", "y2 = \\boxed{5}", "w", "q"],
                         "answer": ["4", "5", "7", "1"]})
    assert revision.agrees_with_replay(SimpleNamespace(calls=calls), rows) == {"compared": 3, "identical": 1, "same_answer": 2}


def test_told_answer_sensitivity_sets_aside_problems_whose_note_states_the_answer() -> None:
    """A note on a wrong attempt that states the gold answer takes its problem out of the
    sensitivity analysis; a note that only points stays; the refusals of the primary test hold."""
    from lase_nb.organism import recipe as organism
    from lase_nb.notes import numbers_in
    from lase_nb.traces import Run

    a, b, c = [p for p in organism.eval_problems(40, seed=7) if not numbers_in(p.question) & numbers_in(str(p.gold))][:3]
    problems = {p.id: p for p in (a, b, c)}
    calls = pd.DataFrame({
        "problem_id": [a.id, a.id, a.id, b.id, b.id, b.id, c.id],
        "role": ["leader", "devil", "leader"] * 2 + ["leader"],
        "stage": [0, 1, 1] * 2 + [0],
        "text": ["wrong: \\boxed{0}", f"Step 1 fails: it should give {a.gold}.", f"\\boxed{{{a.gold}}}",
                 "wrong: \\boxed{0}", "Step 1 fails.", f"\\boxed{{{b.gold}}}", f"\\boxed{{{c.gold}}}"],
        "answer": ["0", None, str(a.gold), "0", None, str(b.gold), str(c.gold)]})
    stages = pd.DataFrame({"problem_id": [a.id, a.id, b.id, b.id, c.id], "stage": [0, 1, 0, 1, 0],
                           "correct": [False, True, False, True, True]})
    final = pd.DataFrame({"problem_id": [a.id, b.id, c.id], "correct": [True, True, True], "stop_stage": [1, 1, 0]})
    prereg = {"thresholds": {"tau_lp": 0.8, "tau_h": 0.5},
              "primary": {"tests": {"bootstrap": {"n_boot": 200, "seed": 0, "level": 0.95},
                                    "mcnemar": {"alpha": 0.05}}}}
    run = Run(Path("x"), {"config": {"tau_lp": 0.8, "tau_h": 0.5}}, final, calls, stages)
    r = preregistration.told_answer_sensitivity(prereg, run, problems)
    assert (r["removed"], r["removed_fixed"], r["n"], r["b"], r["c"]) == (1, 1, 2, 1, 0)
    text = preregistration.describe_told_answer_sensitivity(r)
    assert "on 1 problem a" in text and "2 problems: +50.0 points" in text and "no longer clears both tests" in text
    with pytest.raises(DataError, match="thresholds"):
        preregistration.told_answer_sensitivity(prereg, Run(Path("x"), {"config": {"tau_lp": 0.5, "tau_h": 0.5}},
                                                            final, calls, stages), problems)


@pytest.mark.skipif(not (revision.V6_STUDY / "lase-large" / "manifest.json").is_file(), reason="not recorded")
def test_a_fresh_v6_recordings_problems_regenerate_from_its_preregistration() -> None:
    """The manifest's seed is the strategies'; the list's is the preregistration's: the problems
    regenerated from the manifest are the recorded ones, gold for gold."""
    from lase_nb.runs import problems_from_manifest
    from lase_nb.traces import load_run

    run = load_run(revision.V6_STUDY / "lase-large")
    problems = problems_from_manifest(run.manifest)
    recorded = dict(zip(run.problems["problem_id"], run.problems["gold"].astype(str)))
    assert recorded == {pid: str(p.gold) for pid, p in problems.items()}


@pytest.mark.skipif(not (revision.V6_STUDY / "lase-large" / "manifest.json").is_file(), reason="not recorded")
def test_v6_secondary_endpoints_say_what_is_missing_and_compare_like_with_like(tmp_path) -> None:
    """The secondary table on a copy of v6's gated run: stage 1's counts are its paired test's
    discordant pairs; MV(7) and the control say they are not recorded until they are; an "MV"
    that is the gated run itself ties it at the same tokens, which misses the aim's token bar."""
    import re
    import shutil

    prereg = preregistration.load(preregistration.V6_PATH)
    shutil.copytree(revision.V6_STUDY / "lase-large", tmp_path / "lase-large")
    table = revision.v6_secondary(prereg, tmp_path, tmp_path / "no-control")
    stage1 = table.loc["stage 1 on the escalated problems"]
    fixed, broken = map(int, re.search(r"fixes (\d+) of \d+ wrong first answers, breaks (\d+)", stage1["result"]).groups())
    assert fixed > 0 and stage1["difference, points [95% CI]"].startswith("+")
    assert "not recorded yet" in table.loc["the paper's headline against MV(7)", "result"]
    assert "not recorded yet" in table.loc["the control: each model's gain on its level-1 problems", "result"]
    shutil.copytree(revision.V6_STUDY / "lase-large", tmp_path / "mv")
    row = revision.v6_secondary(prereg, tmp_path, tmp_path / "no-control").loc["the paper's headline against MV(7)"]
    assert "at 1.00x its tokens" in row["result"] and "is not met" in row["result"]
    assert row["difference, points [95% CI]"] == "+0.0 [+0.0, +0.0]" and row["exact p"] == "1"
    assert "not recorded yet" in revision.v6_secondary(prereg, tmp_path / "none").loc["all", "result"]


@pytest.mark.skipif(not (revision.V6_STUDY / "lase-large" / "manifest.json").is_file(), reason="not recorded")
def test_v6_secondary_intervals_are_the_preregistrations_bootstrap() -> None:
    """The secondary endpoints use "the same two tests" as the primary: the stage-1 interval is the
    paired bootstrap with the preregistration's resamples and seed, and changes when they change."""
    import copy

    from lase_nb.stats import paired_test
    from lase_nb.traces import load_run

    prereg = preregistration.load(preregistration.V6_PATH)
    st = load_run(revision.V6_STUDY / "lase-large").stages
    s0, s1 = (st[st["stage"] == k].set_index("problem_id") for k in (0, 1))
    ids = s1.index.intersection(s0.index)
    t = paired_test(s1.loc[ids, "correct"].to_numpy(bool), s0.loc[ids, "correct"].to_numpy(bool),
                    **preregistration.bootstrap_settings(prereg))
    row = "stage 1 on the escalated problems"
    cell = revision.v6_secondary(prereg).loc[row, "difference, points [95% CI]"]
    assert cell == f"{100 * t['diff']:+.1f} [{100 * t['diff_lo']:+.1f}, {100 * t['diff_hi']:+.1f}]"
    narrow = copy.deepcopy(prereg)
    narrow["primary"]["tests"]["bootstrap"]["level"] = 0.5
    assert revision.v6_secondary(narrow).loc[row, "difference, points [95% CI]"] != cell
