"""Round 3 of the model organism: the careful method, tried on top of v5's adapter and not shipped.

It left the package (``lase_nb``) for this folder, beside its stored evaluation (``README.md`` here,
"Round 3, the careful method"): no chapter reads it. Scripts import it with this folder on
``sys.path`` (``import round3``); importing it registers its held-out problem set with the loader
(``organism-held-out-r3``, :func:`lase_nb.runs.register_problem_set`).

Round 3 (``data/organism/README.md``, "Round 3, the careful method") tried to teach every role of
every strategy one skill: a step worked digit by digit in one fixed format (:func:`careful`,
checked by :func:`read_careful`), trained first on its own (:func:`unit_steps`,
:func:`unit_examples`), then in the roles (:func:`round3_examples`): a devil's advocate that checks
each step by it (:func:`careful_devil_note`), a leader's revision that redoes the flagged step and
carries a changed value (:func:`carrying_revision`), debate and aggregation follow-ups that redo
the first step where the solutions differ (:func:`reconcile_text`). It missed its targets, so the
shipped adapter is still v5's (:mod:`lase_nb.organism.recipe` holds v5's formats and recipe, which this
module builds on). Still in use: the readers of a recorded chain (:func:`read_revision`,
:func:`follow_up_format`, :func:`read_careful`) in ``benchmarks/organism_skills.py``; round 3's
held-out problems (:func:`held_out_problems`, :data:`RECORDINGS_R3`), which its preregistration
fixed and a manifest's ``problem_set`` regenerates; the recipe in ``data/organism/train.py``.

Everything here is deterministic given its seed.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from lase_nb import prompts
from lase_nb.datasets import arithmetic_problems
from lase_nb.runs import register_problem_set
from lase_nb.organism.recipe import (_APPLY, _INVERSE, _OP_OF, _SIGN, CALIBRATION_POOL, EVAL_SEEDS, ROLE_WEIGHTS, Example, Label, Step,
                       _attempt_of, _expected, _obeys, _riskiest, _sources, collaborator_note, draw_key,
                       eval_problems, expert_note, first_fault, flagged_step, gold_steps, label_attempt,
                       number_sources, parse_steps, recorded_chains, solution_text)
from lase_nb.types import Problem

#: Round 3's unit-skill steps, as the keyword arguments of :func:`unit_steps` ("train" steps only).
UNIT_STEPS = {"n": 1000, "seed": 211, "split": "train"}


#: The recordings made before round 3 (folders under ``data/traces``): round 3's held-out problems
#: share no chain with any of their problems.
RECORDED_BEFORE_R3 = ("arith-smollm2", "arith-organism-tell", "arith-organism-point", "control-level1")


def chains_recorded_before_r3(traces_root: str | Path | None = None) -> frozenset:
    """The chain of every problem in a recording of :data:`RECORDED_BEFORE_R3` (each run's problems
    regenerated from its manifest, :func:`lase_nb.organism.recipe.recorded_chains`) and of the first
    :data:`CALIBRATION_POOL` problems of each calibration seed: what round 3's recordings must not repeat."""
    chains = set(recorded_chains(RECORDED_BEFORE_R3, traces_root))
    for name in ("calibrate", "calibrate3"):
        chains |= {draw_key(p) for p in eval_problems(CALIBRATION_POOL, seed=EVAL_SEEDS[name])}
    return frozenset(chains)


#: Round 3's held-out recordings, as the preregistration fixes them: each run a slice
#: ``[offset, offset + n)`` of :func:`held_out_problems` (seed ``record3``); ``levels`` keeps only
#: those levels of its slice. Runs on the same slice share problems by design (paired tests).
RECORDINGS_R3: dict[str, dict] = {
    "lase-full": {"offset": 0, "n": 200, "what": "LASE with every stage forced (replayed at any thresholds)"},
    "lase-large": {"offset": 200, "n": 600, "what": "gated LASE at the preregistered thresholds (the primary test)"},
    **{name: {"offset": 0, "n": 120, "what": what} for name, what in (
        ("single", "the leader alone"), ("mv", "majority vote of 7"), ("mad", "debate, 3 agents x 2 rounds"),
        ("moa", "Mixture-of-Agents, 2 layers x 3"), ("down", "DOWN at its calibrated threshold"),
        ("careful", "a labelled reference: the single agent asked to work every step by the careful method"))},
    "lase-shuffled": {"offset": 0, "n": 60, "what": "LASE with the supporters' order shuffled"},
    "lase-mv": {"offset": 0, "n": 60, "what": "LASE+MV(5)"},
    "control": {"offset": 800, "n": 240, "levels": [1],
                "what": "the negative control: both models' full chains on this slice's level-1 problems"},
}


def held_out_problems(n: int, seed: int = EVAL_SEEDS["record3"]) -> list[Problem]:
    """Round 3's held-out problems: :func:`eval_problems` of ``seed`` (levels 1-3) less every chain
    of :func:`chains_recorded_before_r3`; a recording takes a slice of this list (its offset and
    count are in the preregistration), so runs that share problems share them by design."""
    return eval_problems(n, seed=seed, exclude=_recorded_before())


@functools.lru_cache(maxsize=1)
def _recorded_before() -> frozenset:
    return chains_recorded_before_r3()


__all__ = ["UNIT_STEPS", "RECORDED_BEFORE_R3", "CALIBRATION_POOL", "RECORDINGS_R3", "chains_recorded_before_r3",
           "held_out_problems", "careful", "CarefulWork", "read_careful", "step_split", "unit_steps",
           "unit_examples", "check_step_note", "careful_devil_note", "carrying_revision", "reconcile_text",
           "ROLE_TRAINING", "round3_examples", "read_revision", "follow_up_format"]


# --- the careful method: one step worked digit by digit, in one fixed format ---------------------

_PLACE = ("ones", "tens", "hundreds", "thousands")


def _digits(x: int, width: int) -> list[int]:
    """``x``'s digits from the ones up, padded with zeros to ``width``."""
    return [(x // 10 ** i) % 10 for i in range(width)]


def _join(written: Sequence[int]) -> int:
    """The number whose columns (ones first) were written as ``written`` (the last may exceed 9)."""
    return sum(d * 10 ** i for i, d in enumerate(written))


def _careful_add(a: int, b: int) -> tuple[str, int]:
    width = max(len(str(a)), len(str(b)))
    da, db, carry, parts, written = _digits(a, width), _digits(b, width), 0, [], []
    for i in range(width):
        s = da[i] + db[i] + carry
        terms = f"{da[i]} + {db[i]}" + (f" + {carry}" if carry else "")
        if i == width - 1:
            parts.append(f"{_PLACE[i]} {terms} = {s}, write {s}")
            written.append(s)
        else:
            carry = s // 10
            parts.append(f"{_PLACE[i]} {terms} = {s}, write {s % 10}" + (f" carry {carry}" if carry else ""))
            written.append(s % 10)
    return "; ".join(parts), _join(written)


def _careful_sub(a: int, b: int) -> tuple[str, int | None]:
    if b > a:
        return f"{b} is more than {a}, so it goes below zero", None
    width = len(str(a))
    da, db, borrow, parts, written = _digits(a, width), _digits(b, width), 0, [], []
    for i in range(width):
        top = da[i] - borrow
        head = f"{da[i]} - {borrow}" if borrow else f"{da[i]}"
        if borrow:
            parts_top = f"{_PLACE[i]} {head} = {top}, "
        else:
            parts_top = f"{_PLACE[i]} "
        if top < db[i]:
            d = top + 10 - db[i]
            parts.append(f"{parts_top}{top} - {db[i]} borrows, {top + 10} - {db[i]} = {d}, write {d}")
            borrow = 1
        else:
            d = top - db[i]
            parts.append(f"{parts_top}{top} - {db[i]} = {d}, write {d}")
            borrow = 0
        written.append(d)
    return "; ".join(parts), _join(written)


def _careful_mul(a: int, b: int) -> tuple[str, int]:
    big, small = (a, b) if b < 10 else (b, a)
    if small >= 10:  # two numbers of two digits: by tens and ones of the second (not in levels 1-3)
        t, o = small - small % 10, small % 10
        return f"{big} × {t} + {big} × {o} = {big * t} + {big * o} = {big * small}", big * small
    if big < 10:
        return f"{big} × {small} = {big * small}", big * small
    width = len(str(big))
    dg, carry, parts, written = _digits(big, width), 0, [], []
    for i in range(width):
        p = dg[i] * small
        line = f"{_PLACE[i]} {dg[i]} × {small} = {p}"
        s = p + carry
        if carry:
            line += f", {p} + {carry} = {s}"
        if i == width - 1:
            parts.append(f"{line}, write {s}")
            written.append(s)
        else:
            carry = s // 10
            parts.append(f"{line}, write {s % 10}" + (f" carry {carry}" if carry else ""))
            written.append(s % 10)
    return "; ".join(parts), _join(written)


def _careful_div(a: int, b: int) -> tuple[str, int | None]:
    if b == 0:
        return f"{a} ÷ 0 has no value", None
    if b >= 10:
        return (f"{b} × {a // b} = {b * (a // b)}", a // b) if a % b == 0 else (f"{a} ÷ {b} does not come out even", None)
    digits = [int(c) for c in str(a)]
    cur, i = digits[0], 1
    while cur < b and i < len(digits):
        cur, i = cur * 10 + digits[i], i + 1
    parts, q = [], 0
    while True:
        d = cur // b
        r = cur - d * b
        parts.append(f"{cur} ÷ {b} = {d}: {b} × {d} = {d * b}, {cur} - {d * b} = {r}")
        q = q * 10 + d
        if i == len(digits):
            break
        cur, i = r * 10 + digits[i], i + 1
    if r:
        parts.append(f"{r} is left over, so it does not come out even")
        return "; ".join(parts), None
    return "; ".join(parts), q


_CAREFUL = {"+": _careful_add, "-": _careful_sub, "*": _careful_mul, "/": _careful_div}


def careful(a: int, op: str, b: int) -> tuple[str, int | None]:
    """Work ``a op b`` out by the careful method, one column at a time from one-digit facts, in one
    fixed format: ``47 + 38: ones 7 + 8 = 15, write 5 carry 1; tens 4 + 3 + 1 = 8, write 8; so 85``.
    A sum or difference goes column by column (every column names both digits, a missing one as
    0, with its carry or borrow); a product multiplies each digit of the longer number by the
    one-digit one; a quotient by a one-digit divisor is a long division. Returns the whole line
    and its value (None when a quotient does not come out even or a difference goes below zero)."""
    work, value = _CAREFUL[op](a, b)
    tail = f"; so {value}" if value is not None else ""
    return f"{a} {_SIGN[op]} {b}: {work}{tail}", value


_FACT = re.compile(r"(\d+(?:\s*[+\-×÷]\s*\d+)+)\s*=\s*(\d+)")
_CAREFUL_HEAD = re.compile(r"(\d+)\s*([+\-×÷])\s*(\d+):")


@dataclass(frozen=True)
class CarefulWork:
    """A careful line as written: its step, the value it ends with (``so c``), whether every fact
    in it is true (``a op b = c`` with ÷ as whole-number division), the first false fact, and
    whether the value is the step's true result."""

    a: int
    op: str
    b: int
    value: int | None
    facts_true: bool
    first_false: str | None
    right: bool


def _eval_fact(expr: str) -> int:
    tokens = re.findall(r"\d+|[+\-×÷]", expr)
    acc = int(tokens[0])
    for sign, num in zip(tokens[1::2], tokens[2::2]):
        n = int(num)
        acc = {"+": acc + n, "-": acc - n, "×": acc * n, "÷": acc // n if n else -1}[sign]
    return acc


def read_careful(text: str) -> CarefulWork | None:
    """Parse and check the first careful line in ``text`` (None when there is none): every fact it
    states is recomputed, and its value (``so c``) compared with the step's true result."""
    head = _CAREFUL_HEAD.search(text)
    if head is None:
        return None
    a, op, b = int(head.group(1)), _OP_OF[head.group(2)], int(head.group(3))
    rest = text[head.end():].split("\n")[0]
    so = re.search(r"\bso (\d+)", rest)
    body = rest[:so.start()] if so else rest
    first_false = None
    for m in _FACT.finditer(body):
        if _eval_fact(m.group(1)) != int(m.group(2)):
            first_false = m.group(0)
            break
    value = int(so.group(1)) if so else None
    truth = _APPLY[op](a, b)
    return CarefulWork(a, op, b, value, first_false is None, first_false, value is not None and value == truth)


def step_split(a: int, op: str, b: int) -> str:
    """The split one step ``a op b`` belongs to (a fixed hash, as for problems): the unit skill is
    trained on "train" steps and measured on "eval" steps, so a measured step was never trained."""
    from lase_nb.datasets import split_of

    return split_of(f"step|{a}{op}{b}")


def unit_steps(n: int, seed: int, split: str, shapes: str = "random") -> list[Step]:
    """``n`` distinct steps whose :func:`step_split` is ``split``. "eval" steps are the steps of
    eval-split problems of levels 1-3 (the held-out unit test: the kinds and sizes those chains
    use, in their proportions). "train" steps, with ``shapes="random"`` (round 3's first unit
    stage), are drawn at random, a little wider (sums and differences up to two digits each,
    products of up to 99 by a digit, quotients up to 60 by a digit); with ``shapes="problems"``
    they are the steps of train-split problems of levels 1-3 (the eval steps' kinds in their
    proportions, one-digit operands included), topped up with random ones. The step split keeps
    the two sets apart either way."""
    out: list[Step] = []
    seen: set[tuple[int, str, int]] = set()

    def add(s: Step) -> None:
        key = (s.a, s.op, s.b)
        if key not in seen and step_split(*key) == split and s.c is not None and s.c >= 0:
            seen.add(key)
            out.append(s)

    if shapes not in ("random", "problems"):
        raise ValueError(f"shapes must be 'random' or 'problems', got {shapes!r}")
    if split == "eval" or shapes == "problems":
        for p in arithmetic_problems(4 * n, seed=seed, levels=(1, 2, 3), split=split):
            for s in gold_steps(p):
                add(s)
            if len(out) >= n:
                return out[:n]
    if split == "eval":
        raise ValueError(f"only {len(out)} distinct eval steps found for n={n}")
    rng = random.Random(f"unit:{split}:{seed}")
    while len(out) < n:
        op = rng.choices("+-*/", weights=(3, 3, 2.5, 1.5))[0]
        if op == "+":
            a, b = rng.randint(2, 99), rng.choice([rng.randint(2, 9), rng.randint(10, 99)])
        elif op == "-":
            a = rng.randint(10, 99) if rng.random() < 0.9 else rng.randint(100, 150)
            b = rng.randint(2, min(a - 1, 99))
        elif op == "*":
            big, small = rng.randint(2, 99), rng.randint(2, 9)
            a, b = (big, small) if rng.random() < 0.7 else (small, big)
        else:
            b = rng.randint(2, 9)
            a = b * rng.randint(2, 60)
        add(Step(a, op, b, _APPLY[op](a, b)))
    return out


def unit_examples(steps: Sequence[Step]) -> list[Example]:
    """The unit skill as chat examples: a step -> its careful line."""
    return [(prompts.careful_messages(s.expr), careful(s.a, s.op, s.b)[0]) for s in steps]


# --- round 3: supporters and a leader that check and carry by the careful method -------------------

_PLACE_WORD = {"+": "adds", "-": "takes away", "*": "multiplies by", "/": "divides by"}


def _inverse_routes(s: Step) -> list[tuple[str, int, int, int]]:
    """The ways to take a written step ``a op b = c`` back with a one-digit divisor at most: each
    is ``(op, x, y, target)``, ``x op y`` worked by the careful method must give ``target``, an
    operand of the step (never its result). The first undoes ``b`` and must give ``a``; the
    second, where there is one, undoes ``a`` and must give ``b``."""
    routes = []
    if s.op == "+":
        routes = [("-", s.c, s.b, s.a), ("-", s.c, s.a, s.b)]
    elif s.op == "-":
        routes = [("+", s.c, s.b, s.a), ("-", s.a, s.c, s.b)]
    elif s.op == "*":
        routes = [("/", s.c, s.b, s.a), ("/", s.c, s.a, s.b)]
    else:
        routes = [("*", s.c, s.b, s.a), ("/", s.a, s.c, s.b)]
    return [r for r in routes if not (r[0] == "/" and r[2] >= 10) and not (r[0] == "-" and r[1] < r[2])]


def _back(route: tuple[str, int, int, int], slip: int = 0, compact: bool = False) -> tuple[str, bool]:
    """One backwards check written out: the careful line of the inverse step, and whether it gives
    the operand back. ``slip`` (training false alarms only) shifts the line's final value;
    ``compact`` writes only whether it gives the operand back (no working)."""
    op, x, y, target = route
    work, v = careful(x, op, y)
    if slip and v is not None:
        work = re.sub(r"so \d+$", f"so {v + slip}", work)
        v = v + slip
    if compact:
        return f"{x} {_SIGN[op]} {y} {'gives' if v == target else 'does not give'} {target}", v == target
    return work, v == target


def check_step_note(i: int, s: Step, e: Step, src: Sequence[tuple[int, str]],
                    slip: int = 0, compact: bool = False) -> tuple[list[str], bool]:
    """The devil's check of written step ``i`` (``e``: as the problem says it should read): where its
    numbers come from, then its result taken back by the careful method; a check that fails is
    done again by the other route before the step is called failing (never by a route that
    redoes the step itself, which would state its value). Returns the lines and whether the step
    holds. ``slip`` makes the first check slip (a false alarm the recheck catches); ``compact``
    leaves out the working (for a line whose digits would state the final answer)."""
    head = f"Step {i + 1}: {_sources(src, i)} {e.expr}"
    if (s.a, s.op, s.b) != (e.a, e.op, e.b):
        return [f"{head}, but the attempt writes {s.expr}: it fails."], False
    routes = [r for r in _inverse_routes(s) if not (r[1] == s.a and r[2] == s.b)]
    if not routes:
        return [f"{head}; {s.expr} = {s.c} cannot be taken back by a one-digit step: it holds."], True
    work, ok = _back(routes[0], slip, compact)
    target = routes[0][3]
    tail = "" if compact else f"; it began at {target}"
    lines = [f"{head}; back, {work}{tail}: " + ("it holds." if ok else "check again.")]
    if ok:
        return lines, True
    again = routes[1] if len(routes) > 1 else routes[0]
    work2, ok2 = _back(again, 0, compact)
    if compact:
        tail2 = ""
    elif len(routes) > 1:
        tail2 = f"; the step {_PLACE_WORD[s.op]} {again[3]}"
    else:
        tail2 = f"; it began at {target}"
    lines.append(f"Again, {work2}{tail2}: " + ("it holds, the first check slipped." if ok2 else "it fails."))
    return lines, ok2


def careful_devil_note(problem: Problem, label: Label, attempt: str | None = None,
                       slip_at: int | None = None, slip: int = 0) -> str:
    """The round-3 devil's advocate: each written step checked in order by the careful method
    (:func:`check_step_note`) up to the first step that fails, then "Step k fails: redo ..."
    (never its value); when every step holds, the riskiest step for the leader to defend. A step
    whose working would write the final answer's value is checked without its working.
    ``slip_at``/``slip`` (training only) make one step's first check slip, to be caught by the recheck."""
    attempt = _attempt_of(label) if attempt is None else attempt
    src = number_sources(problem)
    expected = _expected(problem, label)
    lines: list[str] = []
    for i, s in enumerate(label.steps[:len(expected)]):
        got, holds = check_step_note(i, s, expected[i], src, slip if i == slip_at else 0)
        if not _obeys("\n".join(got), problem, attempt):
            got, holds = check_step_note(i, s, expected[i], src, slip if i == slip_at else 0, compact=True)
        lines += got
        if not holds:
            e = expected[i]
            if (s.a, s.op, s.b) == (e.a, e.op, e.b):
                lines.append(f"Step {i + 1} fails: redo {s.expr} by the careful method.")
            elif s.a != e.a:
                lines.append(f"Step {i + 1} fails: it must start from {e.a}.")
            else:
                lines.append(f"Step {i + 1} fails: redo it as {e.expr}.")
            return "\n".join(lines)
    if len(label.steps) < len(expected):
        k = len(label.steps)
        lines.append(f"Step {k + 1}: {_sources(src, k)} {expected[k].expr}, but the attempt stops before it: it fails.")
        lines.append(f"Step {k + 1} is missing: add {expected[k].expr}.")
        return "\n".join(lines)
    r = _riskiest(label.steps)
    lines.append(f"Every step holds; the riskiest is step {r + 1}, {label.steps[r].expr}: defend it.")
    return "\n".join(lines)


def _chain_from(problem: Problem, steps: Sequence[Step], k: int, value: int) -> list[Step]:
    """``steps`` with step ``k``'s result set to ``value`` and every later step of the problem
    recomputed from it (the problem's operations and operands)."""
    gold = gold_steps(problem)
    out = list(steps[:k]) + [Step(steps[k].a, steps[k].op, steps[k].b, value)]
    x = value
    for g in gold[k + 1:]:
        c = _APPLY[g.op](x, g.b)
        if c is None:
            return out
        out.append(Step(x, g.op, g.b, c))
        x = c
    return out


def carrying_revision(problem: Problem, label: Label, flagged: int | None) -> str:
    """The round-3 leader's revision after a note naming step ``flagged`` (from 0): that step redone
    by the careful method from where the attempt stood (the problem's operation and operand, the
    attempt's previous result); the same value keeps the attempt ("my answer stands"), a new one
    is carried: the chain rewritten from that step on with the new value, its last operation
    inside the box. No step named: the attempt is kept."""
    steps = list(label.steps)
    if flagged is None or flagged >= len(_expected(problem, label)) or not steps:
        return f"No step is shown to fail, so my answer stands.\n{solution_text(steps) if steps else ''}".strip()
    e = _expected(problem, label)[flagged]
    work, c = careful(e.a, e.op, e.b)
    head = f"Step {flagged + 1} again: {work}."
    written = steps[flagged] if flagged < len(steps) else None
    if c is None:
        return f"{head} It does not come out even, so my answer stands.\n{solution_text(steps)}"
    if written is not None and written == Step(e.a, e.op, e.b, c):
        return f"{head} That is what I had, so my answer stands.\n{solution_text(steps)}"
    base = steps[:flagged] + [Step(e.a, e.op, e.b, c)]
    chain = _chain_from(problem, base + steps[flagged + 1:] if written is not None else base, flagged, c)
    had = f"I had {written}" if written is not None else "I had left it out"
    return (f"{head} {had}, so step {flagged + 1} becomes {e.expr} = {c} and I carry {c} on.\n"
            f"{solution_text(chain)}")


def _first_difference(chains: Sequence[Sequence[Step]]) -> int | None:
    """The first step at which the chains differ (None when all agree)."""
    n = max(len(c) for c in chains)
    for i in range(n):
        if len({c[i] if i < len(c) else None for c in chains}) > 1:
            return i
    return None


def reconcile_text(problem: Problem, own: str | None, others: Sequence[str], who: str) -> str | None:
    """A follow-up in debate or aggregation (MAD, DOWN, MoA): the solutions compared step by step;
    where they first differ, that step redone by the careful method from the value they agree on
    and carried to the end; when they agree, the agreed chain kept. ``own`` is the writer's own
    solution (None for an aggregator); ``who`` names the others ("agent", "candidate"). None when a
    solution has no steps to compare."""
    texts = ([own] if own is not None else []) + list(others)
    chains = [parse_steps(t) for t in texts]
    if not all(chains):
        return None
    names = (["I"] if own is not None else []) + [f"{who} {i + 1}" for i in range(len(others))]
    k = _first_difference(chains)
    if k is None:
        subject = "We agree" if own is not None else f"The {who}s agree"
        return f"{subject} on every step, so the solution stands.\n{solution_text(chains[0])}"
    src = number_sources(problem)
    gold = gold_steps(problem)
    if k >= len(gold):
        return None
    prev = gold[0].a if k == 0 else chains[0][k - 1].c
    e = Step(prev, gold[k].op, gold[k].b, -1)
    shown = [f"{n} {'have' if n == 'I' else 'has'} {c[k] if k < len(c) else 'no step'}"
             for n, c in zip(names, chains)]
    work, c = careful(e.a, e.op, e.b)
    if c is None:
        return None
    base = (chains[0][:k] if k <= len(chains[0]) else chains[0]) + [Step(e.a, e.op, e.b, c)]
    chain = _chain_from(problem, base, k, c)
    lead = "We differ" if own is not None else f"The {who}s differ"
    return (f"{lead} at step {k + 1}: {', '.join(shown)}. '{src[k + 1][1]}' gives {e.expr}. "
            f"Step {k + 1} again: {work}. So step {k + 1} is {e.expr} = {c}, carried on:\n{solution_text(chain)}")


def _false_alarm_r3(problem: Problem, label: Label, rng: random.Random) -> str:
    """A devil's note on a right attempt whose check and recheck of one step both slip: it calls a
    step that holds failing (what a devil without the careful method does 68% of the time). The
    leader is trained to redo that step and keep its answer; the devil never trains on one."""
    src = number_sources(problem)
    expected = _expected(problem, label)
    k = rng.randrange(len(label.steps))
    lines: list[str] = []
    for i in range(k):
        lines += check_step_note(i, label.steps[i], expected[i], src)[0]
    s = label.steps[k]
    routes = _inverse_routes(s) or [(_INVERSE[s.op], s.c, s.b, s.a)]
    work, _ = _back(routes[0], rng.choice([-10, -2, -1, 1, 2, 10]))
    lines.append(f"Step {k + 1}: {_sources(src, k)} {s.expr}; back, {work}; it began at {routes[0][3]}: check again.")
    work2, _ = _back(routes[-1], rng.choice([-10, -1, 1, 10]))
    lines.append(f"Again, {work2}; it fails.")
    lines.append(f"Step {k + 1} fails: redo {s.expr} by the careful method.")
    return "\n".join(lines)


def _misplaced_note(problem: Problem, label: Label, rng: random.Random) -> str | None:
    """A devil's note on a wrong attempt that names a step other than the one that fails (a devil
    that misses): the leader redoes the step it is shown, finds what it had, and keeps its answer."""
    fault = first_fault(problem, label)
    others = [i for i in range(len(label.steps)) if fault is None or i != fault.step]
    if not others:
        return None
    k = rng.choice(others)
    s = label.steps[k]
    return f"Step {k + 1} fails: redo {s.expr} by the careful method."


#: What each role of every strategy is trained on, for the manifest: the same sampled attempts and
#: the same skill (a step redone by the careful method, a changed value carried) for all of them.
ROLE_TRAINING = {
    "devil": "each step checked by the careful method (taken back to an operand, a failing check done again "
             "by the other route), the first failing step named with what to redo, never its value",
    "collaborator": "a method for the flagged step, never carried to a result",
    "expert": "the concept the flagged step needs, never its value",
    "revision": "the step a note names redone by the careful method; kept when it agrees (also after a false "
                "alarm or a note that names a step that holds), otherwise changed and carried to the box",
    "mad": "round 2 of debate: the three solutions compared step by step, the first step where they differ "
           "redone by the careful method and carried to the box; agreed chains kept",
    "down": "DOWN's debate rounds (peers with confidence scores): as MAD's",
    "moa": "MoA's later-layer proposers and aggregator (candidate solutions): as MAD's, by candidate",
    "down_judge": "DOWN's judge (candidate solutions): as MoA's aggregator",
    "unit": "the careful method on its own (a step -> its careful line)",
    "solve": "the quick one-line-per-step first answer, the last operation inside the box",
}


def round3_examples(problem: Problem, attempts: Sequence[str], rng: random.Random,
                    extra_notes: float = 0.25, false_alarm_rate: float = 0.3) -> list[tuple[str, Example]]:
    """Training examples of every role from one problem's sampled attempts (three, at a
    temperature), each tagged with its role (:data:`ROLE_TRAINING`). LASE's roles read the first
    attempt: the devil's note (on a right attempt, sometimes with one check that slips and is
    caught by the recheck), the collaborator's and expert's notes now and then, and the leader's
    revision after one note: the true note, a false alarm (right attempts) or a note that names a
    step that holds (wrong attempts). One follow-up of another strategy reads all three: MAD's
    debater, DOWN's debater (with confidences) or judge, or MoA's aggregator. No note states the
    answer (those are dropped)."""
    out: list[tuple[str, Example]] = []
    attempt = attempts[0]
    label = label_attempt(problem, attempt)
    if label.status in ("right", "wrong"):
        slip_at = None
        if label.status == "right" and rng.random() < 0.3:
            slip_at = rng.randrange(len(label.steps))
        critique = careful_devil_note(problem, label, attempt, slip_at=slip_at, slip=rng.choice([-1, 1, 10]))
        if _obeys(critique, problem, attempt):
            out.append(("devil", (prompts.supporter_messages(problem, "devil", attempt), critique)))
            hints = collaborator_note(problem, label, attempt).replace("in columns", "by the careful method")
            expert = expert_note(problem, label, attempt)
            if rng.random() < extra_notes and _obeys(hints, problem, attempt):
                out.append(("collaborator", (prompts.supporter_messages(problem, "collaborator", attempt, critique),
                                             hints)))
            if rng.random() < extra_notes and _obeys(expert, problem, attempt):
                out.append(("expert", (prompts.supporter_messages(problem, "expert", attempt, critique, hints),
                                       expert)))
            role = rng.choices(prompts.SUPPORTERS, weights=ROLE_WEIGHTS)[0]
            shown = {"devil": critique, "collaborator": hints, "expert": expert}[role]
            if role == "devil" and rng.random() < false_alarm_rate:
                alt = (_false_alarm_r3(problem, label, rng) if label.status == "right"
                       else _misplaced_note(problem, label, rng))
                shown = alt or shown
            if _obeys(shown, problem, attempt):
                out.append(("revision", (prompts.revise_messages(problem, attempt, role, shown, examples=0),
                                         carrying_revision(problem, label, flagged_step(shown)))))
    kind = rng.choices(["mad", "down", "moa", "down_judge"], weights=(3, 2, 3, 1))[0]
    if kind in ("mad", "down"):
        target = reconcile_text(problem, attempts[0], attempts[1:], "agent")
        conf = [round(rng.uniform(0.55, 0.99), 2) for _ in attempts[1:]] if kind == "down" else None
        msgs = prompts.peers_messages(problem, attempts[0], list(attempts[1:]), conf, examples=0)
    else:
        target = reconcile_text(problem, None, attempts, "candidate")
        system = prompts.JUDGE_SYSTEM if kind == "down_judge" else prompts.AGGREGATE_SYSTEM
        msgs = prompts.aggregate_messages(problem, list(attempts), system, examples=0)
    if target is not None:
        out.append((kind, (msgs, target)))
    return out


# --- reading a recorded chain, stage by stage (the round-3 targets and the counters that can fail) ---

_AGAIN = re.compile(r"Step (\d+) again:\s*(.*)")
_PEER_LEAD = re.compile(r"^\s*We (?:differ|agree)\b")
_AGG_LEAD = re.compile(r"^\s*The (?:candidate|agent)s (?:differ|agree)\b")
_LASE_TEXT = re.compile(r"\bagain again\b|^\s*Step \d+ again:|my answer stands|No step is shown to fail")


def read_revision(problem: Problem, attempt: str, note: str, revision: str) -> dict:
    """What a leader's revision did with a note: the step the note names (from 0, or None), whether
    the revision redid a step by the careful method and got it right, whether that gave a value
    other than the attempt's (changed), whether the rewritten chain uses it at that step and carries
    it on (carried), whether its box is the rewritten chain's last result, and whether the box
    contradicts its own recomputation (a changed value not carried, or a box not the chain's end)."""
    flagged = flagged_step(note)
    m = _AGAIN.search(revision)
    work = read_careful(m.group(2)) if m else None
    redone = int(m.group(1)) - 1 if m else None
    before = parse_steps(attempt)
    after_text = revision.split("\n", 1)[1] if "\n" in revision else ""
    chain = parse_steps(after_text)
    boxed = re.search(r"\\boxed\{\s*(\d+)\s*\}", revision)
    box = int(boxed.group(1)) if boxed else None
    changed = carried = None
    if work is not None and work.value is not None and redone is not None:
        old = before[redone].c if redone < len(before) else None
        changed = work.value != old
        if changed:
            at = chain[redone] if redone < len(chain) else None
            carried = (at is not None and at.c == work.value and
                       all(chain[i].a == chain[i - 1].c for i in range(redone + 1, len(chain))))
    box_is_end = bool(chain) and box is not None and box == chain[-1].c
    return {"flagged": flagged, "redone": redone, "recomputed": work is not None,
            "recomputed_right": None if work is None else work.right,
            "changed": changed, "carried": carried, "box_is_chain_end": box_is_end if chain else None,
            "contradicts": bool(changed and not carried) or (bool(chain) and box is not None and not box_is_end)}


def follow_up_format(text: str, kind: str) -> str:
    """Which format a debate or aggregation follow-up is written in: ``own`` (its strategy's:
    "We differ/agree ..." for a debater, "The candidates differ/agree ..." for an aggregator or
    judge), ``lase`` (LASE's revision text: "Step k again", "my answer stands") or ``other``."""
    own = _PEER_LEAD if kind == "peers" else _AGG_LEAD
    if own.search(text):
        return "own"
    if _LASE_TEXT.search(text):
        return "lase"
    return "other"


# a manifest's ``problem_set: organism-held-out-r3`` regenerates round 3's list (offset and count in the manifest)
register_problem_set("organism-held-out-r3", lambda manifest, n: held_out_problems(n, seed=int(manifest.get("seed", 0))))
