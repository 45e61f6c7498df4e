"""The model organism: what the small trained model writes, and the data recipe that teaches it.

The embedded 135M model cannot revise, so every real-model chapter sees LASE fail on it. The
organism is the same model with a LoRA adapter trained here (``data/organism/train.py``) on this
project's generated arithmetic problems, so that the corrective regime of the theory (a correct
seed among the supporters' notes, and a leader that uses it) can be seen offline.

What it is taught, in the exact messages LASE's pipeline sends (rendered with :mod:`lase_nb.prompts`):

* **solve**: one step per line, ``a op b = c``, the last operation carried out inside the box
  (``17 × 4 = \\boxed{68}``), so the answer tokens carry the uncertainty the gate reads;
* **review**, from the trained solver's *own* sampled attempts, each labelled against the
  generator's gold chain (:func:`label_attempt`), and slipped variants of the attempts it got
  right (:func:`slipped_attempt`). The three supporters form a ladder of different checks, each
  done before the note reads the attempt's value: the devil's advocate quotes the phrase each
  number comes from and recomputes each step digit by digit from one-digit facts
  (:func:`column`), then writes the attempt's value beside its own, ``same`` or ``different``;
  the collaborator takes each written result back through the inverse operation; the senior
  expert names the step and what the problem's words mean there. A note names the first wrong
  step and its right value, or shows its checks and names the riskiest step;
* **revise**: attempt + note -> the corrected chain, and a right attempt + a note that finds no
  error (or whose own numbers are off) -> the same chain.

Everything here is deterministic given its seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from . import prompts
from .datasets import arithmetic_problems
from .types import Message, Problem

#: Alias of the organism for the local backend (``--model organism``).
ORGANISM = "organism"
#: Where the committed adapter and its manifest live (beside the recorded traces).
ORGANISM_DIR = Path(__file__).resolve().parent.parent / "data" / "organism"
#: Seeds of the generated problems: each use gets its own, so evaluation never meets a training problem;
#: "eval" chose between recipe variants, so the recordings the chapters read use "record", never looked at before.
SEEDS = {"solve": 101, "sample": 102, "solve2": 103, "one_step": 104, "solve3": 105, "eval": 7, "calibrate": 11,
         "record": 8}
#: The seeds whose problems the organism was trained on (never evaluate or record on them).
TRAINING_SEEDS = frozenset(SEEDS[k] for k in ("solve", "sample", "solve2", "one_step", "solve3"))

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


def decompose(a: int, op: str, b: int) -> str:
    """Recompute ``a op b`` by a method other than recall: tens and ones, bridging through a ten,
    splitting a factor, or checking a quotient by multiplying back."""
    if op == "+":
        c = a + b
        if b >= 10:
            t, o = b - b % 10, b % 10
            return f"{a} + {b} = {a} + {t} + {o} = {a + t} + {o} = {c}" if o else f"{a} + {b} = {c}"
        x = (10 - a % 10) % 10
        if 0 < x < b:
            return f"{a} + {b} = {a} + {x} + {b - x} = {a + x} + {b - x} = {c}"
        return f"{a} + {b} = {c}"
    if op == "-":
        c = a - b
        if b >= 10:
            t, o = b - b % 10, b % 10
            return f"{a} - {b} = {a} - {t} - {o} = {a - t} - {o} = {c}" if o else f"{a} - {b} = {c}"
        x = a % 10
        if 0 < x < b and a > 10:
            return f"{a} - {b} = {a} - {x} - {b - x} = {a - x} - {b - x} = {c}"
        return f"{a} - {b} = {c}"
    if op == "*":
        c = a * b
        big, small = (b, a) if b >= a else (a, b)
        if big >= 10 and big % 10:
            t, o = big - big % 10, big % 10
            return (f"{a} × {b} = {small} × {t} + {small} × {o} = {small * t} + {small * o} = {c}")
        return f"{a} × {b} = {c}"
    c = a // b
    return f"{a} ÷ {b} = {c}, since {c} × {b} = {a}"


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
            return f"{decompose(a, op, b)}; so {c}", c
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


def inverse_check(step: Step) -> str:
    """Check a written step backwards: undo its operation on its result (a product by swapping
    its factors)."""
    a, b, c = step.a, step.b, step.c
    if step.op == "+":
        back, got, want = f"{c} - {b} = {c - b}", c - b, a
    elif step.op == "-":
        back, got, want = f"{c} + {b} = {c + b}", c + b, a
    elif step.op == "*":
        back, got, want = f"{b} × {a} = {a * b}", a * b, c
    else:
        back, got, want = f"{c} × {b} = {c * b}", c * b, a
    return f"{back}, so it holds" if got == want else f"{back}, not {want}"


def _step_attempt(steps: Sequence[Step], i: int, g: Step) -> str:
    """What the attempt wrote for step ``i``: its value alone when it used the right numbers."""
    if i >= len(steps):
        return "the attempt has no such step"
    s = steps[i]
    return f"the attempt has {s.c}" if (s.a, s.op, s.b) == (g.a, g.op, g.b) else f"the attempt has {s}"


def _numbers(problem: Problem) -> str:
    return "Numbers: " + ", ".join(f"{v} '{p}'" for v, p in number_sources(problem)) + "."


# --- the three supporters' notes ---------------------------------------------------------------

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


def _verdict(label: Label, gold: Sequence[Step], none_wrong: str, wrong: str) -> str:
    """A note's last line: ``none_wrong`` when no step is wrong, else ``wrong`` with ``{k}`` the
    first wrong step (counted from 1) and ``{right}`` that step done right."""
    if label.first_wrong is None:
        return none_wrong
    return wrong.format(k=label.first_wrong + 1, right=gold[label.first_wrong])


def _sources(src: Sequence[tuple[int, str]], i: int) -> str:
    """Where step ``i``'s numbers come from: the operand's phrase (and the start's, for step 1)."""
    return f"'{src[i + 1][1]}' gives" if i else f"'{src[0][1]}', '{src[1][1]}' give"


def _compared(got: Sequence[Step], i: int, e: Step, c: int | None) -> str:
    """The end of a checked step: what the attempt wrote for it, then ``same`` or ``different``
    (the two numbers side by side, so the verdict is a comparison, not a judgement)."""
    if i >= len(got):
        return "the attempt has no such step: missing"
    s = got[i]
    if (s.a, s.op, s.b) != (e.a, e.op, e.b):
        return f"the attempt has {s}: different"
    return f"the attempt has {s.c}: {'same' if s.c == c else 'different'}"


def devil_note(problem: Problem, label: Label) -> str:
    """The devil's advocate: for each step, where its number comes from (the problem's phrase),
    the step recomputed digit by digit (:func:`column`) from the attempt's own previous value,
    and only then what the attempt wrote, compared (``same`` / ``different``); a last line naming
    the first wrong step and its right value, or the riskiest step when none is wrong."""
    gold, got = gold_steps(problem), label.steps
    src = number_sources(problem)
    lines = []
    for i, e in enumerate(_expected(problem, label)):
        work, c = column(e.a, e.op, e.b)
        lines.append(f"Step {i + 1}: {_sources(src, i)} {e.expr}: {work}; {_compared(got, i, e, c)}.")
    lines.append(_verdict(label, gold, f"No step is wrong; the riskiest is step {_riskiest(gold) + 1}.",
                          "Step {k} is wrong: it should be {right}."))
    return "\n".join(lines)


def _backwards(s: Step) -> tuple[str, int | None, int]:
    """A written step undone: its result taken back through the inverse operation, digit by
    digit. Returns the working, the value it gives and the value it should give."""
    if s.op == "+":
        work, v = column(s.c, "-", s.b) if s.c >= s.b else (f"{s.c} - {s.b} is below zero", None)
        return f"{s.c} - {s.b}: {work}", v, s.a
    if s.op == "-":
        work, v = column(s.c, "+", s.b)
        return f"{s.c} + {s.b}: {work}", v, s.a
    if s.op == "*":
        work, v = column(s.c, "/", s.b)
        return f"{s.c} ÷ {s.b}: {work}", v, s.a
    work, v = column(s.c, "*", s.b)
    return f"{s.c} × {s.b}: {work}", v, s.a


def collaborator_note(problem: Problem, label: Label) -> str:
    """The collaborator: checks every written step backwards (its result through the inverse
    operation, digit by digit, must give back where the step began) and each operand against
    the problem, then says where to redo the work."""
    gold, got = gold_steps(problem), label.steps
    src = number_sources(problem)
    lines = ["Each step checked backwards."]
    for i, e in enumerate(_expected(problem, label)):
        if i >= len(got):
            lines.append(f"Step {i + 1} is missing: '{src[i + 1][1]}' gives {_SIGN[e.op]} {e.b}.")
            continue
        s = got[i]
        if (s.a, s.op, s.b) != (e.a, e.op, e.b):
            lines.append(f"Step {i + 1} uses {s.expr}, but '{src[i + 1][1]}' gives {e.expr}: different.")
            continue
        work, v, want = _backwards(s)
        lines.append(f"Step {i + 1}: {work}; it began at {want}: {'same' if v == want else 'different'}.")
    lines.append(_verdict(label, gold, "Every step holds.",
                          "So step {k} is wrong: it should be {right}. Redo the work from there."))
    return "\n".join(lines)


def expert_note(problem: Problem, label: Label) -> str:
    """The senior expert: names the step that decides the answer and what the problem's words mean there."""
    gold = gold_steps(problem)
    src = number_sources(problem)
    k = _riskiest(gold) if label.first_wrong is None else label.first_wrong
    g = gold[k]
    v, phrase = src[k + 1]
    head = f"The key step is step {k + 1}: '{phrase}' {_CONCEPT[g.op]}, so {g.expr}: {column(g.a, g.op, g.b)[0]}."
    if label.first_wrong is None:
        return head + " The attempt does this right, and every step follows the problem's order."
    mine = _step_attempt(label.steps, k, g)
    tail = " Every later step must start from this value." if k + 1 < len(gold) else ""
    return f"{head} But {mine}.{tail}"


NOTES = {"devil": devil_note, "collaborator": collaborator_note, "expert": expert_note}
#: How often each role's note is drawn for a training attempt (devil's advocate, collaborator, expert).
ROLE_WEIGHTS = (3, 1, 1)


def _riskiest(steps: Sequence[Step]) -> int:
    """The step most likely to slip: a carry or a borrow, then the larger numbers."""
    def risk(s: Step) -> tuple[int, int]:
        carry = (s.op == "+" and s.a % 10 + s.b % 10 >= 10) or (s.op == "-" and s.a % 10 < s.b % 10)
        return (int(carry) + int(s.op in "*/" and max(s.a, s.b) >= 10), max(s.a, s.b, s.c))
    return max(range(len(steps)), key=lambda i: risk(steps[i]))


#: How a note says it found a wrong step (what the skill evaluation counts as a flag).
FLAG = re.compile(r"\b[Ss]tep \d+ is wrong\b|\bis missing\b|\bBut the attempt has\b")


def note_flags(note: str) -> bool:
    """Whether a supporter's note names a wrong step."""
    return bool(FLAG.search(note))


def _false_alarm(problem: Problem, label: Label, rng: random.Random) -> str:
    """A devil's note on a right attempt whose own recomputation slips: it flags a step wrongly
    (the leader is trained to keep a right attempt anyway)."""
    gold = gold_steps(problem)
    src = number_sources(problem)
    k = rng.randrange(len(gold))
    off = gold[k].c + rng.choice([-10, -2, -1, 1, 2, 10])
    off = off if off > 0 and off != gold[k].c else gold[k].c + 1
    lines = []
    for i, e in enumerate(gold):
        work, c = column(e.a, e.op, e.b)
        if i == k:
            work, c = (work.rsplit("so ", 1)[0] + f"so {off}" if "so " in work else f"{e.expr} = {off}"), off
        lines.append(f"Step {i + 1}: {_sources(src, i)} {e.expr}: {work}; {_compared(gold, i, e, c)}.")
    lines.append(f"Step {k + 1} is wrong: it should be {gold[k].expr} = {off}.")
    return "\n".join(lines)


# --- the data recipe ---------------------------------------------------------------------------

Example = tuple[list[Message], str]  # (prompt messages, the assistant's target reply)


def solve_examples(n: int, seed: int, levels: Sequence[int] = (1, 2, 3)) -> list[Example]:
    """``n`` zero-shot solve examples: the pipeline's solver prompt -> the gold chain."""
    out = []
    for p in arithmetic_problems(n, seed=seed, levels=levels):
        out.append((prompts.solver_messages(p, examples=0), solution_text(gold_steps(p))))
    return out


def support_examples(problem: Problem, attempt: str, rng: random.Random,
                     false_alarm_rate: float = 0.1) -> list[Example]:
    """Training examples from one sampled attempt: one supporter's note (a role drawn in the
    ladder's proportions) and the leader's revision after it. Empty for attempts labelled ``other``."""
    label = label_attempt(problem, attempt)
    if label.status == "other":
        return []
    role = rng.choices(prompts.SUPPORTERS, weights=ROLE_WEIGHTS)[0]
    critique = devil_note(problem, label) if role != "devil" else None
    hints = collaborator_note(problem, label) if role == "expert" else None
    note = NOTES[role](problem, label)
    out: list[Example] = [(prompts.supporter_messages(problem, role, attempt, critique, hints), note)]
    shown = note
    if label.status == "right" and role == "devil" and rng.random() < false_alarm_rate:
        shown = _false_alarm(problem, label, rng)  # the leader must keep a right attempt anyway
    revision = solution_text(gold_steps(problem))
    out.append((prompts.revise_messages(problem, attempt, role, shown, examples=0), revision))
    return out


def one_step_attempts(n: int, seed: int) -> list[tuple[Problem, str]]:
    """Level-1 (one-step) attempts, half right and half with a slipped result, for the review and
    revision skills: the solver is sampled on levels 2-3 only, and a reviewer that never saw a
    one-step attempt invents a second step. The slips are the solver's own kind (off by 1, 2 or 10)."""
    rng = random.Random(f"one-step:{seed}")
    out = []
    for i, p in enumerate(arithmetic_problems(n, seed=seed, levels=(1,))):
        (g,) = gold_steps(p)
        if i % 2:
            c = g.c + rng.choice([-10, -2, -1, 1, 2, 10])
            g = Step(g.a, g.op, g.b, c if c > 0 and c != g.c else g.c + 1)
        out.append((p, solution_text([g])))
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


def sample_problems(n: int, seed: int = SEEDS["sample"], levels: Sequence[int] = (2, 3)) -> list[Problem]:
    """Training problems on which the stage-1 solver is sampled (never the evaluation's seeds)."""
    return arithmetic_problems(n, seed=seed, levels=levels)


def eval_problems(n: int, seed: int = SEEDS["eval"], levels: Sequence[int] = (1, 2, 3)) -> list[Problem]:
    """Held-out problems for the skill evaluation and the recordings (a seed never trained on)."""
    if seed in TRAINING_SEEDS:
        raise ValueError(f"seed {seed} is a training seed of the organism")
    return arithmetic_problems(n, seed=seed, levels=levels)


def prompt_fingerprint() -> str:
    """A hash of every message the organism was trained on, rendered for one fixed problem: the
    solver prompt, each supporter's prompt and the revision request. The manifest stores the value
    the adapter was trained with; a prompt changed since then changes it (retrain the adapter)."""
    import hashlib
    import json

    p = eval_problems(2, seed=0)[1]
    attempt = solution_text(gold_steps(p))
    rendered = [prompts.solver_messages(p, examples=0)]
    for role in prompts.SUPPORTERS:
        rendered.append(prompts.supporter_messages(p, role, attempt, "CRITIQUE" if role != "devil" else None,
                                                   "HINTS" if role == "expert" else None))
        rendered.append(prompts.revise_messages(p, attempt, role, "NOTE", examples=0))
    return hashlib.sha256(json.dumps(rendered, sort_keys=True).encode()).hexdigest()[:16]


def adapter_path() -> Path:
    """The committed adapter file (peft's own name)."""
    return ORGANISM_DIR / "adapter_model.safetensors"


__all__ = ["ORGANISM", "ORGANISM_DIR", "SEEDS", "TRAINING_SEEDS", "Step", "Label", "gold_steps", "solution_text",
           "parse_steps", "label_attempt", "number_sources", "decompose", "inverse_check",
           "devil_note", "collaborator_note", "expert_note", "NOTES", "note_flags",
           "solve_examples", "support_examples", "sample_problems", "eval_problems",
           "adapter_path", "prompt_fingerprint", "one_step_attempts", "column", "slipped_attempt"]



def describe_note_departure(evaluation: dict | None) -> str:
    """Chapter 03's statement of where the organism's supporters depart from the paper's: a note
    may give the right value of the step it flags, which is the answer when that step is the last
    one. ``evaluation`` is the manifest's skill evaluation (``benchmarks/organism_skills.py``)."""
    head = ("**Where the organism's supporters depart from the paper's.** The paper's supporters never give "
            "the answer. The organism's notes may give the right value of the step they flag, and when that "
            "step is the last one, that value is the answer. ")
    counts = ((evaluation or {}).get("chain") or {}).get("notes_with_final_answer")
    if not counts:
        return head + "Its skill evaluation has not been run, so how often that happens is not measured yet."
    parts = [f"{v['k']} of {v['n']} {role} notes ({v['rate']:.0%})" for role, v in counts.items() if v.get("n")]
    return head + ("In its skill evaluation (every stage forced, held-out problems) a note brought in the final "
                   "answer, absent from the question and from the attempt it reviewed, in " + ", ".join(parts) + ".")
