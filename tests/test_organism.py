"""The model organism: its data recipe (deterministic, labels that point at real departures from
gold, notes that never give the answer format away) and the committed adapter, run for real."""

from __future__ import annotations

import json
import random
import re

import pytest

from lase_nb import organism, prompts
from lase_nb.organism import Step, gold_steps, label_attempt, solution_text

ATTEMPTS = organism.ORGANISM_DIR / "attempts.jsonl"


def _problems(n=120, seed=5):
    return organism.eval_problems(n, seed=seed)


def _wrong_variant(p, rng):
    """A wrong attempt of a known kind: a slipped result or a misread operand, later steps
    recomputed from the wrong value (as the solver's own errors are)."""
    gold = gold_steps(p)
    k = rng.randrange(len(gold))
    steps, x = [], gold[0].a
    for i, g in enumerate(gold):
        b = g.b
        if i == k and rng.random() < 0.5 and g.op != "/":
            b = g.b + rng.choice([1, 2, 3])
        c = {"+": x + b, "-": x - b, "*": x * b, "/": x // b if b else 0}[g.op]
        if i == k and b == g.b:
            c += rng.choice([-10, -1, 1, 10])
        steps.append(Step(x, g.op, b, c))
        x = c
    return steps, k


def test_recipe_is_deterministic():
    a = organism.solve_examples(20, seed=3)
    assert a == organism.solve_examples(20, seed=3)
    p = _problems(1)[0]
    text = solution_text(gold_steps(p))
    ex1 = organism.support_examples(p, text, random.Random(4))
    assert ex1 == organism.support_examples(p, text, random.Random(4))


def test_solutions_carry_the_last_operation_inside_the_box():
    for p in _problems(60):
        text = solution_text(gold_steps(p))
        last = text.splitlines()[-1]
        assert re.fullmatch(r"\d+ [+\-×÷] \d+ = \\boxed\{\d+\}", last), last
        assert last.endswith(f"\\boxed{{{p.gold}}}")
        # the result is computed inside the box: no earlier line ends with it
        earlier = text.splitlines()[:-1]
        assert all(not line.endswith(f"= {p.gold}") for line in earlier) or \
            any(s.c == int(p.gold) for s in gold_steps(p)[:-1])


def test_labels_point_at_the_first_step_that_departs_from_gold():
    rng = random.Random(0)
    seen = 0
    for p in _problems():
        gold = gold_steps(p)
        assert label_attempt(p, solution_text(gold)).status == "right"
        steps, k = _wrong_variant(p, rng)
        lab = label_attempt(p, solution_text(steps))
        if any(s.c <= 0 for s in steps):  # our generator never makes these; not a solver's attempt
            continue
        if steps[-1].c == int(p.gold):
            assert lab.status == "other"  # right answer by a wrong chain: never a training example
            continue
        seen += 1
        assert lab.status == "wrong" and lab.first_wrong == k
        assert lab.steps[k] != gold[k] and list(lab.steps[:k]) == gold[:k]
    assert seen > 80


@pytest.mark.skipif(not ATTEMPTS.is_file(), reason="no recorded attempts")
def test_recorded_attempts_are_labelled_against_gold():
    """The solver's own sampled attempts, as stage 2 was trained on them."""
    rows = [json.loads(x) for x in ATTEMPTS.read_text().splitlines()]
    by_id = {p.id: p for p in organism.sample_problems(len(rows))}
    kinds = {"right": 0, "wrong": 0}
    for r in rows:
        p = by_id[r["id"]]
        lab = label_attempt(p, r["text"])
        assert (lab.status, lab.first_wrong) == (r["status"], r["first_wrong"])
        if lab.status == "right":
            assert list(lab.steps) == gold_steps(p) and f"\\boxed{{{p.gold}}}" in r["text"]
        if lab.status == "wrong":
            k = lab.first_wrong
            assert k >= len(lab.steps) or lab.steps[k] != gold_steps(p)[k]
            assert list(lab.steps[:k]) == gold_steps(p)[:k]
        kinds[lab.status] = kinds.get(lab.status, 0) + 1
    assert kinds["right"] > 0 and kinds["wrong"] > 0


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_decompositions_are_arithmetically_right(op):
    rng = random.Random(op)
    for _ in range(300):
        a, b = rng.randint(2, 140), rng.randint(2, 25)
        if op == "-" and b >= a:
            a, b = b + a, b
        if op == "/":
            a = a * b
        text = organism.decompose(a, op, b)
        want = {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
        chain = text.split(",")[0]
        parts = [x.strip() for x in chain.split("=")]
        for part in parts:  # every link of the chain has the same value
            assert eval(part.replace("×", "*").replace("÷", "//")) == want, text
        assert parts[-1] == str(want)


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_column_working_is_right_digit_by_digit(op):
    """Every one-digit fact the column method writes is true, and it ends with the right value."""
    rng = random.Random(f"column{op}")
    for _ in range(400):
        a, b = rng.randint(0, 140), rng.randint(1, 30)
        if op == "-" and b > a:
            a, b = a + b, b
        if op == "/":
            a, b = a * (b % 9 + 1), b % 9 + 1
        if op == "*" and a >= 10 and b >= 10:
            continue
        text, c = organism.column(a, op, b)
        want = {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
        assert c == want and text.endswith(str(want)), text
        for x, o, y, z in re.findall(r"(\d+) ([+\-×÷]) (\d+)(?: [+\-] \d+)* = (\d+)", text):
            fact = re.search(rf"{x} {re.escape(o)} {y}((?: [+\-] \d+)*) = {z}", text).group(0)
            lhs = fact.split(" = ")[0].replace("×", "*").replace("÷", "//")
            assert eval(lhs) == int(z), (fact, text)
    assert organism.column(7, "/", 2) == ("7 ÷ 2 does not come out even", None)


def test_slipped_attempts_are_wrong_where_they_slip_and_carry_on():
    rng = random.Random(3)
    made = 0
    for p in _problems(60):
        text = organism.slipped_attempt(p, rng)
        if text is None:
            continue
        made += 1
        lab = label_attempt(p, text)
        assert lab.status == "wrong" and list(lab.steps[:lab.first_wrong]) == gold_steps(p)[:lab.first_wrong]
        for s, t in zip(lab.steps, lab.steps[1:]):  # later steps start from the (wrong) value before
            assert t.a == s.c
    assert made >= 50


def test_devil_note_compares_its_own_value_with_the_attempts():
    p = next(q for q in _problems(30) if len(gold_steps(q)) == 3)
    gold = gold_steps(p)
    bad = [gold[0], Step(gold[1].a, gold[1].op, gold[1].b, gold[1].c + 10)]
    x = bad[1].c
    c = {"+": x + gold[2].b, "-": x - gold[2].b, "*": x * gold[2].b, "/": x // gold[2].b}[gold[2].op]
    bad.append(Step(x, gold[2].op, gold[2].b, c))
    note = organism.devil_note(p, label_attempt(p, solution_text(bad)))
    lines = note.splitlines()
    assert lines[0].endswith(": same.") and lines[1].endswith(f"the attempt has {gold[1].c + 10}: different.")
    assert lines[-1] == f"Step 2 is wrong: it should be {gold[1]}."
    right = organism.devil_note(p, label_attempt(p, solution_text(gold)))
    assert all(line.endswith(": same.") for line in right.splitlines()[:-1])
    assert right.splitlines()[-1].startswith("No step is wrong; the riskiest is step ")


def test_notes_flag_wrong_steps_and_never_give_the_answer_format():
    rng = random.Random(1)
    for p in _problems(80):
        right = label_attempt(p, solution_text(gold_steps(p)))
        steps, _ = _wrong_variant(p, rng)
        if any(s.c <= 0 for s in steps):
            continue
        wrong = label_attempt(p, solution_text(steps))
        for role, note in organism.NOTES.items():
            for lab in (right, wrong):
                if lab.status == "other":
                    continue
                text = note(p, lab)
                assert "\\boxed" not in text and "final answer" not in text.lower()
                assert organism.note_flags(text) == (lab.status == "wrong"), (role, text)


def test_support_examples_use_the_pipelines_own_messages():
    p = _problems(1)[0]
    right = solution_text(gold_steps(p))
    roles = set()
    for seed in range(12):
        ex = organism.support_examples(p, right, random.Random(seed))
        (sup_msgs, note), (rev_msgs, revision) = ex
        role = next(r for r in prompts.SUPPORTERS if sup_msgs[0]["content"].startswith(prompts.SUPPORTER_ROLE[r]))
        roles.add(role)
        critique = organism.devil_note(p, label_attempt(p, right)) if role != "devil" else None
        hints = organism.collaborator_note(p, label_attempt(p, right)) if role == "expert" else None
        assert sup_msgs == prompts.supporter_messages(p, role, right, critique, hints)
        assert rev_msgs[:-1] == prompts.revise_messages(p, right, role, note, examples=0)[:-1]
        assert revision == right  # a right attempt is kept
    assert roles == set(prompts.SUPPORTERS)


def test_evaluation_problems_never_use_a_training_seed():
    with pytest.raises(ValueError):
        organism.eval_problems(5, seed=organism.SEEDS["solve"])
    from lase_nb.datasets import arithmetic_problems
    train = {p.question for p in organism.sample_problems(500)}
    train |= {p.question for p in arithmetic_problems(1500, seed=organism.SEEDS["solve"], levels=(1, 2, 3))}
    held = {p.question for p in organism.eval_problems(240)}
    shared = train & held  # small generated spaces: a few easy problems recur by chance
    assert len(shared) < 0.1 * len(held), len(shared)


@pytest.mark.slow
def test_the_organism_answers_with_a_confidence_and_runs_a_lase_chain():
    """On a fresh machine (CI) this merges the adapter; later runs reuse the merged folder, keyed
    by the adapter's hash."""
    if not organism.adapter_path().is_file():
        pytest.fail("data/organism/adapter_model.safetensors is missing")
    from lase_nb.backends.local import LocalBackend
    from lase_nb.engine import Engine
    from lase_nb.runner import run_problems
    from lase_nb.strategies import StrategyConfig, default_examples

    backend = LocalBackend("organism", max_batch=4)
    assert (backend.path / "lase_nb_conversion.json").is_file()
    assert default_examples("local", "organism") == 0
    p = organism.eval_problems(3)[1]  # a level-2 problem
    cfg = StrategyConfig(examples=0, full_chain=True, max_tokens=96, supporter_max_tokens=96)  # short notes suffice
    (res,) = run_problems("lase", [p], Engine(backend), cfg, progress=False)
    first = res.stages[0]
    assert first.answer is not None and first.p_min is not None and 0 < first.p_min <= 1
    assert not first.extracted  # the organism boxes its own answer
    assert [s.supporter for s in res.stages] == [None, "devil", "collaborator", "expert"]
    notes = [c.text for c in res.calls + res.recording_calls if c.role in organism.NOTES]
    assert len(notes) == 3 and all(c.leaked == 0 for c in res.calls + res.recording_calls)


def test_the_adapter_was_trained_on_the_prompts_the_pipeline_sends():
    """Changing a prompt the organism was trained on silently changes what it is asked: retrain."""
    manifest = organism.ORGANISM_DIR / "manifest.json"
    if not manifest.is_file():
        pytest.fail("data/organism/manifest.json is missing")
    trained = json.loads(manifest.read_text())["prompt_fingerprint"]
    assert organism.prompt_fingerprint() == trained, (
        "the prompts changed since the organism was trained; retrain it with data/organism/train.py")


def test_note_departure_is_stated_with_the_measured_counts():
    ev = {"chain": {"notes_with_final_answer": {"devil": {"k": 3, "n": 10, "rate": 0.3},
                                                "expert": {"k": 0, "n": 4, "rate": 0.0}}}}
    text = organism.describe_note_departure(ev)
    assert "3 of 10 devil notes (30%), 0 of 4 expert notes (0%)" in text
    assert "not measured yet" in organism.describe_note_departure(None)
