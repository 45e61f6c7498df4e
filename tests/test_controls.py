"""The controls of organism v6's gain (lase_nb.organism.controls): the commutative chain key, the no-note prompt,
one revision outside a chain, the arms' inputs, the preregistration as committed, and the analysis."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from lase_nb.organism import controls, recipe as organism, preregistration
from lase_nb import prompts
from lase_nb.backends.openai_backend import OpenAIBackend
from lase_nb.engine import Engine
from lase_nb.errors import DataError
from lase_nb.runner import run_problems
from lase_nb.runs import problems_from_manifest
from lase_nb.strategies import StrategyConfig, revise_once
from lase_nb.traces import load_run
from lase_nb.types import Problem
from tests.wire_servers import OpenAIWireServer, Reply


@pytest.fixture(scope="module")
def recording():
    run = load_run(controls.STUDY / "lase-large")
    v6 = preregistration.load(preregistration.V6_PATH)
    problems = organism.v6_problems("problems", v6["problems"]["n"], seed=v6["problems"]["seed"])
    return run, v6, problems, controls.escalated_cases(run, {p.id: p for p in problems}, 0.8, 0.5)


# ---------------------------------------------------------------- the chain key


def _arith(start: int, ops: list, pid: str = "x") -> Problem:
    return Problem(pid, "q", gold="0", meta={"start": start, "ops": ops, "level": len(ops)})


def test_chain_key_ignores_the_order_of_a_commutative_first_step():
    a, b = _arith(9, [["+", 7], ["/", 2]]), _arith(7, [["+", 9], ["/", 2]])
    assert organism.chain_key(a) == organism.chain_key(b)
    assert organism.draw_key(a) != organism.draw_key(b)  # the committed draws' key tells them apart
    assert organism.chain_key(_arith(3, [["*", 4]])) == organism.chain_key(_arith(4, [["*", 3]]))
    # subtraction and division keep their order; a later step's left operand is the previous result
    assert organism.chain_key(_arith(9, [["-", 7]])) != organism.chain_key(_arith(7, [["-", 9]]))
    assert organism.chain_key(_arith(9, [["+", 7], ["-", 2]])) != organism.chain_key(_arith(9, [["+", 7], ["-", 3]]))


def test_the_issue_pair_and_the_recount_on_v6s_lists(recording):
    _, v6, problems, _ = recording
    trained = organism.training_chains()
    by_id = {p.id: p for p in problems}
    assert organism.chain_key(by_id["arith-v6-problems-L2-0023"]) in trained
    assert organism.draw_key(by_id["arith-v6-problems-L2-0023"]) not in organism.training_draw_keys()
    assert len(organism.training_overlap(problems, trained)) == 40
    control = organism.v6_problems("control", v6["control"]["n"], seed=v6["control"]["seed"], levels=(1,))
    assert len(organism.training_overlap(control, trained)) == 5
    # changing the key changed no committed list
    assert organism.problems_sha256(problems) == v6["problems"]["sha256"]
    assert organism.problems_sha256(control) == v6["control"]["sha256"]


# ---------------------------------------------------------------- the prompt and one revision


def test_the_no_note_request_drops_only_the_note():
    p = Problem("p", "What is 2 + 2?", gold="4")
    with_note = prompts.revise_messages(p, "2 + 2 = \\boxed{5}", "devil", "Step 1 fails.", examples=0)
    without = prompts.revise_messages(p, "2 + 2 = \\boxed{5}", "devil", None, examples=0)
    assert with_note[:-1] == without[:-1]  # the problem and the attempt are the same
    assert without[-1]["content"] == prompts.REVISE_ALONE_REQUEST
    assert "Step 1 fails." in with_note[-1]["content"] and "reviewer" not in without[-1]["content"]
    assert with_note[-1]["content"].endswith(without[-1]["content"][len("Check"):])


def test_revise_once_makes_one_revision_and_extracts_a_missing_answer():
    seen = []

    def responder(messages, params):
        seen.append(messages)
        if "Write only the final answer" in messages[-1]["content"]:
            return Reply("\\boxed{4}", 0.9)
        return Reply("2 + 2 = 4, so the answer is 4.", 0.9)

    p = Problem("p", "What is 2 + 2?", gold="4")
    with OpenAIWireServer(responder=responder) as srv:
        engine = Engine(OpenAIBackend("wire-model", base_url=srv.base_url, api_key="sk-test", max_retries=0))
        cfg = StrategyConfig(examples=0)
        (res,) = run_problems("no-note", [p], engine, cfg, progress=False,
                              policy=lambda prob, c: revise_once(prob, c, "2 + 2 = \\boxed{5}", None, name="no-note"))
    assert len(seen) == 2 and seen[0][-1]["content"] == prompts.REVISE_ALONE_REQUEST
    assert res.correct and res.answer == "4" and res.stages == []
    assert [(c.role, c.agent, c.stage) for c in res.calls] == [("leader", "reviser", 1), ("extract", "reviser", 1)]
    assert res.calls[0].reads == ()


# ---------------------------------------------------------------- the arms' inputs and the preregistration


def test_the_derangement_stays_within_a_level_and_never_gives_a_problem_its_own_note(recording):
    *_, cases = recording
    pairs = controls.derangement(cases)
    level = {c.problem.id: c.problem.meta["level"] for c in cases}
    assert sorted(pairs) == sorted(pairs.values()) == sorted(level)
    assert all(a != b and level[a] == level[b] for a, b in pairs.items())
    with pytest.raises(DataError, match="needs two"):
        controls.derangement(cases[:1])
    other = controls.arm_inputs(cases, "other-note", pairs)
    by_id = {c.problem.id: c for c in cases}
    assert all(other[a] == (by_id[a].attempt, by_id[b].note) for a, b in pairs.items())
    assert all(note is None for _, note in controls.arm_inputs(cases, "no-note").values())


def test_the_committed_preregistration_regenerates_from_the_code(recording):
    run, v6, problems, cases = recording
    committed = controls.load_prereg()
    power = {f"discordant {int(100 * d)}%, {k}": v for d in (0.2, 0.3)
             for k, v in controls.power_at(len(cases), d).items()}
    again = controls.build_prereg(run=run, cases=cases, problems=problems, v6_prereg=v6, power=power,
                                  tau_lp=0.8, tau_h=0.5)
    assert json.loads(json.dumps(again)) == {**committed, "date": again["date"]}
    assert committed["escalated"]["n"] == 364 and committed["escalated"]["first_right"] == 148


def test_a_gate_that_does_not_match_the_run_is_refused(recording):
    run, _, problems, _ = recording
    with pytest.raises(DataError, match="does not escalate"):
        controls.escalated_cases(run, {p.id: p for p in problems}, 0.95, 0.5)


# ---------------------------------------------------------------- the analysis


def _table(note, no_note, first):
    n = len(note)
    return pd.DataFrame({"level": [1] * n, "escalated": [True] * n, "alone_v5": first, "note": note,
                         "no_note": no_note, "v6": note, "stage1": note})


def test_the_primary_falls_in_each_preregistered_outcome():
    prereg = controls.load_prereg()
    rng = np.random.default_rng(0)
    first = rng.random(400) < 0.4
    same = first.copy()
    assert controls.primary(prereg, _table(same, same, first))["outcome"] == "no-difference"
    better = same | (rng.random(400) < 0.3)
    r = controls.primary(prereg, _table(better, same, first))
    assert r["outcome"] == "note-helps" and r["b"] > 0 and r["c"] == 0
    assert controls.primary(prereg, _table(same, better, first))["outcome"] == "note-hurts"
    small = first[:40].copy()
    noisy = small ^ (rng.random(40) < 0.3)
    assert controls.primary(prereg, _table(noisy, small, first[:40]))["outcome"] in ("undecided", "note-helps", "note-hurts")
    words = controls.describe_primary(r, prereg)
    assert "note-helps" in words and f"{r['b']} problems right only with the note" in words


def test_the_primary_needs_its_arm():
    with pytest.raises(DataError, match="no-note arm"):
        controls.primary(controls.load_prereg(), pd.DataFrame({"escalated": [True], "note": [True]}))


def test_outcomes_and_costs_from_the_recording(recording, tmp_path):
    run, *_ = recording
    table = controls.outcomes(run, folder=tmp_path)  # no arm recorded there
    assert len(table) == 600 and int(table["escalated"].sum()) == 364
    esc = table[table["escalated"]]
    assert int((~esc["alone_v5"] & esc["note"].astype(bool)).sum()) == 68  # stage 1's fixes in the recording
    assert int((esc["alone_v5"] & ~esc["note"].astype(bool)).sum()) == 16
    toks = controls.policy_tokens(run, folder=tmp_path)
    assert set(toks) == {"leader alone", controls.WHOLE, "chain stopped after stage 1"}
    lead, chain = toks["leader alone"][0], toks[controls.WHOLE][0]
    assert np.all(lead <= toks["chain stopped after stage 1"][0]) and np.all(toks["chain stopped after stage 1"][0] <= chain)
    where = controls.where_tokens_go(run)
    assert abs(where["all"].sum() - chain.mean()) < 1e-6


def test_the_note_and_leader_grid_has_one_denominator():
    from lase_nb.organism import ceiling, revision

    run = load_run(revision.V6_STUDY.parent / "arith-organism-point" / "lase-full")
    cfg = run.manifest["config"]
    grid = revision.note_leader_grid(revision.decomposition_sources(run, problems_from_manifest(run.manifest),
                                                                     ceiling.load_rows(), cfg["tau_lp"], cfg["tau_h"]))
    assert grid["wrong"].nunique() == 1 and grid["right"].nunique() == 1
    assert len(grid.attrs["left_out"]) + int(grid["wrong"].iloc[0] + grid["right"].iloc[0]) == 104
    assert f"({len(grid.attrs['left_out'])} left out" in revision.describe_note_leader(grid)


def test_the_committed_controls_say_what_the_gain_is_made_of():
    c = controls.load_controls()
    assert c is not None
    r = controls.primary(c.prereg, c.table)
    esc = c.table[c.table["escalated"]]
    # the primary recounted from the rows: right only with the note, right only without it
    assert (r["b"], r["c"]) == (int((esc["note"].astype(bool) & ~esc["no_note"].astype(bool)).sum()),
                                int((~esc["note"].astype(bool) & esc["no_note"].astype(bool)).sum()))
    assert r["outcome"] in ("note-helps", "note-hurts", "no-difference", "undecided")
    words = controls.describe_made_of(c)
    assert controls.made_of_verdict(c) in ("the note", "a second solver", "a second look", "undecided")
    assert "Exploratory, built after these results" in words  # the post-hoc policy is labelled where printed
    assert controls.replay_check() == {"k": 40, "n": 40}
    told = controls.notes_with_the_answer(c)
    assert told["wrong"] == int((~esc["alone_v5"]).sum()) and 0 <= told["own"] <= told["wrong"]


def test_the_verdict_follows_the_contrasts():
    c = controls.load_controls()
    rng = np.random.default_rng(1)
    t = c.table.copy()
    t["note"] = t["no_note"].where(~t["escalated"], t["no_note"]) | (t["escalated"] & (rng.random(len(t)) < 0.4))
    assert controls.made_of_verdict(dataclasses.replace(c, table=t)) == "the note"
    t = c.table.copy()
    t["cascade"] = t["v6"]  # a cascade as good as the whole chain gains over the leader alone
    assert controls.made_of_verdict(dataclasses.replace(c, table=t)) == "a second solver"


def test_chapter_07s_caveat_follows_the_verdict():
    c = controls.load_controls()
    words = controls.describe_claims_caveat(c)
    if controls.made_of_verdict(c) == "a second look":
        assert "second look" in words and "exploratory" in words
    t = c.table.copy()
    t["cascade"] = t["v6"]
    assert "a second solver" in controls.describe_claims_caveat(dataclasses.replace(c, table=t))


def test_where_the_gain_comes_from_adds_up_on_the_committed_controls():
    """Chapter 06, 6.7: the parts printed add up to the whole gain, and the note's part is the
    preregistered primary's difference on the escalated problems, spread over all of them."""
    c = controls.load_controls()
    t, text = c.table, controls.describe_gain_parts(c)
    n, r = len(t), controls.primary(c.prereg, t)
    gain = t["v6"].mean() - t["alone_v5"].mean()
    look, note = t["second_look"].mean() - t["alone_v5"].mean(), t["stage1"].mean() - t["second_look"].mean()
    later = t["v6"].mean() - t["stage1"].mean()
    assert abs(note - r["diff"] * r["n"] / n) < 1e-9 and abs(look + note + later - gain) < 1e-9
    assert f"**Where gated LASE's {100 * gain:+.1f} points come from**" in text
    assert f"adds {100 * note:+.1f} on top (the preregistered primary's {100 * r['diff']:+.1f} points on the " \
           f"{r['n']} escalated problems, spread over all {n}" in text
    assert f"second look by the revision adapter with no note, behind the same gate, {100 * look:+.1f}" in text
    assert "exploratory, built after the results" in text
