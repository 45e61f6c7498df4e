"""Round 3 of the model organism (the careful method, tried and not shipped): the careful line and
its reader, the unit steps held out by step, the roles' training examples (no note states the
answer, revisions carry what they recompute, follow-ups keep their own format) and the held-out
problems that repeat no earlier recording's chain."""

from __future__ import annotations

import json
import random
import sys

import pytest

from lase_nb import prompts
from lase_nb.backends.local.files import ORGANISM_DIR
from lase_nb.errors import DataError
from lase_nb.notes import states_answer
from lase_nb.organism import recipe as organism
from lase_nb.organism.recipe import gold_steps, label_attempt, solution_text
from lase_nb.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "data" / "organism"))  # round 3 left the package: data/organism/round3.py
import round3  # noqa: E402


@pytest.mark.parametrize("a, op, b, value", [
    (47, "+", 38, 85), (95, "+", 17, 112), (8, "+", 5, 13), (52, "-", 17, 35), (23, "-", 18, 5),
    (112, "-", 5, 107), (7, "*", 12, 84), (34, "*", 7, 238), (6, "*", 7, 42), (112, "/", 7, 16),
    (412, "/", 4, 103), (42, "/", 7, 6)])
def test_the_careful_method_works_each_kind_of_step_out_right(a, op, b, value):
    work, got = round3.careful(a, op, b)
    assert got == value and work.startswith(f"{a} ") and work.endswith(f"so {value}")
    read = round3.read_careful(work)
    assert read.right and read.facts_true and read.value == value


def test_a_careful_line_is_checked_fact_by_fact():
    slip = round3.read_careful("21 + 9: ones 1 + 9 = 11, write 1 carry 1; tens 2 + 0 + 1 = 3, write 3; so 31")
    assert not slip.facts_true and slip.first_false == "1 + 9 = 11" and not slip.right
    # every fact true, the assembly wrong: the v5 organism's "21 + 9 ... so 100"
    assembly = round3.read_careful("21 + 9: ones 1 + 9 = 10, write 0 carry 1; tens 2 + 0 + 1 = 3, write 3; so 100")
    assert assembly.facts_true and assembly.value == 100 and not assembly.right
    assert round3.read_careful("no working here") is None
    uneven = round3.careful(50, "/", 4)
    assert uneven[1] is None and "does not come out even" in uneven[0]


def test_unit_steps_are_split_so_no_measured_step_was_trained():
    train = round3.unit_steps(600, seed=211, split="train")
    held = round3.unit_steps(300, seed=31, split="eval")
    key = lambda s: (s.a, s.op, s.b)  # noqa: E731
    assert len({key(s) for s in train}) == 600 and len({key(s) for s in held}) == 300
    assert not {key(s) for s in train} & {key(s) for s in held}
    assert {s.op for s in held} == {"+", "-", "*", "/"}
    shaped = round3.unit_steps(600, seed=211, split="train", shapes="problems")
    assert len({key(s) for s in shaped}) == 600 and not {key(s) for s in shaped} & {key(s) for s in held}
    assert sum(s.a < 10 for s in shaped) > 30  # one-digit first operands, as the problems' steps have
    with pytest.raises(ValueError, match="shapes"):
        round3.unit_steps(5, seed=1, split="train", shapes="nonsense")


def _round3(n=80, seed=7):
    rng = random.Random(seed)
    out = []
    for p in organism.training_problems("sample3", n):
        right = solution_text(gold_steps(p))
        slip = organism.slipped_attempt(p, rng) or right
        for attempts in ([slip, right, right], [right, slip, right]):
            out += [(p, attempts, role, ex) for role, ex in round3.round3_examples(p, attempts, rng)]
    return out


def test_no_round3_training_note_states_the_answer_and_every_role_is_trained():
    examples = _round3()
    roles = {role for _, _, role, _ in examples}
    assert {"devil", "revision", "mad", "moa"} <= roles
    for p, attempts, role, (msgs, target) in examples:
        if role in organism.NOTES:
            assert not states_answer(target, p.gold, p.question, attempts[0]), target
        if role == "revision":
            note = msgs[-1]["content"]
            assert not states_answer(note, p.gold, p.question, attempts[0]), note


def test_round3_revisions_carry_what_they_recompute_and_box_the_chains_end():
    changed = kept = 0
    for p, attempts, role, (msgs, target) in _round3():
        if role != "revision":
            continue
        note = msgs[-1]["content"]
        read = round3.read_revision(p, attempts[0], note, target)
        assert not read["contradicts"], target
        if read["recomputed"]:
            assert read["recomputed_right"]
        if read["changed"]:
            changed += 1
            assert read["carried"] and read["box_is_chain_end"]
            assert organism.label_attempt(p, target.split("\n", 1)[1]).status == "right"
        elif read["recomputed"]:
            kept += 1
            assert target.split("\n", 1)[1] == solution_text(organism.parse_steps(attempts[0]))
    assert changed and kept


def test_a_revision_that_drops_its_recomputation_is_counted_as_contradicting_itself():
    p = organism.training_problems("sample3", 4)[0]
    right = solution_text(gold_steps(p))
    slip = organism.slipped_attempt(p, random.Random(1))
    label = label_attempt(p, slip)
    note = round3.careful_devil_note(p, label)
    good = round3.carrying_revision(p, label, organism.flagged_step(note))
    dropped = good.split("\n")[0] + "\n" + slip  # "step k becomes ..." and then the old chain
    assert not round3.read_revision(p, slip, note, good)["contradicts"]
    read = round3.read_revision(p, slip, note, dropped)
    assert read["changed"] and not read["carried"] and read["contradicts"]
    assert round3.read_revision(p, right, "Every step holds.", f"No step is shown to fail, so my answer stands.\n{right}")["flagged"] is None


def test_follow_ups_are_trained_in_their_own_format_never_in_lases():
    seen = set()
    for _, _, role, (msgs, target) in _round3():
        if role in ("mad", "down"):
            assert round3.follow_up_format(target, "peers") == "own", target
        elif role in ("moa", "down_judge"):
            assert round3.follow_up_format(target, "aggregate") == "own", target
        else:
            continue
        seen.add(role)
    assert seen == {"mad", "down", "moa", "down_judge"}
    assert round3.follow_up_format("Step 1 again again: 3 + 4", "aggregate") == "lase"
    assert round3.follow_up_format("The answer is 7.", "peers") == "other"


def test_the_devil_rechecks_a_failing_check_before_it_reports():
    p = next(q for q in organism.training_problems("sample3", 40) if len(gold_steps(q)) >= 2)
    label = label_attempt(p, solution_text(gold_steps(p)))
    note = round3.careful_devil_note(p, label, slip_at=0, slip=1)
    assert "check again" in note and "the first check slipped" in note
    assert not organism.note_flags(note)  # the recheck holds, so nothing is reported as failing


@pytest.mark.slow
def test_each_strategys_follow_up_on_the_organism_is_what_its_manifest_says():
    """One real call each: a MAD/DOWN debater reading its peers, and a MoA aggregator (or DOWN's
    judge) reading candidates, on the committed adapter. An adapter whose recipe trained every
    strategy's roles (round 3's ``roles_trained``) answers each in its own format; one trained for
    LASE's roles only (v5, shipped while round 3 missed its targets) does not, which is why the
    chapters mark its baselines not comparable."""
    from lase_nb.backends.local import LocalBackend
    from lase_nb.types import GenParams

    p = organism.eval_problems(6, seed=organism.EVAL_SEEDS["calibrate3"])[4]  # a level-2 problem
    right = solution_text(gold_steps(p))
    slip = organism.slipped_attempt(p, random.Random(0))
    params = GenParams(temperature=0.0, max_tokens=200, top_logprobs=0)
    requests = [
        (prompts.peers_messages(p, slip, [right, right], examples=0), params),
        (prompts.peers_messages(p, slip, [right, right], [0.9, 0.8], examples=0), params),
        (prompts.aggregate_messages(p, [slip, right, right], examples=0), params),
        (prompts.aggregate_messages(p, [slip, right, right], prompts.JUDGE_SYSTEM, examples=0), params),
    ]
    gens = LocalBackend("organism", max_batch=4).generate_many(requests)
    kinds = ["peers", "peers", "aggregate", "aggregate"]
    formats = [round3.follow_up_format(g.text, k) for g, k in zip(gens, kinds)]
    trained_all = "roles_trained" in json.loads((ORGANISM_DIR / "manifest.json").read_text())["recipe"]
    if trained_all:
        assert formats == ["own"] * 4, [g.text for g in gens]
    else:
        assert formats != ["own"] * 4, [g.text for g in gens]


def test_round3_held_out_problems_repeat_no_chain_recorded_before():
    """Round 3's recordings draw from a list that shares no chain (and so no problem) with any
    earlier recording, either calibration seed or any training set; a shorter list is a prefix."""
    from lase_nb.runs import problems_from_manifest

    held = round3.held_out_problems(240)
    assert [p.id for p in round3.held_out_problems(60)] == [p.id for p in held[:60]]
    before = round3.chains_recorded_before_r3()
    assert len(before) > 1000  # the earlier recordings and both calibration pools are read
    assert not {organism.draw_key(p) for p in held} & (before | organism.training_draw_keys())
    for m in sorted((REPO_ROOT / "data" / "traces" / "arith-organism-point")
                    .rglob("manifest.json")):
        questions = {p.question for p in problems_from_manifest(json.loads(m.read_text())).values()}
        assert questions and not questions & {p.question for p in held}
    # a manifest naming the list regenerates it, offset included
    again = problems_from_manifest({"problem_set": "organism-held-out-r3", "seed": organism.EVAL_SEEDS["record3"],
                                    "n": 40, "offset": 200})
    assert list(again) == [p.id for p in held[200:240]]
    assert list(problems_from_manifest({"problem_set": "organism-eval", "seed": 31, "n": 5, "levels": [1, 2, 3]})) == \
        [p.id for p in organism.eval_problems(5, seed=31)]
    with pytest.raises(DataError, match="problem_set"):
        problems_from_manifest({"problem_set": "nonsense", "n": 3})
