"""LASE's ceiling with a given leader: its revision after a *perfect* supporter's note.

A supporter that keeps the paper's rule (it never states the final answer) can at best point at
the first step of the leader's attempt that fails and say what is wrong with it. For arithmetic
problems whose chain is known (``problem.meta["start"]`` and ``["ops"]``), this module writes that
note by code, sends it through the leader's real LASE revision call (the revision prompt of
:func:`lase_nb.prompts.revise_messages`, one call, the recorded first attempt) and counts what the
leader does with it. No trained supporter can point better than these notes, so what the leader
makes of them bounds what LASE can gain with that leader (the paper's Appendix H names the
failure this measures: "execution failure post-critique").

Notes, by variant:

* ``a``: the first failing step only ("Step 2 is wrong; step 1 checks out.");
* ``b``: the step and the kind of error (a misread quantity, the wrong operation, an arithmetic
  slip, a step that does not start from the previous result, a missing step);
* ``c``: also that step's right value, when the step is not the last (an intermediate value is not
  the final answer). A stronger supporter than the paper's prompts ask for.

On a right first answer the note says every step checks out (``clear``); to measure breaks, a
false alarm names a random step as wrong, in the words of variant ``a`` (``alarm-a``) or ``b``
with the commonest kind, an arithmetic slip (``alarm-b``).

Every note is checked against the rule as code (:func:`obeys_rule`): it never writes ``\\boxed``
and never states the gold answer (:func:`lase_nb.notes.states_answer`). A value of variant ``c``
that equals the final answer is dropped (the note falls back to variant ``b``) and counted.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
from tqdm import tqdm

from ..answers import extract_answer, grade
from ..engine import Call, Engine
from ..notes import states_answer
from .recipe import Label, first_fault, gold_steps, label_attempt
from .recipe import _expected as expected_steps
from ..paths import DATA_DIR
from ..prompts import revise_messages, solver_messages
from ..stats import wilson_interval
from ..types import Problem

__all__ = [
    "CEILING_DIR", "KINDS", "VARIANTS", "RIGHT_VARIANTS", "STOP_RULE", "Case", "error_kind", "perfect_note", "clear_note",
    "false_alarm_note", "obeys_rule", "cases_from_run", "first_attempts", "first_answers", "step_accuracy", "send", "outcome", "ceiling_table", "right_table",
    "stop_rule", "kinds_table", "load_rows", "rescore", "summary", "markdown", "verdict",
]

#: Kinds of first error, in the words a note of variant ``b`` uses.
KINDS = {
    "slip": "the arithmetic slips: the numbers and the operation are right, the result is not",
    "operation": "it uses the wrong operation for what the problem describes",
    "misread": "it takes a quantity from the problem wrongly",
    "carry": "it does not start from the result of the step before it",
    "missing": "the solution stops before this step",
}
#: The order of the measurements in the tables (others follow by name).
ORDER = ("organism", "smollm2", "noop-organism", "noop-smollm2", "organism-pilot")
#: The verdict quotes the best fix rate among kinds with at least this many wrong first answers.
MIN_KIND = 10
#: Where ``benchmarks/ceiling.py`` writes the committed measurement (chapter 06 reads it).
CEILING_DIR = DATA_DIR / "ceiling"
#: Note variants on a wrong first answer.
VARIANTS = ("a", "b", "c")
#: Notes on a right first answer: all clear, and false alarms worded as variants a and b.
RIGHT_VARIANTS = ("clear", "alarm-a", "alarm-b")
#: The stop rule of the study, fixed before any note was sent: train supporters only for a kind
#: whose leader fixes at least ``fix`` of its wrong first answers after a note of variant a or b
#: and breaks at most ``break_`` of right first answers after a false alarm of that variant.
STOP_RULE = {"fix": 0.60, "break_": 0.05, "variants": ("a", "b")}


def error_kind(fault_kind: str, step: int) -> str:
    """The note's kind of error for a :class:`~lase_nb.organism.recipe.Fault`: a wrong operand, or a wrong
    start at step 1, is a misread quantity; a wrong start later is a value not carried."""
    if fault_kind == "result":
        return "slip"
    if fault_kind == "operand" or (fault_kind == "start" and step == 0):
        return "misread"
    if fault_kind == "start":
        return "carry"
    return fault_kind  # "operation", "missing"


def _earlier(k: int) -> str:
    if k == 0:
        return ""
    if k == 1:
        return " Step 1 checks out."
    return f" Steps 1 {'and' if k == 2 else 'to'} {k} check out."


def perfect_note(problem: Problem, label: Label, variant: str) -> tuple[str, str]:
    """The perfect note on a wrong attempt and the kind of its first error.

    Variant ``c`` adds the failing step's right value only when the step is not the last and the
    value is not the final answer; otherwise the note is variant ``b``'s."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown note variant {variant!r}; use one of {', '.join(VARIANTS)}")
    fault = first_fault(problem, label)
    if fault is None:
        raise ValueError(f"{problem.id}: the attempt has no failing step; use clear_note")
    kind = error_kind(fault.kind, fault.step)
    n = fault.step + 1
    note = (f"The solution stops before step {n}." if kind == "missing" else f"Step {n} is wrong.")
    note += _earlier(fault.step)
    if variant in ("b", "c") and kind != "missing":
        note += f" In step {n}, {KINDS[kind]}."
    if variant == "c":
        last = fault.step >= len(gold_steps(problem)) - 1
        value = fault.expected.c
        if not last and value >= 0 and str(value) != str(problem.gold).strip():
            note += f" Step {n} should come to {value}."
    return note + " Redo it and carry the change through the later steps.", kind


def clear_note(label: Label) -> str:
    """The perfect note on a right attempt: every step checks out."""
    n = len(label.steps)
    return f"I checked all {n} steps: every step checks out." if n > 1 else "I checked the step: it checks out."


def false_alarm_note(label: Label, variant: str, rng: random.Random) -> tuple[str, int]:
    """A false alarm on a right attempt: a random step named as wrong, worded as variant ``a``
    (``alarm-a``) or as variant ``b`` with an arithmetic slip (``alarm-b``); and that step (from 0)."""
    k = rng.randrange(max(1, len(label.steps)))
    n = k + 1
    note = f"Step {n} is wrong.{_earlier(k)}"
    if variant == "alarm-b":
        note += f" In step {n}, {KINDS['slip']}."
    elif variant != "alarm-a":
        raise ValueError(f"unknown false alarm {variant!r}; use alarm-a or alarm-b")
    return note + " Redo it and carry the change through the later steps.", k


def obeys_rule(note: str, problem: Problem, attempt: str) -> bool:
    """The paper's rule as code: the note writes no ``\\boxed`` and does not state the gold answer
    (a number in neither the problem nor the attempt it reads)."""
    return "\\boxed" not in note and not states_answer(note, problem.gold, problem.question, attempt)


@dataclass(frozen=True)
class Case:
    """One note sent to the leader: the problem, its recorded first attempt and the note."""

    problem: Problem
    attempt: str
    first_correct: bool
    first_answer: str | None
    variant: str
    note: str
    kind: str  # the first error's kind; "right" on a right attempt
    step: int | None  # the step the note names (from 0); None for an all-clear note


def cases_from_run(attempts: Iterable[tuple[Problem, str, str | None, bool]], seed: int = 0,
                   variants: Sequence[str] = VARIANTS, right_variants: Sequence[str] = RIGHT_VARIANTS,
                   ) -> tuple[list[Case], Counter]:
    """The notes for a run's first attempts ``(problem, text, answer, correct)``.

    Attempts whose chain cannot be compared (no steps written, a right answer by another chain)
    are skipped; the returned counter says how many of each status there were, and how many notes
    of variant ``c`` carry no value (``c_without_value``: the failing step is the last one, or its
    value equals the final answer)."""
    cases: list[Case] = []
    seen: Counter = Counter()
    for problem, text, answer, correct in attempts:
        label = label_attempt(problem, text)
        if correct and label.status == "right":
            seen["right"] += 1
            for v in right_variants:
                if v == "clear":
                    cases.append(Case(problem, text, True, answer, v, clear_note(label), "right", None))
                else:
                    note, k = false_alarm_note(label, v, random.Random(f"{seed}:{problem.id}"))
                    cases.append(Case(problem, text, True, answer, v, note, "right", k))
        elif not correct and label.status == "wrong":
            seen["wrong"] += 1
            for v in variants:
                note, kind = perfect_note(problem, label, v)
                if v == "c" and "should come to" not in note:
                    seen["c_without_value"] += 1
                cases.append(Case(problem, text, False, answer, v, note, kind,
                                  first_fault(problem, label).step))
        else:
            seen["right_other_chain" if correct else "wrong_unparsed"] += 1
    for c in cases:
        if not obeys_rule(c.note, c.problem, c.attempt):
            raise AssertionError(f"{c.problem.id}: a perfect note broke the rule: {c.note!r}")
    return cases, seen


def first_attempts(run: Any, problems: Mapping[str, Problem]) -> list[tuple[Problem, str, str | None, bool]]:
    """A LASE run's first attempts: ``(problem, the leader's stage-0 text, its graded answer,
    whether it was right)`` for every problem whose chain is known."""
    calls = run.calls
    first = calls[(calls["role"] == "leader") & (calls["stage"] == 0)].drop_duplicates("problem_id")
    stage0 = run.stages[run.stages["stage"] == 0].set_index("problem_id") if len(run.stages) else None
    out = []
    for row in first.itertuples():
        p = problems.get(row.problem_id)
        if p is None or "ops" not in (p.meta or {}):
            continue
        if stage0 is not None and row.problem_id in stage0.index:
            answer, correct = stage0.at[row.problem_id, "answer"], bool(stage0.at[row.problem_id, "correct"])
        else:
            answer, correct = row.answer, bool(grade(row.answer, p.gold, p.kind))
        answer = None if answer is None or (isinstance(answer, float) and answer != answer) else str(answer)
        out.append((p, row.text, answer, correct))
    return out


def first_answers(engine: Engine, problems: Sequence[Problem], params: Any, examples: int
                  ) -> list[tuple[Problem, str, str | None, bool]]:
    """The leader's first answers, as LASE's stage 0 asks them (the solver prompt), for problems
    that were never recorded: ``(problem, text, boxed answer, right)``; an unboxed reply is wrong."""
    calls = [Call("leader", 0, solver_messages(p, examples=examples), params) for p in problems]
    out = []
    for p, g in zip(problems, engine.run(calls)):
        found = extract_answer(g.text, p.kind)
        answer = None if found is None else found.text
        out.append((p, g.text, answer, answer is not None and grade(answer, p.gold, p.kind)))
    return out


def step_accuracy(attempts: Iterable[tuple[Problem, str, str | None, bool]]) -> tuple[int, int]:
    """(right results, steps) over the written steps whose numbers and operation are the ones the
    problem asks for at that point (given the attempt's own earlier results): how reliably the
    model computes the arithmetic it sets up, in its own quick one-line form."""
    right = total = 0
    for problem, text, _, _ in attempts:
        label = label_attempt(problem, text)
        if not label.steps:
            continue
        for got, want in zip(label.steps, expected_steps(problem, label)):
            if (got.a, got.op, got.b) == (want.a, want.op, want.b) and want.c >= 0:
                total += 1
                right += got.c == want.c
    return right, total


def send(engine: Engine, cases: Sequence[Case], params: Any, examples: int, model: str,
         progress: bool = False) -> pd.DataFrame:
    """Each note through the leader's real revision call (as LASE's devil stage sends it: the
    solver prompt, the recorded attempt, the note as a critique); one row per note. All calls go
    to the engine at once, so the local backend keeps its batch full."""
    calls = [Call("leader", 1, revise_messages(c.problem, c.attempt, "devil", c.note, examples=examples),
                  params, reads=("devil",)) for c in cases]
    with tqdm(total=len(calls), desc=f"{model}: notes", unit="call", disable=not progress) as bar:
        gens = engine.run(calls, on_result=lambda i, gen: bar.update())
    rows = []
    for c, g in zip(cases, gens):
        result, answer = outcome(c.first_correct, c.first_answer, g.text, c.problem.gold, c.problem.kind)
        rows.append({"model": model, "problem_id": c.problem.id, "gold": c.problem.gold,
                     "level": (c.problem.meta or {}).get("level"),
                     "first_correct": c.first_correct, "first_answer": c.first_answer, "kind": c.kind,
                     "variant": c.variant, "step": c.step, "note": c.note, "revision": g.text,
                     "answer": answer, "outcome": result, "completion_tokens": g.completion_tokens})
    return pd.DataFrame(rows)


def outcome(first_correct: bool, first_answer: str | None, revised_text: str, gold: str, kind: str = "number"
            ) -> tuple[str, str | None]:
    """What the revision did, and its answer: ``fixed`` / ``kept`` / ``changed`` (to another wrong
    answer) on a wrong attempt, ``kept`` / ``broken`` on a right one, ``unboxed`` when the
    revision gives no answer. An answer stated in words ("The answer is 8") counts, as LASE's
    answer-extraction step would recover it (:func:`lase_nb.answers.extract_answer`, ``stated``)."""
    found = extract_answer(revised_text, kind, stated=True)
    if found is None:
        return "unboxed", None
    answer = found.text
    right = grade(answer, gold, kind)
    if first_correct:
        return ("kept" if right else "broken"), answer
    if right:
        return "fixed", answer
    same = first_answer is not None and grade(answer, first_answer, kind)
    return ("kept" if same else "changed"), answer


def rate(k: int, n: int) -> str:
    if not n:
        return "-"
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} = {100 * k / n:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def ceiling_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Wrong first answers: per model, kind of error and variant, how many the perfect note fixed,
    kept, changed to another wrong answer or left unboxed (the fix rate with its Wilson interval).
    ``rows`` has one row per note: ``model``, ``kind``, ``variant``, ``first_correct``, ``outcome``."""
    wrong = rows[~rows["first_correct"].astype(bool)]
    out = []
    for (model, kind, variant), g in wrong.groupby(["model", "kind", "variant"], sort=False):
        counts = g["outcome"].value_counts()
        n = len(g)
        out.append({"model": model, "kind": kind, "variant": variant, "n": n,
                    "fixed": int(counts.get("fixed", 0)), "kept": int(counts.get("kept", 0)),
                    "changed": int(counts.get("changed", 0)), "unboxed": int(counts.get("unboxed", 0)),
                    "fix rate [95% CI]": rate(int(counts.get("fixed", 0)), n)})
    return pd.DataFrame(out)


def right_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Right first answers: per model and note (all clear, false alarm a or b), how many the
    revision kept, broke or left unboxed (the break rate with its Wilson interval)."""
    right = rows[rows["first_correct"].astype(bool)]
    out = []
    for (model, variant), g in right.groupby(["model", "variant"], sort=False):
        counts = g["outcome"].value_counts()
        n = len(g)
        out.append({"model": model, "note": variant, "n": n, "kept": int(counts.get("kept", 0)),
                    "broken": int(counts.get("broken", 0)), "unboxed": int(counts.get("unboxed", 0)),
                    "break rate [95% CI]": rate(int(counts.get("broken", 0)), n)})
    return pd.DataFrame(out)


def stop_rule(rows: pd.DataFrame, rule: Mapping[str, Any] = STOP_RULE) -> pd.DataFrame:
    """Per model, kind and variant of :data:`STOP_RULE`: the fix rate, the break rate after that
    variant's false alarm (a broken or unboxed right answer counts as broken), and whether both
    meet the rule. Point estimates, as the rule is stated; the tables carry the intervals."""
    out = []
    for model, m in rows.groupby("model", sort=False):
        right = m[m["first_correct"].astype(bool)]
        wrong = m[~m["first_correct"].astype(bool)]
        for variant in rule["variants"]:
            alarm = right[right["variant"] == f"alarm-{variant}"]
            broken = float((alarm["outcome"] != "kept").mean()) if len(alarm) else float("nan")
            for kind, g in wrong[wrong["variant"] == variant].groupby("kind", sort=False):
                fix = float((g["outcome"] == "fixed").mean())
                out.append({"model": model, "kind": kind, "variant": variant, "wrong": len(g),
                            "fixed": round(fix, 3), "right": len(alarm), "broken after alarm": round(broken, 3),
                            "meets rule": bool(fix >= rule["fix"] and broken <= rule["break_"])})
    return pd.DataFrame(out)


def kinds_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The first errors by kind, per model (one count per wrong first answer)."""
    wrong = rows[~rows["first_correct"].astype(bool)].drop_duplicates(["model", "problem_id"])
    return wrong.groupby(["model", "kind"]).size().unstack(fill_value=0)


def load_rows(folder: Any = None, names: Sequence[str] | None = None) -> pd.DataFrame:
    """The notes' rows written by ``benchmarks/ceiling.py`` (every ``*.jsonl`` of ``folder``,
    default :data:`CEILING_DIR`, or those named), one frame; an empty frame when there are none."""
    from pathlib import Path

    folder = CEILING_DIR if folder is None else folder
    order = {name: i for i, name in enumerate(ORDER)}
    files = (sorted(Path(folder).glob("*.jsonl"), key=lambda f: (order.get(f.stem, len(order)), f.stem))
             if names is None else [Path(folder) / f"{n}.jsonl" for n in names])
    frames = [pd.read_json(f, lines=True, dtype={"answer": str, "first_answer": str}) for f in files if f.is_file()]
    if not frames:
        return pd.DataFrame()
    rows = pd.concat(frames, ignore_index=True)
    return rescore(rows)


def rescore(rows: pd.DataFrame, gold: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The rows' ``outcome`` and ``answer`` computed again from their revision texts by
    :func:`outcome` (so a recording is scored by today's rule); ``gold`` by problem id, else the
    rows' own ``gold`` column."""
    rows = rows.copy()
    golds = rows["problem_id"].map(gold) if gold is not None else rows["gold"]
    scored = [outcome(bool(fc), None if fa is None or fa != fa else str(fa), rev, str(g))
              for fc, fa, rev, g in zip(rows["first_correct"], rows["first_answer"], rows["revision"], golds)]
    rows["outcome"] = [o for o, _ in scored]
    rows["answer"] = [a for _, a in scored]
    return rows


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """One line per model and kind of first error: how many wrong first answers, and how many the
    perfect note of each variant fixed; then one line per model for its right first answers: how
    many the false alarm worded as (a) and as (b) broke (or left without an answer), and how many
    the all-clear note kept (in column (c))."""
    out = []
    for model, m in rows.groupby("model", sort=False):
        wrong = m[~m["first_correct"].astype(bool)]
        for kind, g in wrong.groupby("kind", sort=False):
            line = {"model": model, "first answer": f"wrong: {kind}", "n": int(g["problem_id"].nunique())}
            for v in VARIANTS:
                x = g[g["variant"] == v]
                line[f"note ({v})"] = f"fixed {int((x['outcome'] == 'fixed').sum())}/{len(x)}" if len(x) else "-"
            out.append(line)
        right = m[m["first_correct"].astype(bool)]
        if len(right):
            line = {"model": model, "first answer": "right", "n": int(right["problem_id"].nunique())}
            for col, name in (("note (a)", "alarm-a"), ("note (b)", "alarm-b")):
                x = right[right["variant"] == name]
                line[col] = f"alarm broke {int((x['outcome'] != 'kept').sum())}/{len(x)}" if len(x) else "-"
            x = right[right["variant"] == "clear"]
            line["note (c)"] = f"all clear kept {int((x['outcome'] == 'kept').sum())}/{len(x)}" if len(x) else "-"
            out.append(line)
    return pd.DataFrame(out)


def markdown(table: pd.DataFrame) -> str:
    """A table as a Markdown pipe table (printed by benchmarks/ceiling.py beside the verdict)."""
    head = "| " + " | ".join(map(str, table.columns)) + " |"
    rule = "|" + "---|" * len(table.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def verdict(rows: pd.DataFrame, rule: Mapping[str, Any] = STOP_RULE) -> str:
    """The stop rule's outcome in words, from the rows: which model and kind of error meet it, or
    that none does (then no supporter is worth training for these leaders)."""
    table = stop_rule(rows, rule)
    if table.empty:
        return "No notes were sent, so the stop rule cannot be read."
    met = table[table["meets rule"]]
    head = (f"Stop rule (fixed before any note was sent): a note of variant a or b fixes at least "
            f"{rule['fix']:.0%} of a kind's wrong first answers, and the same variant's false alarm "
            f"breaks at most {rule['break_']:.0%} of right ones. ")
    sized = table[table["wrong"] >= MIN_KIND]
    pool, among = (sized, f" among kinds with at least {MIN_KIND} wrong first answers") if len(sized) else (table, "")
    best = pool.sort_values("fixed", ascending=False).iloc[0]
    if met.empty:
        return head + (f"No model and kind meets it: the best fix rate{among} is {best['fixed']:.0%} "
                       f"({best['model']}, {best['kind']}, variant {best['variant']}, {best['wrong']} wrong "
                       f"first answers), with {best['broken after alarm']:.0%} of right answers broken (or left "
                       f"without an answer) by that variant's false alarm.")
    def named(frame: pd.DataFrame) -> str:
        return "; ".join(f"{r['model']}, {r['kind']}, variant {r['variant']} ({r['fixed']:.0%} fixed of {r['wrong']}, "
                         f"{r['broken after alarm']:.0%} broken)" for _, r in frame.iterrows())

    decided = met[met["wrong"] >= MIN_KIND]
    if decided.empty:
        return head + (f"No kind with at least {MIN_KIND} wrong first answers meets it (the best such fix rate is "
                       f"{best['fixed']:.0%}: {best['model']}, {best['kind']}, variant {best['variant']}, "
                       f"{best['wrong']} wrong first answers); met only where too few answers decide nothing: "
                       f"{named(met)}.")
    return head + "Met by: " + named(decided) + "."


def write_between_markers(path: Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in ``path`` (a
    README) by ``body``; a file without both markers is left as it is."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = path.read_text()
    if start in text and end in text:
        head, rest = text.split(start, 1)
        path.write_text(f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}")
