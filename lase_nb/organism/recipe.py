"""The model organism: what the small trained model writes, and the data recipe that teaches it.

The embedded 135M model cannot revise, so every real-model chapter sees LASE fail on it. The
organism is the same model with a LoRA adapter trained here (``data/organism/train.py``) on this
project's generated arithmetic problems, so that the corrective regime of the theory (a correct
seed among the supporters' notes, and a leader that uses it) can be tried offline (whether it
appears is measured: `data/organism/README.md`).

What it is taught, in the exact messages LASE's pipeline sends (rendered with :mod:`lase_nb.prompts`),
on problems of the generator's "train" split only (:data:`TRAINING_SETS`):

* **solve**: one step per line, ``a op b = c``, the last operation carried out inside the box
  (``17 × 4 = \\boxed{68}``), so the answer tokens carry the uncertainty the gate reads;
* **notes that point and never tell** (the paper's rule, Appendix D: "Do NOT give the final
  answer"), on the trained solver's own sampled attempts, each labelled against the generator's
  gold chain (:func:`label_attempt`, :func:`first_fault`), and on slipped variants of the ones it
  got right (:func:`slipped_attempt`): the devil's advocate checks each written step by where its
  numbers come from and by taking its result back through the inverse operation, digit by digit
  (:func:`column`), up to the first step that fails, and names what to redo without its value; the
  collaborator gives a method for that step; the senior expert names the concept it needs. No
  training note states the answer (:func:`lase_nb.notes.states_answer`);
* **revise**: the flagged step redone column by column, kept when that agrees with the attempt
  (also after a false alarm), changed and carried through the later steps when it does not
  (:func:`revision_text`).

Everything here is deterministic given its seed. Round 3 (the careful method, tried on top of v5's
adapter and not shipped) is ``data/organism/round3.py``, beside its stored evaluation.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .. import prompts
from ..datasets import arithmetic_problems
from ..notes import states_answer
from ..paths import DATA_DIR
from ..types import Message, Problem

#: Alias of the organism for the local backend (``--model organism``).
ORGANISM = "organism"
#: The organism's problem sets, each as the keyword arguments of
#: :func:`~lase_nb.datasets.arithmetic_problems` that regenerate it. Training draws from the
#: "train" split, evaluation and recordings from the "eval" split: disjoint by template and
#: numbers, whatever the seeds. "calibrate" chooses thresholds and recipes; "record" is never
#: looked at before the recordings.
TRAINING_SETS: dict[str, dict] = {
    "solve": {"n": 1500, "seed": 201, "levels": [1, 2, 3], "split": "train"},
    "sample": {"n": 700, "seed": 202, "levels": [1, 2, 3], "split": "train"},
    "solve2": {"n": 150, "seed": 203, "levels": [1, 2, 3], "split": "train"},
    # round 3 (on top of v5's adapter, not shipped: data/organism/round3.py): problems its solver is
    # sampled on, three attempts each
    "sample3": {"n": 160, "seed": 212, "levels": [1, 2, 3], "split": "train"},
}
#: "calibrate3"/"record3": round 3's calibration and recordings (seeds no earlier recording used).
EVAL_SEEDS = {"calibrate": 21, "record": 22, "calibrate3": 31, "record3": 32, "record6": 62}



def training_problems(name: str, n: int | None = None) -> list[Problem]:
    """One of :data:`TRAINING_SETS`, regenerated (its first ``n`` problems when ``n`` is given)."""
    kw = dict(TRAINING_SETS[name])
    size = kw.pop("n")
    return arithmetic_problems(size if n is None else n, **kw)

_SIGN = {"+": "+", "-": "-", "*": "×", "/": "÷"}
_OP_OF = {"+": "+", "-": "-", "×": "*", "x": "*", "*": "*", "÷": "/", "/": "/"}
_CONCEPT = {"+": "adds", "-": "takes away", "*": "counts equal groups, so it multiplies",
            "/": "splits into equal parts, so it divides"}
_APPLY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": lambda a, b: a // b if b and a % b == 0 else None}
_STEP = re.compile(r"(\d+)\s*([+\-×x*÷/])\s*(\d+)\s*=\s*(?:\\boxed\{\s*)?(\d+)")


@dataclass(frozen=True)
class Step:
    """One arithmetic step ``a op b = c`` (``op`` in ``+ - * /``)."""

    a: int
    op: str
    b: int
    c: int

    def __str__(self) -> str:
        return f"{self.a} {_SIGN[self.op]} {self.b} = {self.c}"

    @property
    def expr(self) -> str:
        return f"{self.a} {_SIGN[self.op]} {self.b}"


def gold_steps(problem: Problem) -> list[Step]:
    """The generator's chain for an ``arith`` problem, folded left to right."""
    x, out = int(problem.meta["start"]), []
    for op, v in problem.meta["ops"]:
        y = _APPLY[op](x, int(v))
        out.append(Step(x, op, int(v), int(y)))
        x = y
    return out


def solution_text(steps: Sequence[Step]) -> str:
    """The organism's solution: one step per line, the last operation inside the box."""
    lines = [str(s) for s in steps[:-1]]
    last = steps[-1]
    lines.append(f"{last.expr} = \\boxed{{{last.c}}}")
    return "\n".join(lines)


def parse_steps(text: str) -> list[Step]:
    """The ``a op b = c`` steps written in a reply, in order (``\\boxed{c}`` counts as ``c``)."""
    return [Step(int(a), _OP_OF[op], int(b), int(c)) for a, op, b, c in _STEP.findall(text)]


@dataclass(frozen=True)
class Label:
    """An attempt against the gold chain: ``right`` (every step matches), ``wrong`` (with the
    index of the first step that departs from gold) or ``other`` (right answer by another chain,
    or nothing to compare): only ``right`` and ``wrong`` attempts make training examples."""

    status: str
    first_wrong: int | None
    steps: tuple[Step, ...]


def label_attempt(problem: Problem, text: str) -> Label:
    """Label an attempt by the first step that departs from the generator's gold chain."""
    gold, got = gold_steps(problem), parse_steps(text)
    boxed = re.search(r"\\boxed\{\s*(\d+)\s*\}", text)
    answer = boxed.group(1) if boxed else None
    if got == gold and answer == problem.gold:
        return Label("right", None, tuple(got))
    if answer == problem.gold or not got:
        return Label("other", None, tuple(got))
    k = next((i for i, (s, g) in enumerate(zip(got, gold)) if s != g), min(len(got), len(gold)))
    if k >= len(gold):  # the gold chain is all there, with extra steps after it
        return Label("other", None, tuple(got))
    return Label("wrong", k, tuple(got))


def number_sources(problem: Problem) -> list[tuple[int, str]]:
    """Each number of the chain (the start, then each operand) with the phrase it comes from."""
    text = problem.question
    values = [int(problem.meta["start"])] + [int(v) for _, v in problem.meta["ops"]]
    out, cursor = [], 0
    for v in values:
        pat = re.compile(rf"(?<![\d$])\$?{v}(?!\d)")
        m = pat.search(text, cursor) or pat.search(text)
        if m is None:
            out.append((v, str(v)))
            continue
        cursor = m.end()
        out.append((v, _phrase(text, m.start(), m.end())))
    return out


def _phrase(text: str, start: int, end: int) -> str:
    """The number with one word before and one after it, within its clause."""
    left = re.split(r"[.,?!]", text[:start])[-1].split()[-1:]
    right = re.split(r"[.,?!]", text[end:])[0].split()[:1]
    words = [w for w in left if w.lower() not in ("and", "then")] + [text[start:end]] + \
            [w for w in right if w.lower() not in ("and", "then")]
    return " ".join(words)


def column(a: int, op: str, b: int) -> tuple[str, int | None]:
    """Recompute ``a op b`` digit by digit from one-digit facts, as on paper: the ones first (with
    the carry or borrow they make), then the tens. A product multiplies the longer number by the
    one-digit one; an even quotient goes digit by digit (long division) or, when it is one digit,
    from the times table. Returns the working, which ends ``so c``, and ``c`` (None for a
    quotient that does not come out even)."""
    if op == "/":
        if b == 0 or a % b:
            return f"{a} ÷ {b} does not come out even", None
        c = a // b
        if a < 10 * b:
            return f"{b} × {c} = {a}, so {c}", c
        h, u = divmod(a, 10)
        q1, r1 = divmod(h, b)
        rest = r1 * 10 + u
        first = f"{h} ÷ {b} = {q1}" + (f" remainder {r1}" if r1 else "")
        return f"{first}; {rest} ÷ {b} = {rest // b}; so {c}", c
    c = _APPLY[op](a, b)
    sign = _SIGN[op]
    if a < 10 and b < 10:
        return f"{a} {sign} {b} = {c}", c
    if op == "*":
        big, small = (a, b) if b < 10 else (b, a)
        if small >= 10:
            t, o = big - big % 10, big % 10
            return f"{small} × {t} + {small} × {o} = {small * t} + {small * o}; so {c}", c
        h, u = divmod(big, 10)
        p = u * small
        k = p // 10
        ones = f"ones {u} × {small} = {p}" + (f", carry {k}" if k else "")
        rest = f"{h} × {small}" + (f" + {k}" if k else "") + f" = {h * small + k}"
        return f"{ones}; {rest}; so {c}", c
    (ha, ua), (hb, ub) = divmod(a, 10), divmod(b, 10)
    if op == "+":
        s = ua + ub
        k = s // 10
        ones = f"ones {ua} + {ub} = {s}" + (", carry 1" if k else "")
        terms = [str(x) for x in (ha, hb) if x] + ["1"] * k
        tens = f"tens {' + '.join(terms)} = {ha + hb + k}" if len(terms) > 1 else None
    else:
        k = int(ua < ub)
        ones = (f"ones {ua} - {ub} borrows: {ua + 10} - {ub} = {ua + 10 - ub}" if k
                else f"ones {ua} - {ub} = {ua - ub}")
        terms = [str(ha)] + [str(x) for x in (hb,) if x] + ["1"] * k
        tens = f"tens {' - '.join(terms)} = {ha - hb - k}" if len(terms) > 1 else None
    return "; ".join(x for x in (ones, tens, f"so {c}") if x), c


# --- the three supporters' notes: they point at an error, never tell the answer ------------------

def _expected(problem: Problem, label: Label) -> list[Step]:
    """Each step as it should read given the attempt's own earlier results: the problem's
    operation and operand applied to the attempt's previous value (the start, for step 1)."""
    gold, got = gold_steps(problem), label.steps
    out, x = [], gold[0].a
    for i, g in enumerate(gold):
        c = _APPLY[g.op](x, g.b)
        out.append(Step(x, g.op, g.b, c if c is not None else -1))
        if i < len(got):
            x = got[i].c
        else:
            x = c if c is not None else x
    return out


@dataclass(frozen=True)
class Fault:
    """The first step of an attempt that fails, and how: ``start`` (it does not begin from the
    previous result), ``operation``, ``operand``, ``result`` (a slip in the arithmetic) or
    ``missing`` (the attempt stops before it)."""

    step: int
    kind: str
    written: Step | None
    expected: Step


def first_fault(problem: Problem, label: Label) -> Fault | None:
    """Where and how an attempt first departs from the problem (None when every step holds)."""
    got = label.steps
    for i, e in enumerate(_expected(problem, label)):
        if i >= len(got):
            return Fault(i, "missing", None, e)
        s = got[i]
        for kind, ok in (("start", s.a == e.a), ("operation", s.op == e.op), ("operand", s.b == e.b),
                         ("result", s.c == e.c)):
            if not ok:
                return Fault(i, kind, s, e)
    return None


def _sources(src: Sequence[tuple[int, str]], i: int) -> str:
    """Where step ``i``'s numbers come from: the operand's phrase (and the start's, for step 1)."""
    return f"'{src[i + 1][1]}' gives" if i else f"'{src[0][1]}' and '{src[1][1]}' give"


_INVERSE = {"+": "-", "-": "+", "*": "/", "/": "*"}


def _backwards(s: Step) -> tuple[str, int | None]:
    """A written step undone: its result taken back through the inverse operation, digit by
    digit (a product divided by its factor, a quotient multiplied back). Returns the working and
    the value it gives back, which must be where the step began; never the step's own result."""
    inverse = _INVERSE[s.op]
    if inverse == "-" and s.c < s.b:
        return f"{s.c} - {s.b} is below zero", None
    work, v = column(s.c, inverse, s.b)
    return f"{s.c} {_SIGN[inverse]} {s.b}: {work}", v


def _check_line(i: int, s: Step, e: Step, src: Sequence[tuple[int, str]], detail: int) -> tuple[str, bool]:
    """The devil's check of one written step, and whether it holds. ``detail`` 2 shows the
    backwards working digit by digit, 1 only its result, 0 only whether it gives back the start
    (used when a fuller line would state the answer)."""
    head = f"Step {i + 1}: {_sources(src, i)} {e.expr}"
    if (s.a, s.op, s.b) != (e.a, e.op, e.b):
        return f"{head}, but the attempt writes {s.expr}: it fails.", False
    work, v = _backwards(s)
    holds = v == s.a
    if detail == 2:
        back = f"back, {work}"
    elif detail == 1:
        back = f"back, {work.split(':')[0]} = {v}" if v is not None else f"back, {work}"
    else:
        back = f"back, {s.c} {_SIGN[_INVERSE[s.op]]} {s.b} " + \
               ("gives" if holds else "does not give")
        return f"{head}; {back} {s.a}: {'it holds' if holds else 'it fails'}.", holds
    return f"{head}; {back}; it began at {s.a}: {'it holds' if holds else 'it fails'}.", holds


def _riskiest(steps: Sequence[Step]) -> int:
    """The step most likely to slip: a carry or a borrow, then the larger numbers."""
    def risk(s: Step) -> tuple[int, int]:
        carry = (s.op == "+" and s.a % 10 + s.b % 10 >= 10) or (s.op == "-" and s.a % 10 < s.b % 10)
        return (int(carry) + int(s.op in "*/" and max(s.a, s.b) >= 10), max(s.a, s.b, s.c))
    return max(range(len(steps)), key=lambda i: risk(steps[i]))


def _attempt_of(label: Label) -> str:
    return solution_text(label.steps) if label.steps else ""


def _obeys(note: str, problem: Problem, attempt: str) -> bool:
    return not states_answer(note, problem.gold, problem.question, attempt)


def devil_note(problem: Problem, label: Label, attempt: str | None = None) -> str:
    """The devil's advocate: each written step checked, in order, by where its numbers come from
    (the problem's phrase) and by taking its result back through the inverse operation, up to
    the first step that fails; a last line naming that step and what to redo (never its right
    value), or, when every step holds, the riskiest step for the leader to defend. Lines whose
    working would state the final answer are written with less detail (:func:`lase_nb.notes.states_answer`)."""
    attempt = _attempt_of(label) if attempt is None else attempt
    src = number_sources(problem)
    fault = first_fault(problem, label)
    expected = _expected(problem, label)
    last = fault.step if fault else len(label.steps) - 1
    note = ""
    for detail in (2, 1, 0):
        lines = []
        for i in range(min(last + 1, len(label.steps))):
            lines.append(_check_line(i, label.steps[i], expected[i], src, detail)[0])
        if fault is None:
            r = _riskiest(label.steps)
            lines.append(f"Every step holds; the riskiest is step {r + 1}, {label.steps[r].expr}: defend it.")
        elif fault.kind == "missing":
            lines.append(f"Step {fault.step + 1}: {_sources(src, fault.step)} {fault.expected.expr}, "
                         f"but the attempt stops before it: it fails.")
            lines.append(f"Step {fault.step + 1} is missing: add {fault.expected.expr}.")
        elif fault.kind == "result":
            lines.append(f"Step {fault.step + 1} fails: redo {fault.written.expr} column by column.")
        elif fault.kind == "start":
            lines.append(f"Step {fault.step + 1} fails: it must start from {fault.expected.a}.")
        else:
            lines.append(f"Step {fault.step + 1} fails: redo it as {fault.expected.expr}.")
        note = "\n".join(lines)
        if _obeys(note, problem, attempt):
            break
    return note


_HOW = {"+": "carry a ten when the ones pass 9", "-": "borrow a ten when the ones are too small",
        "*": "multiply the ones first, carry, then the tens", "/": "use the times table of the divisor"}


def collaborator_note(problem: Problem, label: Label, attempt: str | None = None) -> str:
    """The collaborator: a method for the step to redo (columns, rereading the phrase, the
    backwards check), never carried to a result."""
    src = number_sources(problem)
    fault = first_fault(problem, label)
    n = len(gold_steps(problem))
    if fault is None:
        r = _riskiest(label.steps)
        return (f"No step fails. To be sure, redo the riskiest, step {r + 1} ({label.steps[r].expr}), in "
                f"columns ({_HOW[label.steps[r].op]}) and check it backwards. If it agrees, keep your answer.")
    k = fault.step
    after = "then carry the new value through every later step" if k + 1 < n else "then box the result"
    if fault.kind == "result":
        s = fault.written
        return (f"Start again at step {k + 1}. Write {s.expr} in columns and {_HOW[s.op]}; check the result "
                f"backwards, {after}.")
    if fault.kind == "missing":
        return (f"The attempt stops too early: '{src[k + 1][1]}' is not used yet. Add that step, "
                f"done in columns, {after}.")
    if fault.kind == "start":
        return (f"Start again at step {k + 1}: it must begin from the result of step {k}. Redo it in "
                f"columns, {after}.")
    return (f"Start again at step {k + 1}. Reread '{src[k + 1][1]}': it gives the number and the operation "
            f"this step needs. Redo the step in columns, {after}.")


def _place_value(s: Step) -> str:
    """What place value says about one step, without its result."""
    if s.op == "+":
        carry = s.a % 10 + s.b % 10 >= 10
        return (f"in {s.expr} the ones, {s.a % 10} + {s.b % 10}, " +
                ("pass 9, so one ten is carried into the tens" if carry else "stay below ten, so nothing is carried"))
    if s.op == "-":
        borrow = s.a % 10 < s.b % 10
        return (f"in {s.expr} the ones, {s.a % 10} - {s.b % 10}, " +
                ("need a borrow, so the tens go down by one" if borrow else "need no borrow"))
    if s.op == "*":
        return f"{s.expr} is the tens times {min(s.a, s.b)} plus the ones times {min(s.a, s.b)}, with the ones' carry"
    return f"{s.expr} asks which number times {s.b} gives {s.a}"


def expert_note(problem: Problem, label: Label, attempt: str | None = None) -> str:
    """The senior expert: the concept the flagged step needs (what the phrase means, place value,
    a chain of steps), never the step's value."""
    src = number_sources(problem)
    fault = first_fault(problem, label)
    if fault is None:
        r = _riskiest(label.steps)
        s = label.steps[r]
        return (f"The key step is step {r + 1}: '{src[r + 1][1]}' {_CONCEPT[s.op]}. The attempt reads it that "
                f"way; by place value, {_place_value(s)}. If that agrees, the answer stands.")
    k, e = fault.step, fault.expected
    phrase = src[k + 1][1]
    if fault.kind == "result":
        return f"The concept at step {k + 1} is place value: {_place_value(fault.written)}."
    if fault.kind == "operation":
        return (f"The concept at step {k + 1} is what the words mean: '{phrase}' {_CONCEPT[e.op]}, "
                f"so this step is {e.expr}, not {fault.written.expr}.")
    if fault.kind == "operand":
        return (f"The concept at step {k + 1} is reading the problem: each step uses the number its phrase "
                f"gives, and '{phrase}' gives {e.b}.")
    if fault.kind == "start":
        return (f"The concept is a chain: each step starts from the result of the step before it, and "
                f"step {k + 1} does not.")
    return (f"The concept is using every number once, in the story's order: '{phrase}' is never used, "
            f"so a step is missing.")


NOTES = {"devil": devil_note, "collaborator": collaborator_note, "expert": expert_note}
#: How often each role's revision is drawn for a training attempt (devil's advocate, collaborator, expert).
ROLE_WEIGHTS = (2, 1, 1)

#: How a note says it found a failing step (what the skill evaluation counts as a flag).
FLAG = re.compile(r"\b[Ss]tep \d+ (?:fails|is missing)\b|\bStart again at step\b|\bstops too early\b|"
                  r"\bThe concept (?:at step \d+ )?is\b")


def note_flags(note: str) -> bool:
    """Whether a supporter's note names a failing step."""
    return bool(FLAG.search(note))


def departure_step(problem: Problem, attempt: str | None) -> int | None:
    """The first step (from 0) where a wrong ``attempt`` departs from ``problem``'s gold chain; None
    for a right attempt, an attempt without steps, or a problem without a recorded chain."""
    meta = getattr(problem, "meta", None) or {}
    if not isinstance(attempt, str) or "start" not in meta or "ops" not in meta:
        return None
    label = label_attempt(problem, attempt)
    if label.status != "wrong":
        return None
    fault = first_fault(problem, label)
    return None if fault is None else fault.step


def flagged_step(note: str) -> int | None:
    """The step (counted from 0) a note names as failing, or None."""
    m = re.search(r"[Ss]tep (\d+) (?:fails|is missing)|Start again at step (\d+)|concept at step (\d+)", note)
    return int(next(g for g in m.groups() if g)) - 1 if m else None


def _false_alarm(problem: Problem, label: Label, rng: random.Random) -> str:
    """A devil's note on a right attempt whose own backwards check slips (off by 1, 2 or 10): it
    says a step fails that holds. The leader is trained to recompute and keep its answer."""
    src = number_sources(problem)
    k = rng.randrange(len(label.steps))
    expected = _expected(problem, label)
    lines = [_check_line(i, label.steps[i], expected[i], src, 1)[0] for i in range(k)]
    s = label.steps[k]
    work, v = _backwards(s)
    off = (v or 0) + rng.choice([-10, -2, -1, 1, 2, 10])
    off = off if off > 0 and off != s.a else s.a + 1
    lines.append(f"Step {k + 1}: {_sources(src, k)} {s.expr}; back, {work.split(':')[0]} = {off}; "
                 f"it began at {s.a}: it fails.")
    lines.append(f"Step {k + 1} fails: redo {s.expr} column by column.")
    return "\n".join(lines)


def revision_text(problem: Problem, label: Label, flagged: int | None) -> str:
    """The leader's revision after a note: the flagged step redone by the written method (column
    by column), kept when that agrees with the attempt ("my answer stands"), changed when it does
    not and carried through the later steps; then the whole chain, the last operation inside the
    box as in a first answer. With no step flagged the attempt is kept as it is."""
    gold = gold_steps(problem)
    chain = solution_text(gold)
    if flagged is None or flagged >= len(gold):
        return f"The checks hold, so my answer stands.\n{chain}"
    e = _expected(problem, label)[flagged] if label.status == "wrong" else gold[flagged]
    if label.status == "wrong":
        fault = first_fault(problem, label)
        if fault is not None and flagged > fault.step:
            flagged, e = fault.step, fault.expected
    work, c = column(e.a, e.op, e.b)
    written = label.steps[flagged] if flagged < len(label.steps) else None
    head = f"Step {flagged + 1} again: {e.expr}: {work}."
    if written is not None and written == Step(e.a, e.op, e.b, c if c is not None else -1):
        return f"{head} That is what I had, so my answer stands.\n{chain}"
    had = f"I had {written}" if written is not None else "I had left it out"
    return f"{head} {had}, so I change it and carry it on.\n{chain}"


# --- the data recipe ---------------------------------------------------------------------------

Example = tuple[list[Message], str]  # (prompt messages, the assistant's target reply)


def solve_examples(problems: Sequence[Problem]) -> list[Example]:
    """Zero-shot solve examples: the pipeline's solver prompt -> the gold chain."""
    return [(prompts.solver_messages(p, examples=0), solution_text(gold_steps(p))) for p in problems]


def support_examples(problem: Problem, attempt: str, rng: random.Random, false_alarm_rate: float = 0.25,
                     extra_notes: float = 0.5) -> list[Example]:
    """Training examples from one attempt (right or wrong; empty for ``other``): the devil's
    note, each later supporter's note with probability ``extra_notes`` (in the pipeline's order,
    each seeing the notes before it), and the leader's revision after one note (a role drawn in
    :data:`ROLE_WEIGHTS`' proportions). On a right attempt the devil's note shown before the
    revision is a false alarm with probability ``false_alarm_rate`` (the leader recomputes and
    keeps its answer); the devil is never trained on a false alarm. No example's note states the
    answer (those are dropped)."""
    label = label_attempt(problem, attempt)
    if label.status == "other":
        return []
    critique = devil_note(problem, label, attempt)
    hints = collaborator_note(problem, label, attempt)
    expert = expert_note(problem, label, attempt)
    if not all(_obeys(n, problem, attempt) for n in (critique, hints, expert)):
        return []
    out: list[Example] = [(prompts.supporter_messages(problem, "devil", attempt), critique)]
    if rng.random() < extra_notes:
        out.append((prompts.supporter_messages(problem, "collaborator", attempt, critique), hints))
    if rng.random() < extra_notes:
        out.append((prompts.supporter_messages(problem, "expert", attempt, critique, hints), expert))
    role = rng.choices(prompts.SUPPORTERS, weights=ROLE_WEIGHTS)[0]
    shown = {"devil": critique, "collaborator": hints, "expert": expert}[role]
    if label.status == "right" and role == "devil" and rng.random() < false_alarm_rate:
        shown = _false_alarm(problem, label, rng)
    if label.status == "wrong":
        flagged = first_fault(problem, label).step
    else:
        flagged = flagged_step(shown) if shown is not critique else _riskiest(label.steps)
        flagged = _riskiest(label.steps) if flagged is None else flagged
    out.append((prompts.revise_messages(problem, attempt, role, shown, examples=0),
                revision_text(problem, label, flagged)))
    return out


def slipped_attempt(problem: Problem, rng: random.Random) -> str | None:
    """A wrong attempt of the kinds the solver makes, for problems it solved right: one step's
    result slipped (off by 1, 2 or 10: a dropped carry or borrow) or one operand taken from
    another of the problem's numbers, and the later steps carried on from the wrong value (as
    the solver's own errors are). None when no such variant divides evenly where it must."""
    gold = gold_steps(problem)
    numbers = sorted({int(problem.meta["start"])} | {int(v) for _, v in problem.meta["ops"]})
    for _ in range(10):
        k = rng.randrange(len(gold))
        misread = rng.random() < 0.25
        steps, x = [], gold[0].a
        for i, g in enumerate(gold):
            b = g.b
            if i == k and misread:
                b = rng.choice([v for v in numbers if v != g.b] or [g.b + 1])
            c = _APPLY[g.op](x, b)
            if c is not None and i == k and not misread:
                c += rng.choice([-10, -2, -1, 1, 2, 10])
            if c is None or c <= 0:
                break
            steps.append(Step(x, g.op, b, c))
            x = c
        else:
            text = solution_text(steps)
            if label_attempt(problem, text).status == "wrong":
                return text
    return None


#: Operations whose two operands may be written in either order (7 + 9 and 9 + 7 compute the same step).
COMMUTATIVE = ("+", "*")


def draw_key(problem: Problem) -> tuple:
    """The key every committed problem draw was made with: the start and the operations with their
    operands, in order, so ``7 + 9`` and ``9 + 7`` differ. Kept as it was, so that each committed
    list regenerates with its preregistered sha256; to ask what a problem computes, use :func:`chain_key`."""
    return (int(problem.meta["start"]), tuple((op, int(v)) for op, v in problem.meta["ops"]))


def chain_key(problem: Problem) -> tuple:
    """What a problem computes, whatever its template, wording and the order of a commutative step's
    operands: the first step's two operands as an unordered pair when its operation is ``+`` or ``*``
    (a later step's left operand is the previous result, so its order is fixed), then every operation
    with its operand. L2-0023 (9 + 7 = 16, 16 / 2 = 8) and a problem computing 7 + 9 = 16, 16 / 2 = 8
    share one key."""
    start, ops = draw_key(problem)
    if not ops:
        return (start, ops)
    (op, v), rest = ops[0], ops[1:]
    first = (op, tuple(sorted((start, v)))) if op in COMMUTATIVE else (op, (start, v))
    return (first, rest)


def training_overlap(problems: Sequence[Problem], trained: set | frozenset | None = None) -> list[str]:
    """The ids of ``problems`` whose chain (:func:`chain_key`, commutative operands in either order)
    a training problem computes: held out by :func:`draw_key` yet repeating a training problem's
    arithmetic."""
    trained = training_chains() if trained is None else trained
    return [p.id for p in problems if chain_key(p) in trained]


def training_chains() -> set[tuple]:
    """The chain of every problem any organism was trained on (:data:`TRAINING_SETS`, the earlier
    organisms' sets included, since round 3 starts from v5's adapter)."""
    return {chain_key(p) for name in TRAINING_SETS for p in training_problems(name)}


def training_draw_keys() -> set[tuple]:
    """:func:`training_chains` by :func:`draw_key`: what the committed draws left out."""
    return {draw_key(p) for name in TRAINING_SETS for p in training_problems(name)}


def eval_problems(n: int, seed: int = EVAL_SEEDS["calibrate"], levels: Sequence[int] = (1, 2, 3),
                  split: str | None = "eval", exclude: frozenset | set = frozenset()) -> list[Problem]:
    """Held-out problems for the skill evaluation and the recordings: the eval split (never trained
    on whatever the seed, by template and numbers), less every problem whose chain a training
    problem computes under another template (:func:`training_chains`) or whose chain is in
    ``exclude``; levels interleaved in the order given (a shorter list is a prefix of a longer one).
    Any other split is refused: the original generator (``split=None``) draws from both parts of
    the problem space, so it may hold training problems."""
    if split != "eval":
        raise ValueError(f"evaluation problems come from the eval split (got split={split!r}): the organism "
                         "was trained on the train split, and split=None mixes both")
    levels = tuple(levels)
    trained = training_draw_keys() | set(exclude)
    size = n + n // 4 + 8
    while True:
        drawn = [p for p in arithmetic_problems(size, seed=seed, levels=levels, split=split)
                 if draw_key(p) not in trained]
        per_level = {lv: [p for p in drawn if p.meta["level"] == lv] for lv in levels}
        if all(len(v) >= -(-n // len(levels)) for v in per_level.values()):
            return [per_level[levels[i % len(levels)]][i // len(levels)] for i in range(n)]
        size *= 2


def prompt_fingerprint() -> str:
    """A hash of every message the organism was trained on, rendered for one fixed problem: the
    solver prompt, each supporter's prompt and the revision request. The manifest stores the value
    the adapter was trained with; a prompt changed since then changes it (retrain the adapter)."""
    import hashlib
    import json

    p = arithmetic_problems(2, seed=0, levels=(1, 2, 3))[1]
    attempt = solution_text(gold_steps(p))
    rendered = [prompts.solver_messages(p, examples=0)]
    for role in prompts.SUPPORTERS:
        rendered.append(prompts.supporter_messages(p, role, attempt, "CRITIQUE" if role != "devil" else None,
                                                   "HINTS" if role == "expert" else None))
        rendered.append(prompts.revise_messages(p, attempt, role, "NOTE", examples=0))
    return hashlib.sha256(json.dumps(rendered, sort_keys=True).encode()).hexdigest()[:16]


__all__ = ["ORGANISM", "TRAINING_SETS", "EVAL_SEEDS", "Step", "Label",
           "Fault", "gold_steps", "solution_text", "parse_steps", "label_attempt", "first_fault", "number_sources",
           "column", "devil_note", "collaborator_note", "expert_note", "NOTES", "note_flags", "flagged_step",
           "departure_step",
           "revision_text", "solve_examples", "support_examples", "slipped_attempt", "training_problems",
           "eval_problems", "draw_key", "chain_key", "COMMUTATIVE", "training_chains", "training_draw_keys",
           "training_overlap", "prompt_fingerprint", "describe_answer_rule",
           "CALIBRATION_POOL", "RECORDED_BEFORE_V6", "recorded_chains", "noop_chains", "v6_exclusions", "v6_problems",
           "problems_sha256"]


def describe_answer_rule(evaluation: dict | None) -> str:
    """Chapter 03's statement of how the organism's supporters keep the paper's rule (Appendix D:
    "Do NOT give the final answer"), with the counts of its skill evaluation
    (``benchmarks/organism_skills.py``, every stage forced on calibration problems)."""
    head = ("**The organism keeps the paper's rule.** Its supporters were trained on notes that point at the "
            "failing step (where a number comes from, a check by the inverse operation, what to redo, the "
            "concept it needs) and never state the final answer; no training note does "
            "(`lase_nb.notes.states_answer` checks each one). The pipeline does not filter notes, so whether the "
            "trained model obeys is measured, not assumed. ")
    counts = ((evaluation or {}).get("chain") or {}).get("notes_stating_answer")
    if not counts:
        return head + "Its skill evaluation has not been run, so how often a note breaks the rule is not measured yet."
    parts = []
    for role, d in counts.items():
        w, r = d.get("on_wrong") or {}, d.get("other_on_right") or {}
        parts.append(f"{role}: {w.get('k', 0)} of {w.get('n', 0)} notes on wrong attempts stated the answer, "
                     f"{r.get('k', 0)} of {r.get('n', 0)} on right ones handed over another value")
    return head + "In its skill evaluation: " + "; ".join(parts) + "."


# ---------------------------------------------------------------- organism v6's fresh problems

#: The recordings made before organism v6's preregistration (folders under ``data/traces``): v6's
#: fresh problems and control problems share no chain with any of their problems.
RECORDED_BEFORE_V6 = ("arith-smollm2", "arith-organism-tell", "arith-organism-point", "control-level1")
#: How many problems of each calibration seed v6's problems stay clear of.
CALIBRATION_POOL = 1000


def recorded_chains(folders: Sequence[str], traces_root: str | Path | None = None) -> frozenset:
    """The chain (by :func:`draw_key`, the key v6's draw left them out by) of every problem of every run in ``folders`` (under ``data/traces``), each run's
    problems regenerated from its manifest as :func:`lase_nb.runs.problems_from_manifest` does; a run
    not on the arithmetic generator is an error (its problems could not be left out)."""
    import json

    from ..datasets import load_dataset

    root = Path(traces_root) if traces_root else DATA_DIR / "traces"
    chains: set = set()
    for folder in folders:
        for manifest in sorted((root / folder).rglob("manifest.json")):
            m = json.loads(manifest.read_text())
            if m.get("dataset", "arith") != "arith" or m.get("problem_set") or m.get("n") is None:
                raise ValueError(f"{manifest}: not a run on the arithmetic generator, so its problems cannot be left out")
            offset = int(m.get("offset") or 0)
            problems = load_dataset("arith", None, int(m["n"]) + offset, int(m.get("seed", 0)),
                                    levels=m.get("levels") or None, split=m.get("split"))[offset:]
            chains |= {draw_key(p) for p in problems}
    return frozenset(chains)


def noop_chains(ceiling_root: str | Path | None = None) -> frozenset:
    """The chains of the NoOp problems the ceiling study used (``data/ceiling/noop-*.json``: seed, n, levels)."""
    import json

    from ..datasets import noop_problems

    root = Path(ceiling_root) if ceiling_root else DATA_DIR / "ceiling"
    chains: set = set()
    for f in sorted(root.glob("noop-*.json")):
        m = json.loads(f.read_text())
        chains |= {draw_key(p) for p in noop_problems(int(m["n"]), seed=int(m["seed"]), levels=m["levels"],
                                                       split=m.get("split", "eval"))}
    return frozenset(chains)


@functools.lru_cache(maxsize=1)
def _v6_excluded() -> frozenset:
    pools = {draw_key(p) for name in ("calibrate", "calibrate3")
             for p in eval_problems(CALIBRATION_POOL, seed=EVAL_SEEDS[name])}
    return recorded_chains(RECORDED_BEFORE_V6) | noop_chains() | frozenset(pools)


def v6_exclusions() -> dict[str, Any]:
    """What v6's problem lists leave out, in words and counts (for the preregistration)."""
    return {"training_chains": len(training_chains()), "recorded_chains": len(recorded_chains(RECORDED_BEFORE_V6)),
            "recordings": list(RECORDED_BEFORE_V6), "noop_chains": len(noop_chains()),
            "calibration_pools": f"the first {CALIBRATION_POOL} problems of seeds {EVAL_SEEDS['calibrate']} and "
                                 f"{EVAL_SEEDS['calibrate3']}",
            "rule": "the eval split (never trained on, by template and numbers) less every problem whose chain a "
                    "training set computes (every organism's, the revision's included), any earlier recording used, "
                    "the ceiling's NoOp problems used, or a calibration pool holds"}


def v6_problems(which: str, n: int, seed: int = EVAL_SEEDS["record6"], levels: Sequence[int] = (1, 2, 3)) -> list[Problem]:
    """Organism v6's fresh problems (``which="problems"``, levels interleaved) or its control problems
    (``"control"``: level 1, none of them among the first 600 fresh ones): :func:`eval_problems` less
    every chain of :func:`v6_exclusions`, with ids of their own (``arith-v6-problems-L1-0000``)."""
    excluded = _v6_excluded()
    if which == "control":
        excluded = excluded | {draw_key(p) for p in v6_problems("problems", 600, seed)}
    elif which != "problems":
        raise ValueError(f"which must be 'problems' or 'control' (got {which!r})")
    # ids of their own, so that no id means two problems in a study that also holds the spent chain
    return [dataclasses.replace(p, id=p.id.replace("arith-eval-", f"arith-v6-{which}-", 1))
            for p in eval_problems(n, seed=seed, levels=levels, exclude=excluded)]


def problems_sha256(problems: Sequence[Problem]) -> str:
    """The sha256 of a problem list (ids, questions and gold answers, in order): what a preregistration pins."""
    import hashlib
    import json

    blob = json.dumps([[p.id, p.question, p.gold] for p in problems], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()
