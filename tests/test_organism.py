"""The model organism: its data recipe (deterministic, labels that point at real departures from
gold, notes that point at an error and never state the answer, problems held out by content) and
the committed adapter, run for real."""

from __future__ import annotations

import json
import random
import re

import pytest

from lase_nb.organism import recipe as organism
from lase_nb import prompts
from lase_nb.backends.local.files import ORGANISM_DIR, organism_adapter_path
from lase_nb.datasets import arithmetic_problems, content_key
from lase_nb.notes import states_answer
from lase_nb.organism.recipe import Step, gold_steps, label_attempt, solution_text

ATTEMPTS = ORGANISM_DIR / "attempts.jsonl"


def _problems(n=120, seed=5):
    return organism.eval_problems(n, seed=seed)


def _attempts(n=150, seed=5):
    """Right attempts and slipped ones (the solver's kinds of error) on eval-split problems."""
    rng = random.Random(seed)
    out = []
    for p in _problems(n, seed):
        out.append((p, solution_text(gold_steps(p))))
        slip = organism.slipped_attempt(p, rng)
        if slip:
            out.append((p, slip))
    return out


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
    a = organism.solve_examples(organism.training_problems("solve", 20))
    assert a == organism.solve_examples(organism.training_problems("solve", 20))
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
    by_id = {p.id: p for p in organism.training_problems("sample", len(rows))}
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


def test_first_fault_names_the_step_and_the_kind():
    p = next(q for q in _problems(40) if len(gold_steps(q)) == 3 and gold_steps(q)[1].op in "+-")
    gold = gold_steps(p)
    assert organism.first_fault(p, label_attempt(p, solution_text(gold))) is None
    slip = [gold[0], Step(gold[1].a, gold[1].op, gold[1].b, gold[1].c + 10)]
    x = slip[1].c
    slip.append(Step(x, gold[2].op, gold[2].b, {"+": x + gold[2].b, "-": x - gold[2].b, "*": x * gold[2].b,
                                                "/": x // gold[2].b}[gold[2].op]))
    f = organism.first_fault(p, label_attempt(p, solution_text(slip)))
    assert (f.step, f.kind, f.written, f.expected) == (1, "result", slip[1], gold[1])
    misread = [gold[0], Step(gold[1].a, gold[1].op, gold[1].b + 1, gold[1].c + (1 if gold[1].op == "+" else -1))]
    f = organism.first_fault(p, label_attempt(p, solution_text(misread)))
    assert (f.step, f.kind) == (1, "operand")
    f = organism.first_fault(p, label_attempt(p, solution_text(gold[:2])))
    assert (f.step, f.kind) == (2, "missing")


def test_devil_note_checks_backwards_and_points_without_the_value():
    p = next(q for q in _problems(40) if len(gold_steps(q)) == 3 and gold_steps(q)[1].op in "+-")
    gold = gold_steps(p)
    bad = [gold[0], Step(gold[1].a, gold[1].op, gold[1].b, gold[1].c + 10)]
    attempt = solution_text(bad + [Step(bad[1].c, gold[2].op, gold[2].b, 1)])
    note = organism.devil_note(p, label_attempt(p, attempt))
    lines = note.splitlines()
    assert len(lines) == 3  # the checks stop at the first step that fails
    assert lines[0].endswith("it holds.") and lines[1].endswith("it fails.")
    assert lines[-1] == f"Step 2 fails: redo {bad[1].expr} column by column."
    assert str(gold[1].c) not in re.sub(r"Step \d+", "", note)  # never the step's right value
    right = organism.devil_note(p, label_attempt(p, solution_text(gold)))
    assert all(line.endswith("it holds.") for line in right.splitlines()[:-1])
    assert right.splitlines()[-1].startswith("Every step holds; the riskiest is step ")


def test_no_note_states_the_answer_and_each_flags_only_wrong_attempts():
    counts = {"right": 0, "wrong": 0}
    for p, attempt in _attempts():
        lab = label_attempt(p, attempt)
        if lab.status == "other":
            continue
        counts[lab.status] += 1
        for role, note in organism.NOTES.items():
            text = note(p, lab, attempt)
            assert "\\boxed" not in text and "final answer" not in text.lower()
            assert organism.note_flags(text) == (lab.status == "wrong"), (role, text)
            if lab.status == "wrong":
                assert organism.flagged_step(text) in (None, organism.first_fault(p, lab).step), text
    assert counts["right"] > 100 and counts["wrong"] > 100


def test_no_training_example_holds_a_note_that_states_the_answer():
    """Over the recipe's own output: every supporter target and every note shown to the leader."""
    rng = random.Random(0)
    n_notes = 0
    for p, attempt in _attempts(200, seed=9):
        for msgs, target in organism.support_examples(p, attempt, rng):
            system = msgs[0]["content"]
            if any(system.startswith(prompts.SUPPORTER_ROLE[r]) for r in prompts.SUPPORTERS):
                n_notes += 1
                assert not states_answer(target, p.gold, p.question, attempt), target
                for part in msgs[-1]["content"].split("\n\n")[2:]:  # earlier notes it reads
                    assert not states_answer(part, p.gold, p.question, attempt), part
            else:  # the revision request quotes the note the leader reads
                n_notes += 1
                assert not states_answer(msgs[-1]["content"], p.gold, p.question, attempt)
    assert n_notes > 500


def test_revisions_recompute_the_flagged_step_keep_a_right_answer_and_fix_a_wrong_one():
    rng = random.Random(2)
    kept = fixed = 0
    for p, attempt in _attempts(80, seed=4):
        lab = label_attempt(p, attempt)
        if lab.status == "other":
            continue
        k = organism.first_fault(p, lab).step if lab.status == "wrong" else rng.randrange(len(gold_steps(p)))
        text = organism.revision_text(p, lab, k)
        assert text.startswith(f"Step {k + 1} again: ")
        assert text.endswith(solution_text(gold_steps(p)))  # the whole chain, last operation in the box
        if lab.status == "right":
            assert "my answer stands" in text.splitlines()[0]
            kept += 1
        else:
            assert "so I change it" in text.splitlines()[0]
            fixed += 1
    assert kept > 30 and fixed > 30


def test_support_examples_use_the_pipelines_own_messages():
    p = _problems(1)[0]
    right = solution_text(gold_steps(p))
    lab = label_attempt(p, right)
    critique, hints = organism.devil_note(p, lab, right), organism.collaborator_note(p, lab, right)
    roles = set()
    for seed in range(20):
        ex = organism.support_examples(p, right, random.Random(seed))
        assert ex[0] == (prompts.supporter_messages(p, "devil", right), critique)
        for msgs, target in ex[1:-1]:
            role = next(r for r in prompts.SUPPORTERS if msgs[0]["content"].startswith(prompts.SUPPORTER_ROLE[r]))
            want = {"collaborator": prompts.supporter_messages(p, role, right, critique),
                    "expert": prompts.supporter_messages(p, role, right, critique, hints)}[role]
            assert msgs == want
        rev_msgs, revision = ex[-1]
        role = next(r for r in prompts.SUPPORTERS if f"{prompts.SUPPORTER_TITLES[r]} from a reviewer" in
                    rev_msgs[-1]["content"])
        roles.add(role)
        assert rev_msgs[:-1] == prompts.revise_messages(p, right, role, "x", examples=0)[:-1]
        assert revision.endswith(right) and "my answer stands" in revision  # a right attempt is kept
    assert roles == set(prompts.SUPPORTERS)


def test_evaluation_problems_share_no_template_and_numbers_with_any_training_set():
    """Held out by content, whatever the seeds: the manifest's training sets regenerate from its
    keyword arguments, and none of their problems is an evaluation problem."""
    manifest = json.loads((ORGANISM_DIR / "manifest.json").read_text())
    sets = manifest.get("training_sets", organism.TRAINING_SETS)
    key = lambda p: content_key(p.meta["template"], p.meta["start"], p.meta["ops"])  # noqa: E731
    train = set()
    for kw in sets.values():
        kw = dict(kw)
        train |= {key(p) for p in arithmetic_problems(kw.pop("n"), **kw)}
    assert len(train) > 1500
    for seed in organism.EVAL_SEEDS.values():
        held = {key(p) for p in organism.eval_problems(1000, seed=seed)}
        assert not train & held
    with pytest.raises(ValueError):
        organism.eval_problems(5, split="train")
    with pytest.raises(ValueError):
        organism.eval_problems(5, seed=101, split=None)  # the original generator mixes both parts


@pytest.mark.slow
def test_the_organism_answers_with_a_confidence_and_runs_a_lase_chain():
    """On a fresh machine (CI) this merges the adapter; later runs reuse the merged folder, keyed
    by the adapter's hash."""
    if not organism_adapter_path().is_file():
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
    manifest = ORGANISM_DIR / "manifest.json"
    if not manifest.is_file():
        pytest.fail("data/organism/manifest.json is missing")
    trained = json.loads(manifest.read_text())["prompt_fingerprint"]
    assert organism.prompt_fingerprint() == trained, (
        "the prompts changed since the organism was trained; retrain it with data/organism/train.py")


def test_the_answer_rule_is_stated_with_the_measured_counts():
    ev = {"chain": {"notes_stating_answer": {"devil": {"on_wrong": {"k": 1, "n": 40}, "other_on_right": {"k": 2, "n": 60}},
                                             "expert": {"on_wrong": {"k": 0, "n": 40}, "other_on_right": {"k": 0, "n": 60}}}}}
    text = organism.describe_answer_rule(ev)
    assert "devil: 1 of 40 notes on wrong attempts stated the answer, 2 of 60 on right ones handed over" in text
    assert "expert: 0 of 40" in text
    assert "not measured yet" in organism.describe_answer_rule(None)


def test_evaluation_problems_share_no_chain_with_any_training_problem():
    """What the draws guarantee, by the key they were made with (organism.draw_key); the commutative
    recount (organism.chain_key) is counted, not excluded: tests/test_controls.py."""
    trained = organism.training_draw_keys()
    keys = {content_key(p.meta["template"], p.meta["start"], p.meta["ops"])
            for name in organism.TRAINING_SETS for p in organism.training_problems(name)}
    for seed in (organism.EVAL_SEEDS["calibrate3"], organism.EVAL_SEEDS["record3"]):
        held = organism.eval_problems(900, seed=seed)
        assert not {organism.draw_key(p) for p in held} & trained
        assert not {content_key(p.meta["template"], p.meta["start"], p.meta["ops"]) for p in held} & keys
        assert [p.meta["level"] for p in held[:6]] == [1, 2, 3, 1, 2, 3]


def test_manifest_names_the_shipped_adapters_full_sha256():
    """The manifest's top-level ``adapter_sha256`` is the committed adapter file's (rounds that
    were not shipped keep theirs under ``variants_tried``)."""
    import hashlib
    import json

    from lase_nb.backends.local.files import ORGANISM_DIR

    manifest = json.loads((ORGANISM_DIR / "manifest.json").read_text())
    digest = hashlib.sha256((ORGANISM_DIR / "adapter_model.safetensors").read_bytes()).hexdigest()
    assert manifest["adapter_sha256"] == digest
