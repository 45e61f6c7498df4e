"""Problem sets: the project's own arithmetic generator and loaders for the paper's data sets.

The default set, ``arith``, is generated here (seeded, offline, graded difficulty). The paper's
sets (MATH-500, MATH Level 5, GSM8K, GSM-Symbolic, MMLU-Pro, GPQA-Diamond, TruthfulQA-MC) are
**not shipped** with this project because of their licences: the user supplies a file in the
set's published format and passes its path (``--data-path`` on the command line, ``data_path``
in a notebook). Every loader validates what it reads and raises :class:`~lase_nb.errors.DataError`
naming the file, the row (1-based line, or 1-based item of a JSON list) and the field.

A user's own benchmark is ``jsonl``: a JSON-lines file (or a JSON list) whose question and answer
fields the user names, with the answer's kind (:data:`ANSWER_KINDS`: a number, an option letter or
free text, graded as GSM8K's, MMLU-Pro's and MATH-500's answers are), passed as ``fields``
(:func:`jsonl_fields`; ``--question-field``, ``--answer-field``, ``--answer-kind`` on the command line).

Entry point: :func:`load_dataset` (``name``, ``path``, ``n``, ``seed``). Subsetting rule: when
``n`` is smaller than the number of problems available, a deterministic seeded subset of ``n``
problems is taken, kept in file order (MMLU-Pro: stratified by category); when ``n`` is larger,
all problems are used.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import random
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError, DataError
from .types import KIND_CHOICE, KIND_MATH, KIND_NUMBER, Problem

__all__ = [
    "DATASETS",
    "PAPER_SETS",
    "SPLITS",
    "arithmetic_problems",
    "content_key",
    "split_of",
    "load_dataset",
    "load_math500",
    "load_math_level5",
    "load_gsm",
    "load_mmlu_pro",
    "load_gpqa",
    "load_truthfulqa_mc",
    "load_jsonl",
    "jsonl_fields",
    "ANSWER_KINDS",
    "stratified_indices",
]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: Names accepted by :func:`load_dataset`, with a one-line description each.
DATASETS: dict[str, str] = {
    "arith": "generated arithmetic word problems (default: one-step; levels 1-3 = 1-3 steps); offline default, owned by this project",
    "arith_noop": "the generated problems with one irrelevant quantity added to the text (GSM-Symbolic's NoOp idea); owned by this project",
    "math500": "MATH-500 (JSONL: problem, solution, answer, unique_id); free-form math answers",
    "math_lv5": "MATH test set, Level 5 only (directory of per-problem JSON files, or JSONL); 1,324 problems",
    "gsm8k": "GSM8K test (JSONL: question, answer ending in '#### N')",
    "gsm_symbolic": "GSM-Symbolic (JSONL: id, instance, question, answer ending in '#### N'); paper used 500",
    "mmlu_pro": "MMLU-Pro (JSONL/JSON/CSV: question, options, answer letter, category); stratified by category",
    "gpqa": "GPQA (CSV: Question, Correct Answer, Incorrect Answer 1-3); paper used Diamond (198)",
    "truthfulqa": "TruthfulQA multiple choice (TruthfulQA.csv or mc_task.json, mc1 targets); 817 questions",
    "jsonl": "your own file (JSONL or a JSON list): name its question and answer fields and the answer's kind "
             "(number, letter or text)",
}

#: The paper's sets, loaded from a user-supplied path (never committed to this repository).
PAPER_SETS: tuple[str, ...] = tuple(k for k in DATASETS if k not in ("arith", "arith_noop", "jsonl"))

#: The kinds of answer a ``jsonl`` file may hold, each graded as the paper's sets of that kind are:
#: ``number`` as GSM8K's (numeric value, units and commas ignored), ``letter`` as MMLU-Pro's (the
#: option letter), ``text`` as MATH-500's (numbers by value, words by normalised text, LaTeX by math-verify).
ANSWER_KINDS: dict[str, str] = {"number": KIND_NUMBER, "letter": KIND_CHOICE, "text": KIND_MATH}

#: Hub locations used only when ``datasets`` is importable and ``LASE_ALLOW_HUB=1``.
_HUB: dict[str, tuple[str, str | None, str]] = {
    "math500": ("HuggingFaceH4/MATH-500", None, "test"),
    "gsm8k": ("openai/gsm8k", "main", "test"),
    "gsm_symbolic": ("apple/GSM-Symbolic", "main", "test"),
    "mmlu_pro": ("TIGER-Lab/MMLU-Pro", None, "test"),
    "gpqa": ("Idavidrein/gpqa", "gpqa_diamond", "train"),
    "truthfulqa": ("truthfulqa/truthful_qa", "multiple_choice", "validation"),
    "math_lv5": ("EleutherAI/hendrycks_math", "*", "test"),
}
_MATH_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra",
                  "number_theory", "prealgebra", "precalculus")

# ---------------------------------------------------------------------------------------------
# 1. The project's own generated set: arithmetic word problems
# ---------------------------------------------------------------------------------------------

_PEOPLE = (("Tom", "he", "his"), ("Ana", "she", "her"), ("Ravi", "he", "his"),
           ("Mei", "she", "her"), ("Sam", "he", "his"), ("Lena", "she", "her"),
           ("Omar", "he", "his"), ("Zoe", "she", "her"), ("Ken", "he", "his"),
           ("Nadia", "she", "her"))
_ITEMS = ("apples", "pencils", "stickers", "marbles", "cookies", "books", "cards", "shells",
          "balloons", "stamps")
_BOXES = ("boxes", "bags", "packs", "baskets")
_THINGS = ("notebook", "pen", "toy car", "kite", "ball", "hat", "lunch box", "puzzle")

Op = tuple[str, int]
Built = tuple[str, int, list[Op], str]  # text, start value, operations, topic


class _Ctx:
    """Names and nouns for one problem, drawn from the problem's own RNG; ``wide`` asks level 1
    for its wider number ranges (the train / eval splits, :func:`arithmetic_problems`)."""

    def __init__(self, rng: random.Random, wide: bool = False):
        self.wide = wide
        people = rng.sample(_PEOPLE, 2)
        self.name, self.p, self.poss = people[0]
        self.P = self.p.capitalize()
        self.friend = people[1][0]
        self.item = rng.choice(_ITEMS)
        self.box = rng.choice(_BOXES)
        self.thing, self.thing2 = rng.sample(_THINGS, 2)


def _r(rng: random.Random, lo: int, hi: int) -> int:
    return rng.randint(lo, hi)


# Level 1: one step. Operands are single digits (a subtrahend's minuend up to 12).
def _one_step(g: random.Random, op: str, wide: bool = False) -> tuple[int, int]:
    """Level 1's operands ``(a, b)`` for ``a op b``: single digits, a minuend up to 12, and a
    dividend up to 12 that ``b`` divides. ``wide`` (the splits): a sum of up to 49 and 19, a
    minuend from 10 to 60, a product of up to 29 and 9, a quotient up to 19, so that each split
    holds a few thousand distinct level-1 problems."""
    if wide:
        if op == "-":
            a = _r(g, 10, 60)
            return a, _r(g, 2, min(19, a - 1))
        if op == "/":
            b = _r(g, 2, 9)
            return b * _r(g, 2, 19), b
        if op == "*":
            return _r(g, 2, 29), _r(g, 2, 9)
        return _r(g, 2, 49), _r(g, 2, 19)
    if op == "-":
        a = _r(g, 5, 12)
        return a, _r(g, 2, a - 1)
    if op == "/":
        b = _r(g, 2, 5)
        return b * _r(g, 2, 12 // b), b
    return _r(g, 2, 9), _r(g, 2, 9)


#: Level 1's templates: (name, question, operation, topic). The question names the operands
#: ``{a}`` and ``{b}`` and the problem's people and things (``{c.name}``, ``{c.item}``: :class:`_Ctx`).
_LEVEL1 = (
    ("add_items", "{c.name} has {a} {c.item} and buys {b} more. How many {c.item} does {c.p} have now?",
     "+", "items"),
    ("sub_items", "{c.name} had {a} {c.item} and gave {b} of them to {c.friend}. "
                  "How many {c.item} does {c.name} have left?", "-", "items"),
    ("mul_items", "There are {a} {c.box} with {b} {c.item} in each. How many {c.item} are there altogether?",
     "*", "items"),
    ("div_items", "{c.name} shares {a} {c.item} equally among {b} friends. How many {c.item} does "
                  "each friend get?", "/", "items"),
    ("add_money", "A {c.thing} costs ${a} and a {c.thing2} costs ${b}. How many dollars do they cost together?",
     "+", "money"),
    ("sub_money", "{c.name} has ${a} and spends ${b} on a {c.thing}. How many dollars does {c.p} have left?",
     "-", "money"),
    ("mul_money", "One {c.thing} costs ${a}. How many dollars does {c.name} pay for {b} of them?", "*", "money"),
    ("div_money", "{c.name} and {c.poss} friends share ${a} equally, {b} people in all. How many "
                  "dollars does each person get?", "/", "money"),
    ("add_time", "{c.name} reads for {a} minutes before lunch and {b} minutes after lunch. How many "
                 "minutes does {c.p} read in total?", "+", "time"),
    ("sub_time", "A bus ride takes {a} minutes. {c.name} has been on the bus for {b} minutes. How "
                 "many minutes of the ride are left?", "-", "time"),
    ("mul_time", "{c.name} practises the piano for {a} minutes each day. How many minutes does "
                 "{c.p} practise in {b} days?", "*", "time"),
)


def _level1(name: str, question: str, op: str, topic: str) -> Callable[[random.Random, _Ctx], Built]:
    """A level-1 template as a builder (named ``_l1_<name>``: the problem's ``template``)."""
    def build(g: random.Random, c: _Ctx) -> Built:
        a, b = _one_step(g, op, c.wide)
        return question.format(a=a, b=b, c=c), a, [(op, b)], topic

    build.__name__ = f"_l1_{name}"
    return build


# Level 2: two steps.
def _l2_add_sub(g: random.Random, c: _Ctx) -> Built:
    a, b = _r(g, 2, 9), _r(g, 2, 9)
    d = _r(g, 2, min(9, a + b - 1))
    return (f"{c.name} has {a} {c.item}. {c.P} buys {b} more and then gives {d} to {c.friend}. "
            f"How many {c.item} does {c.name} have now?", a, [("+", b), ("-", d)], "items")


def _l2_mul_sub(g: random.Random, c: _Ctx) -> Built:
    a, b = _r(g, 2, 6), _r(g, 2, 9)
    d = _r(g, 2, min(9, a * b - 1))
    return (f"{c.name} buys {a} {c.box} of {c.item} with {b} in each, then gives away {d}. "
            f"How many {c.item} does {c.p} have left?", a, [("*", b), ("-", d)], "items")


def _l2_mul_add(g: random.Random, c: _Ctx) -> Built:
    a, b, d = _r(g, 2, 6), _r(g, 2, 9), _r(g, 2, 9)
    return (f"A shelf has {a} rows with {b} {c.item} in each row, and {d} more {c.item} lie on "
            f"top. How many {c.item} are there in total?", a, [("*", b), ("+", d)], "items")


def _l2_earn_spend(g: random.Random, c: _Ctx) -> Built:
    a, b = _r(g, 2, 9), _r(g, 2, 6)
    d = _r(g, 2, min(9, a * b - 1))
    return (f"{c.name} earns ${a} an hour and works for {b} hours. Then {c.p} spends ${d} on a "
            f"{c.thing}. How many dollars does {c.p} have left?", a, [("*", b), ("-", d)], "money")


def _l2_spend_split(g: random.Random, c: _Ctx) -> Built:
    k, q, b = _r(g, 2, 5), _r(g, 2, 9), _r(g, 2, 9)
    a = k * q + b
    return (f"{c.name} has ${a}. After spending ${b}, {c.p} splits the rest equally among {k} "
            f"friends. How many dollars does each friend get?", a, [("-", b), ("/", k)], "money")


def _l2_walks(g: random.Random, c: _Ctx) -> Built:
    a, b, d = _r(g, 2, 9), _r(g, 2, 7), _r(g, 2, 9)
    return (f"{c.name} walks for {a} minutes every day for {b} days, and then takes one more walk "
            f"of {d} minutes. How many minutes does {c.p} walk in all?", a, [("*", b), ("+", d)],
            "time")


def _l2_groups(g: random.Random, c: _Ctx) -> Built:
    k, q = _r(g, 2, 5), _r(g, 2, 9)
    total = k * q
    a = _r(g, 2, total - 2)
    return (f"{c.name} has {a} red {c.item} and {total - a} blue {c.item}. {c.P} puts all of "
            f"them into {k} equal groups. How many {c.item} are in each group?", a,
            [("+", total - a), ("/", k)], "items")


def _l2_trip(g: random.Random, c: _Ctx) -> Built:
    a = _r(g, 12, 25)
    b = _r(g, 2, min(9, a - 8))
    d = _r(g, 2, min(9, a - b - 1))
    return (f"A trip takes {a} minutes. {c.name} rides a bike for {b} minutes and then walks for "
            f"{d} minutes. How many minutes of the trip are left?", a, [("-", b), ("-", d)], "time")


def _l2_pairs(g: random.Random, c: _Ctx) -> Built:
    a, b, k = _r(g, 2, 9), _r(g, 2, 9), _r(g, 2, 5)
    return (f"A {c.thing} costs ${a} and a {c.thing2} costs ${b}. How many dollars do {k} of each "
            f"cost?", a, [("+", b), ("*", k)], "money")


# Level 3: three steps.
def _l3_week(g: random.Random, c: _Ctx) -> Built:
    a, b, d = _r(g, 2, 20), _r(g, 2, 20), _r(g, 2, 20)
    e = _r(g, 2, min(20, a + b - 1))
    return (f"{c.name} has {a} {c.item}. On Monday {c.p} gets {b} more, on Tuesday {c.p} gives "
            f"{e} to {c.friend}, and on Wednesday {c.p} buys {d} more. How many {c.item} does "
            f"{c.name} have now?", a, [("+", b), ("-", e), ("+", d)], "items")


def _mul_sub_div(g: random.Random, max_a: int, max_b: int) -> tuple[int, int, int, int]:
    """Draw a, b, d, k with (a*b - d) divisible by k and the quotient at least 2."""
    while True:
        a, b, k = _r(g, 2, max_a), _r(g, 2, max_b), _r(g, 2, 5)
        p = a * b
        ds = [d for d in range(2, min(20, p - 2 * k) + 1) if (p - d) % k == 0]
        if ds:
            return a, b, g.choice(ds), k


def _l3_bakery(g: random.Random, c: _Ctx) -> Built:
    a, b, d, k = _mul_sub_div(g, 6, 10)
    return (f"A baker makes {a} trays with {b} cookies on each tray. {d} cookies break, and the "
            f"rest are packed into bags of {k}. How many bags are filled?", a,
            [("*", b), ("-", d), ("/", k)], "items")


def _l3_earn(g: random.Random, c: _Ctx) -> Built:
    a, b, e = _r(g, 2, 10), _r(g, 2, 6), _r(g, 2, 20)
    d = _r(g, 2, min(20, a * b - 1))
    return (f"{c.name} earns ${a} a day for {b} days. {c.P} spends ${d} on a {c.thing}, and then "
            f"{c.poss} aunt gives {c.name} ${e}. How many dollars does {c.name} have now?", a,
            [("*", b), ("-", d), ("+", e)], "money")


def _l3_chairs(g: random.Random, c: _Ctx) -> Built:
    a, b, d = _r(g, 2, 8), _r(g, 2, 10), _r(g, 2, 20)
    e = _r(g, 2, min(20, a * b + d - 1))
    return (f"A hall has {a} rows of {b} chairs. Workers add {d} more chairs and then take away "
            f"{e} broken ones. How many chairs are in the hall now?", a,
            [("*", b), ("+", d), ("-", e)], "items")


def _l3_school_day(g: random.Random, c: _Ctx) -> Built:
    a, b, d, e = _r(g, 2, 6), _r(g, 10, 20), _r(g, 5, 20), _r(g, 10, 20)
    return (f"A school day has {a} lessons of {b} minutes each, a break of {d} minutes and a "
            f"lunch of {e} minutes. How many minutes is that in total?", a,
            [("*", b), ("+", d), ("+", e)], "time")


def _l3_bags(g: random.Random, c: _Ctx) -> Built:
    k, q, d = _r(g, 2, 5), _r(g, 2, 8), _r(g, 2, 10)
    total = k * q + d
    a = _r(g, 2, total - 2)
    return (f"{c.name} collects {a} {c.item} and {c.friend} gives {c.name} {total - a} more. "
            f"{c.P} loses {d}, and then puts the rest into {k} bags with the same number in each. "
            f"How many {c.item} are in each bag?", a,
            [("+", total - a), ("-", d), ("/", k)], "items")


def _l3_tickets(g: random.Random, c: _Ctx) -> Built:
    a, b, d, k = _mul_sub_div(g, 10, 6)
    return (f"Tickets cost ${a} each, and a group of friends buys {b} tickets. They use a coupon "
            f"worth ${d}, and {k} of them split the remaining cost equally. How many dollars does "
            f"each of those {k} pay?", a, [("*", b), ("-", d), ("/", k)], "money")


def _l3_pairs_coupon(g: random.Random, c: _Ctx) -> Built:
    a, b, k = _r(g, 2, 10), _r(g, 2, 10), _r(g, 2, 4)
    d = _r(g, 2, min(20, (a + b) * k - 1))
    return (f"A {c.thing} costs ${a} and a {c.thing2} costs ${b}. {c.name} buys {k} of each and "
            f"uses a coupon worth ${d}. How many dollars does {c.p} pay?", a,
            [("+", b), ("*", k), ("-", d)], "money")


_TEMPLATES: dict[int, tuple[Callable[[random.Random, _Ctx], Built], ...]] = {
    1: tuple(_level1(*t) for t in _LEVEL1),
    2: (_l2_add_sub, _l2_mul_sub, _l2_mul_add, _l2_earn_spend, _l2_spend_split, _l2_walks,
        _l2_groups, _l2_trip, _l2_pairs),
    3: (_l3_week, _l3_bakery, _l3_earn, _l3_chairs, _l3_school_day, _l3_bags, _l3_tickets,
        _l3_pairs_coupon),
}
_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
    "/": lambda x, y: x // y,
}
_OP_SIGN = {"+": "+", "-": "-", "*": "×", "/": "÷"}


def _run_chain(start: int, ops: Sequence[Op]) -> tuple[int, list[str]]:
    """Fold the operations left to right; check every intermediate is a positive integer."""
    x, lines = start, []
    for op, v in ops:
        if op == "/" and x % v:
            raise AssertionError(f"inexact division {x} / {v}")
        y = _OPS[op](x, v)
        if y <= 0:
            raise AssertionError(f"non-positive intermediate {x} {op} {v} = {y}")
        lines.append(f"{x} {_OP_SIGN[op]} {v} = {y}")
        x = y
    return x, lines


#: Levels of the default set. Measured (2026-11-30, single agent, greedy, two worked examples,
#: seed 0): the embedded SmolLM2-135M-Instruct answers 46% of level-1 problems (37 of 80), 0-2%
#: of level-2 problems (0 of 60 and 1 of 40 in two runs) and 0-3% of level-3 problems (1 of 40).
#: It sets up one step, but not two, so the default set is level 1 (single-agent accuracy near
#: the middle, where calibration and gating statistics have right and wrong answers to
#: separate); pass ``levels=(1, 2, 3)`` for the harder mix, which stronger models need.
DEFAULT_LEVELS: tuple[int, ...] = (1,)


#: The two disjoint parts of the problem space (by content: template and numbers).
SPLITS: tuple[str, ...] = ("train", "eval")


def content_key(template: str, start: int, ops: Sequence[Sequence[Any]]) -> str:
    """What makes two generated problems the same problem: the template and its numbers (names,
    items and wording aside)."""
    return f"{template}|{start}|" + ",".join(f"{op}{v}" for op, v in ops)


def split_of(key: str) -> str:
    """The split a problem's :func:`content_key` belongs to: a fixed hash, half and half."""
    import hashlib

    return SPLITS[hashlib.sha256(key.encode()).digest()[0] % 2]


def arithmetic_problems(n: int, seed: int = 0, levels: Sequence[int] = DEFAULT_LEVELS,
                        split: str | None = None) -> list[Problem]:
    """Generate ``n`` arithmetic word problems (the project's default, offline data set).

    Level L takes L arithmetic steps (add, subtract, multiply, exact divide) about items, money
    or time, with single-digit operands (a subtrahend's minuend up to 12); the default set is
    level 1 (see :data:`DEFAULT_LEVELS` for the measured accuracy of each level). Levels are
    interleaved in the order given (the first
    ``len(levels)`` problems hold one of each). Problem ``k`` of level ``L`` depends only on
    ``(seed, L, k)``, so a larger ``n`` extends a smaller one. Ids look like ``arith-L1-0007``;
    ``meta`` holds ``level``, ``steps``, ``start``, ``ops`` (the chain ``[[op, operand], ...]``
    folded left to right gives the gold answer), ``template``, ``topic`` and ``solution``.

    ``split`` ("train" or "eval") draws only problems of that part of the problem space, split
    by a hash of template and numbers (:func:`split_of`), so that a model trained on one part
    never meets an evaluation problem's template and numbers, whatever the seeds; level 1 then
    uses wider number ranges (a few thousand distinct problems in each part), no two problems
    of a set share template and numbers, and ids carry the split (``arith-eval-L1-0007``).
    ``split=None`` is the original generator, unchanged (the recordings regenerate with it).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ConfigError(f"n must be a non-negative integer, got {n!r}")
    levels = tuple(levels)
    if not levels or any(lv not in _TEMPLATES for lv in levels):
        raise ConfigError(f"levels must be a non-empty sequence drawn from {sorted(_TEMPLATES)}, "
                          f"got {levels!r}")
    if split is not None and split not in SPLITS:
        raise ConfigError(f"split must be one of {SPLITS} or None, got {split!r}")
    made: dict[int, int] = {lv: 0 for lv in levels}
    seen: dict[int, set[str]] = {lv: set() for lv in levels}
    out: list[Problem] = []
    for i in range(n):
        lv = levels[i % len(levels)]
        k = made[lv]
        made[lv] += 1
        if split is None:
            for attempt in range(100):
                rng = random.Random(f"arith:{seed}:{lv}:{k}:{attempt}")
                tmpl = rng.choice(_TEMPLATES[lv])
                text, start, ops, topic = tmpl(rng, _Ctx(rng))
                if text not in seen[lv]:
                    break
            seen[lv].add(text)
            pid = f"arith-L{lv}-{k:04d}"
        else:
            for attempt in range(10_000):
                rng = random.Random(f"arith:{split}:{seed}:{lv}:{k}:{attempt}")
                tmpl = rng.choice(_TEMPLATES[lv])
                text, start, ops, topic = tmpl(rng, _Ctx(rng, wide=True))
                key = content_key(tmpl.__name__.lstrip("_"), start, ops)
                if key not in seen[lv] and split_of(key) == split:
                    break
            else:
                raise ConfigError(f"the {split} split has too few distinct level-{lv} problems for n={n}")
            seen[lv].add(key)
            pid = f"arith-{split}-L{lv}-{k:04d}"
        answer, lines = _run_chain(start, ops)
        out.append(Problem(
            id=pid, question=text, gold=str(answer), kind=KIND_NUMBER,
            meta={"level": lv, "steps": len(ops), "start": start,
                  "ops": [[op, v] for op, v in ops], "template": tmpl.__name__.lstrip("_"),
                  "topic": topic, "solution": "\n".join(lines), "dataset": "arith",
                  **({"split": split} if split else {})},
        ))
    return out


#: Irrelevant clauses (a quantity the question does not use), each a sentence about the problem's
#: people and things with one number ``{x}``. The first half is the train split's phrasings, the
#: second half the eval split's, so that a model trained on one never reads the other's wording.
NOOP_CLAUSES: tuple[tuple[str, str], ...] = (
    ("friend_keeps", "{c.friend} has {x} {c.item} too, but keeps all of them."),
    ("last_year", "Last year {c.name} had {x} {c.item}, but those are long gone."),
    ("age", "{c.name} is {x} years old."),
    ("thing_length", "The {c.thing} on the table is {x} centimetres long."),
    ("cousins", "{c.name} has {x} cousins who live in another town."),
    ("street", "{c.friend} lives {x} streets away."),
    ("classmates", "There are {x} other children in {c.poss} class, but none of them take part."),
    ("shop_age", "The shop where this happens opened {x} years ago."),
    ("not_bought", "A {c.thing2} would cost ${x}, but {c.p} does not buy one."),
    ("pages", "That morning {c.friend} read {x} pages of a book."),
    ("weight", "{c.poss_cap} bag weighs {x} kilograms."),
    ("bus_stops", "On the way home the bus passes {x} stops."),
)


def _noop_clauses(split: str | None) -> tuple[tuple[str, str], ...]:
    half = len(NOOP_CLAUSES) // 2
    return NOOP_CLAUSES[:half] if split == "train" else NOOP_CLAUSES[half:]


def noop_problems(n: int, seed: int = 0, levels: Sequence[int] = DEFAULT_LEVELS,
                  split: str | None = None) -> list[Problem]:
    """The problems of :func:`arithmetic_problems` (same arguments, same chains) with one irrelevant
    clause each, put before the question: a quantity the answer does not use, as in
    GSM-Symbolic's NoOp variant and GSM-IC. Its number is not one of the chain's numbers nor the
    answer. ``meta`` adds ``noop`` (the clause's name and number) and ``plain_question`` (the text
    without it: the same problem for a model that reads it right). The clause's phrasing comes
    from the split's half of :data:`NOOP_CLAUSES` (the eval half when ``split`` is None)."""
    out = []
    for p in arithmetic_problems(n, seed=seed, levels=levels, split=split):
        rng = random.Random(f"noop:{seed}:{p.id}")
        name, clause = rng.choice(_noop_clauses(split))
        used = {int(p.meta["start"]), int(p.gold)} | {int(v) for _, v in p.meta["ops"]}
        x = rng.choice([v for v in range(3, 16) if v not in used])
        c = _clause_ctx(p.question, random.Random(f"noop-ctx:{seed}:{p.id}"))
        sentences = re.split(r"(?<=[.!?])\s+", p.question)
        where = max(1, len(sentences) - 1)  # before the question
        text = " ".join(sentences[:where] + [clause.format(c=c, x=x)] + sentences[where:])
        out.append(Problem(id=p.id.replace("arith-", "arith-noop-", 1), question=text, gold=p.gold,
                           kind=p.kind, meta={**p.meta, "dataset": "arith_noop",
                                              "noop": {"clause": name, "value": x},
                                              "plain_question": p.question}))
    return out


def _clause_ctx(text: str, rng: random.Random) -> _Ctx:
    """Names and things for an irrelevant clause: the problem's own person (the first named), its
    items when it names some, and another person as the friend."""
    c = _Ctx(rng)
    found = sorted((m.start(), person) for person in _PEOPLE if (m := re.search(rf"\b{person[0]}\b", text)))
    if found:
        c.name, c.p, c.poss = found[0][1]
        c.P = c.p.capitalize()
        others = [person[0] for _, person in found[1:]] or [n for n, _, _ in _PEOPLE if n != c.name]
        c.friend = others[0] if len(found) > 1 else rng.choice(others)
    items = [i for i in _ITEMS if re.search(rf"\b{i}\b", text)]
    if items:
        c.item = items[0]
    c.poss_cap = c.poss.capitalize()
    return c


# ---------------------------------------------------------------------------------------------
# 2. Reading and validating files
# ---------------------------------------------------------------------------------------------


def _where(path: Any, row: str | None, field: str | None) -> str:
    parts = [str(path)]
    if row:
        parts.append(row)
    if field:
        parts.append(f"field {field!r}")
    return ": ".join(parts)


def _error(path: Any, row: str | None, field: str | None, msg: str) -> DataError:
    return DataError(f"{_where(path, row, field)}: {msg}")


def _check_file(path: Any) -> Path:
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: no such file")
    if not p.is_file():
        raise DataError(f"{p}: not a file")
    return p


def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{p}: not UTF-8 text ({e})") from None


def _read_records(path: Any, fmt: str = "auto") -> list[tuple[str, dict[str, Any]]]:
    """Records of a JSONL, JSON-list or CSV file as ``(row label, dict)``; DataError if none.

    ``fmt`` is "csv", "json" (JSONL, or a JSON list when the file is not named .jsonl/.ndjson
    and starts with ``[``) or "auto" (CSV for .csv/.tsv, else "json").
    """
    p = _check_file(path)
    if fmt == "auto":
        suffix = p.suffix.lower()
        fmt = "csv" if suffix in (".csv", ".tsv") else "json"
    text = _read_text(p)
    if not text.strip():
        raise DataError(f"{p}: file is empty (no records)")
    rows: list[tuple[str, dict[str, Any]]] = []
    if fmt == "csv":
        reader = csv.reader(text.splitlines(keepends=True),
                            delimiter="\t" if p.suffix.lower() == ".tsv" else ",")
        try:
            header = [h.strip() for h in next(reader)]
            while True:
                line = reader.line_num + 1
                try:
                    values = next(reader)
                except StopIteration:
                    break
                if not any(v.strip() for v in values):
                    continue
                if len(values) != len(header):
                    raise _error(p, f"line {line}", None,
                                 f"has {len(values)} columns, the header has {len(header)}")
                rows.append((f"line {line}", dict(zip(header, values))))
        except csv.Error as e:
            raise DataError(f"{p}: line {reader.line_num}: malformed CSV ({e})") from None
    elif p.suffix.lower() not in (".jsonl", ".ndjson") and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{p}: line {e.lineno}: invalid JSON ({e.msg})") from None
        for i, rec in enumerate(data, 1):
            if not isinstance(rec, dict):
                raise _error(p, f"item {i}", None, f"expected a JSON object, got {type(rec).__name__}")
            rows.append((f"item {i}", rec))
    else:
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{p}: line {i}: invalid JSON ({e.msg})") from None
            if not isinstance(rec, dict):
                raise _error(p, f"line {i}", None, f"expected a JSON object, got {type(rec).__name__}")
            rows.append((f"line {i}", rec))
    if not rows:
        raise DataError(f"{p}: file is empty (no records)")
    return rows


def _text_field(path: Any, row: str, rec: dict[str, Any], name: str, *, strip: bool = True) -> str:
    """A required non-empty string field (numbers are accepted and turned into strings)."""
    if name not in rec or rec[name] is None:
        raise _error(path, row, name, "missing")
    v = rec[name]
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise _error(path, row, name, f"expected text, got {type(v).__name__}")
    s = str(v).strip() if strip else str(v)
    if not s.strip():
        raise _error(path, row, name, "empty")
    return s


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``, ``\\boxed x``), braces balanced."""
    try:  # one definition of "boxed" across the project when lase_nb.answers is present
        from .answers import extract_boxed  # type: ignore[attr-defined]
    except ImportError:
        return _boxed_local(text)
    got = extract_boxed(text)
    if got is None:
        return None
    return getattr(got, "text", got)


def _boxed_local(text: str) -> str | None:
    starts = [m for m in re.finditer(r"\\(?:boxed|fbox)\b", text)]
    for m in reversed(starts):
        i = m.end()
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                if text[j] == "{" and text[j - 1] != "\\":
                    depth += 1
                elif text[j] == "}" and text[j - 1] != "\\":
                    depth -= 1
                    if depth == 0:
                        return text[i + 1:j].strip()
                j += 1
            continue  # unbalanced: try an earlier one
        if i > m.end():  # "\boxed 5"
            tok = re.match(r"[^\s$]+", text[i:])
            if tok:
                return tok.group(0)
    return None


# ---------------------------------------------------------------------------------------------
# 3. Loaders for the paper's data sets (files supplied by the user)
# ---------------------------------------------------------------------------------------------


def load_math500(path: "str | os.PathLike[str]") -> list[Problem]:
    """MATH-500 from its JSONL (``problem``, ``solution``, ``answer``; ``unique_id`` optional)."""
    out = []
    for i, (row, rec) in enumerate(_read_records(path, "json")):
        q = _text_field(path, row, rec, "problem")
        _text_field(path, row, rec, "solution")
        gold = _text_field(path, row, rec, "answer")
        pid = str(rec["unique_id"]) if rec.get("unique_id") not in (None, "") else f"{i:04d}"
        meta = {k: rec[k] for k in ("subject", "level", "unique_id", "solution") if k in rec}
        meta["dataset"] = "math500"
        out.append(Problem(id=f"math500-{pid}", question=q, gold=gold, kind=KIND_MATH, meta=meta))
    return out


def _math_record(src: Any, row: str | None, rec: Any, level: str) -> tuple[str, str, dict] | None:
    if not isinstance(rec, dict):
        raise _error(src, row, None, f"expected a JSON object, got {type(rec).__name__}")
    lv = _text_field(src, row, rec, "level")
    if lv != level:
        return None
    q = _text_field(src, row, rec, "problem")
    sol = _text_field(src, row, rec, "solution")
    gold = _boxed(sol)
    if not gold:
        raise _error(src, row, "solution", "no \\boxed{...} answer found")
    meta = {"level": lv, "type": rec.get("type", ""), "solution": sol, "dataset": "math_lv5"}
    return q, gold, meta


def load_math_level5(path: "str | os.PathLike[str]", level: str = "Level 5") -> list[Problem]:
    """MATH test problems of one level (default Level 5; the paper's 1,324).

    ``path`` is the MATH ``test`` directory of per-problem JSON files (``{"problem", "level",
    "type", "solution"}``, in subject folders such as ``algebra/1.json``), searched recursively,
    or a JSONL/JSON-list file with the same fields. Gold = the content of the last ``\\boxed{}``.
    """
    p = Path(path)
    out: list[Problem] = []
    if p.is_dir():
        files = sorted(p.rglob("*.json"), key=lambda f: _natural_key(f.relative_to(p)))
        if not files:
            raise DataError(f"{p}: no .json files found (expected the MATH test directory, "
                            f"e.g. test/algebra/1.json)")
        for f in files:
            text = _read_text(f)
            if not text.strip():
                raise DataError(f"{f}: file is empty")
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as e:
                raise DataError(f"{f}: line {e.lineno}: invalid JSON ({e.msg})") from None
            got = _math_record(f, None, rec, level)
            if got:
                rel = f.relative_to(p).with_suffix("").as_posix()
                got[2]["file"] = rel
                out.append(Problem(id=f"math-{rel.replace('/', '-')}", question=got[0],
                                   gold=got[1], kind=KIND_MATH, meta=got[2]))
    else:
        for i, (row, rec) in enumerate(_read_records(p)):
            got = _math_record(p, row, rec, level)
            if got:
                pid = rec.get("unique_id") or rec.get("id") or f"{i:05d}"
                out.append(Problem(id=f"math-{pid}", question=got[0], gold=got[1],
                                   kind=KIND_MATH, meta=got[2]))
    if not out:
        raise DataError(f"{p}: no problems with level {level!r}")
    return out


def _natural_key(rel: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", rel.as_posix())]


def _gsm_gold(path: Any, row: str, answer: str) -> tuple[str, str]:
    if "####" not in answer:
        raise _error(path, row, "answer", "no final '#### N' line")
    sol, final = answer.rsplit("####", 1)
    num = final.strip().replace(",", "").replace("$", "").rstrip(".")
    if not _NUMBER.fullmatch(num):
        raise _error(path, row, "answer", f"'#### {final.strip()}' is not a number")
    if "." in num:
        num = num.rstrip("0").rstrip(".")
    return num.lstrip("+"), sol.strip()


def load_gsm(path: "str | os.PathLike[str]", prefix: str | None = None) -> list[Problem]:
    """GSM8K or GSM-Symbolic JSONL: ``question``, ``answer`` ending in ``#### N`` (commas allowed).

    GSM-Symbolic rows (with ``id`` and ``instance``) get ids ``gsm_symbolic-<id>-<instance>``;
    their extra fields (``id``, ``instance``, ``original_id``...) are kept in ``meta``.
    """
    out = []
    for i, (row, rec) in enumerate(_read_records(path, "json")):
        q = _text_field(path, row, rec, "question")
        gold, sol = _gsm_gold(path, row, _text_field(path, row, rec, "answer"))
        symbolic = "instance" in rec and "id" in rec
        pre = prefix or ("gsm_symbolic" if symbolic else "gsm8k")
        pid = f"{rec['id']}-{rec['instance']}" if symbolic else f"{i:04d}"
        meta = {k: v for k, v in rec.items() if k not in ("question", "answer")}
        meta.update(solution=sol, dataset=pre)
        out.append(Problem(id=f"{pre}-{pid}", question=q, gold=gold, kind=KIND_NUMBER, meta=meta))
    return out


def _parse_options(path: Any, row: str, v: Any) -> list[str]:
    if isinstance(v, str):  # CSV cell: a JSON list or a Python list literal
        s = v.strip()
        try:
            v = json.loads(s)
        except json.JSONDecodeError:
            try:
                v = ast.literal_eval(s)
            except (ValueError, SyntaxError):
                raise _error(path, row, "options", "not a list (expected JSON like "
                             "[\"first\", \"second\"])") from None
    if not isinstance(v, (list, tuple)) or not all(isinstance(o, (str, int, float)) for o in v):
        raise _error(path, row, "options", "expected a list of option texts")
    opts = [str(o).strip() for o in v]
    if len(opts) < 2:
        raise _error(path, row, "options", f"needs at least 2 options, got {len(opts)}")
    if len(opts) > len(LETTERS):
        raise _error(path, row, "options", f"too many options ({len(opts)})")
    return opts


def stratified_indices(groups: Sequence[str], n: int, seed: int = 0) -> list[int]:
    """Indices of a deterministic stratified sample of size ``min(n, len(groups))``.

    Allocation is proportional to group size (largest remainder), with at least one per group
    when ``n`` is at least the number of groups; members are drawn with ``random.Random(seed)``.
    Returned in ascending order (file order).
    """
    if n <= 0:
        raise ConfigError(f"n must be positive, got {n}")
    total = len(groups)
    if n >= total:
        return list(range(total))
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    names = sorted(members)
    rng = random.Random(f"stratify:{seed}")
    tiebreak = {g: rng.random() for g in names}
    exact = {g: n * len(members[g]) / total for g in names}
    if n < len(names):  # cannot cover every group: the largest shares get one each
        order = sorted(names, key=lambda g: (-exact[g], tiebreak[g]))
        quota = {g: (1 if g in order[:n] else 0) for g in names}
    else:
        quota = {g: max(1, int(exact[g])) for g in names}
        while sum(quota.values()) > n:  # minimum-one pushed us over: take from the most over-served
            g = max((g for g in names if quota[g] > 1),
                    key=lambda g: (quota[g] - exact[g], tiebreak[g]))
            quota[g] -= 1
        while sum(quota.values()) < n:  # hand out the rest by largest remainder
            g = max((g for g in names if quota[g] < len(members[g])),
                    key=lambda g: (exact[g] - quota[g], tiebreak[g]))
            quota[g] += 1
    picked: list[int] = []
    for g in names:
        picked.extend(rng.sample(members[g], quota[g]))
    return sorted(picked)


def load_mmlu_pro(path: "str | os.PathLike[str]", n: int | None = None, seed: int = 0) -> list[Problem]:
    """MMLU-Pro from JSONL, a JSON list or CSV: ``question``, ``options`` (list), ``answer``
    (letter; ``answer_index`` is used if ``answer`` is absent), ``category``.

    With ``n``, a stratified sample by category (see :func:`stratified_indices`), in file order.
    """
    out = []
    for i, (row, rec) in enumerate(_read_records(path)):
        q = _text_field(path, row, rec, "question")
        if "options" not in rec:
            raise _error(path, row, "options", "missing")
        opts = _parse_options(path, row, rec["options"])
        cat = _text_field(path, row, rec, "category")
        if rec.get("answer") not in (None, ""):
            letter = _text_field(path, row, rec, "answer").upper()
            if len(letter) != 1 or letter not in LETTERS[: len(opts)]:
                raise _error(path, row, "answer", f"{letter!r} is not one of the option letters "
                             f"A-{LETTERS[len(opts) - 1]}")
        elif rec.get("answer_index") not in (None, ""):
            try:
                idx = int(rec["answer_index"])
            except (TypeError, ValueError):
                raise _error(path, row, "answer_index", "not an integer") from None
            if not 0 <= idx < len(opts):
                raise _error(path, row, "answer_index", f"{idx} is out of range for {len(opts)} options")
            letter = LETTERS[idx]
        else:
            raise _error(path, row, "answer", "missing")
        qid = rec.get("question_id")
        pid = str(qid) if qid not in (None, "") else f"{i:05d}"
        meta = {"category": cat, "dataset": "mmlu_pro"}
        meta.update({k: rec[k] for k in ("question_id", "src") if k in rec})
        out.append(Problem(id=f"mmlu_pro-{pid}", question=q, gold=letter, kind=KIND_CHOICE,
                           choices=tuple(opts), meta=meta))
    if n is not None:
        out = [out[i] for i in stratified_indices([p.meta["category"] for p in out], n, seed)]
    return out


def _shuffled_choice(options: list[str], correct: int, rng: random.Random) -> tuple[tuple[str, ...], str]:
    order = list(range(len(options)))
    rng.shuffle(order)
    return tuple(options[j] for j in order), LETTERS[order.index(correct)]


def _distinct(path: Any, row: str, field: str, options: list[str]) -> None:
    if len(set(options)) != len(options):
        raise _error(path, row, field, "two options have the same text, so the gold letter "
                     "would be ambiguous")


def load_gpqa(path: "str | os.PathLike[str]", seed: int = 0) -> list[Problem]:
    """GPQA from its CSV (``Question``, ``Correct Answer``, ``Incorrect Answer 1..3``).

    The four options are shuffled with a RNG seeded by ``(seed, row id)``, so each row's order
    is deterministic and independent of the other rows; ``gold`` is the correct option's letter.
    """
    out = []
    for i, (row, rec) in enumerate(_read_records(path, "csv")):
        q = _text_field(path, row, rec, "Question")
        fields = ["Correct Answer"] + [f"Incorrect Answer {k}" for k in (1, 2, 3)]
        opts = [_text_field(path, row, rec, f) for f in fields]
        _distinct(path, row, "Incorrect Answer", opts)
        rid = (rec.get("Record ID") or "").strip() or f"{i:04d}"
        choices, gold = _shuffled_choice(opts, 0, random.Random(f"gpqa:{seed}:{rid}"))
        meta = {"dataset": "gpqa", "record_id": rid}
        for src, dst in (("High-level domain", "domain"), ("Subdomain", "subdomain")):
            if rec.get(src):
                meta[dst] = rec[src].strip()
        out.append(Problem(id=f"gpqa-{rid}", question=q, gold=gold, kind=KIND_CHOICE,
                           choices=choices, meta=meta))
    return out


def _mc1_targets(path: Any, row: str, v: Any) -> tuple[list[str], int]:
    """``{option: 0/1}`` (mc_task.json) or ``{"choices": [...], "labels": [...]}`` (hub format)."""
    if isinstance(v, dict) and set(v) == {"choices", "labels"}:
        opts, labels = v["choices"], v["labels"]
        if not isinstance(opts, list) or not isinstance(labels, list) or len(opts) != len(labels):
            raise _error(path, row, "mc1_targets", "choices and labels must be lists of equal length")
    elif isinstance(v, dict):
        opts, labels = list(v), list(v.values())
    else:
        raise _error(path, row, "mc1_targets", "expected an object mapping option text to 0/1")
    if any(lab not in (0, 1) or isinstance(lab, float) for lab in labels):
        raise _error(path, row, "mc1_targets", "labels must be 0 or 1")
    if sum(labels) != 1:
        raise _error(path, row, "mc1_targets", f"needs exactly one correct option, got {sum(labels)}")
    if len(opts) < 2 or len(opts) > len(LETTERS) or not all(isinstance(o, str) and o.strip() for o in opts):
        raise _error(path, row, "mc1_targets", "needs 2 to 26 non-empty option texts")
    return [o.strip() for o in opts], labels.index(1)


def load_truthfulqa_mc(path: "str | os.PathLike[str]", seed: int = 0) -> list[Problem]:
    """TruthfulQA as multiple choice, from ``TruthfulQA.csv`` or the MC JSON (``mc_task.json``).

    CSV: options = ``Best Answer`` plus the ``;``-separated ``Incorrect Answers``. JSON/JSONL:
    options = the ``mc1_targets`` (exactly one marked 1). Options are shuffled with a RNG seeded
    by ``(seed, row index)``; ``gold`` is the letter of the correct option.
    """
    p = Path(path)
    is_csv = p.suffix.lower() in (".csv", ".tsv")
    out = []
    for i, (row, rec) in enumerate(_read_records(p, "csv" if is_csv else "json")):
        if is_csv:
            q = _text_field(p, row, rec, "Question")
            best = _text_field(p, row, rec, "Best Answer")
            wrong = [w.strip() for w in _text_field(p, row, rec, "Incorrect Answers").split(";")]
            wrong = [w for w in wrong if w]
            if not wrong:
                raise _error(p, row, "Incorrect Answers", "no incorrect answers")
            opts, correct = [best] + wrong, 0
            _distinct(p, row, "Incorrect Answers", opts)
            meta = {"dataset": "truthfulqa", "format": "csv"}
            for src, dst in (("Type", "type"), ("Category", "category"), ("Source", "source")):
                if rec.get(src):
                    meta[dst] = rec[src].strip()
        else:
            q = _text_field(p, row, rec, "question")
            if "mc1_targets" not in rec:
                raise _error(p, row, "mc1_targets", "missing")
            opts, correct = _mc1_targets(p, row, rec["mc1_targets"])
            _distinct(p, row, "mc1_targets", opts)
            meta = {"dataset": "truthfulqa", "format": "mc1"}
        choices, gold = _shuffled_choice(opts, correct, random.Random(f"truthfulqa:{seed}:{i}"))
        out.append(Problem(id=f"truthfulqa-{i:04d}", question=q, gold=gold, kind=KIND_CHOICE,
                           choices=choices, meta=meta))
    return out


# ---------------------------------------------------------------------------------------------
# 4. A user's own file
# ---------------------------------------------------------------------------------------------


def jsonl_fields(question: str | None = None, answer: str | None = None, kind: str | None = None,
                 options: str | None = None) -> dict[str, str]:
    """The ``fields`` of a ``jsonl`` data set (what a manifest records as ``data_fields``): the
    question's and the answer's field names (default ``question`` and ``answer``), the answer's kind
    (:data:`ANSWER_KINDS`, default ``number``) and, for letters, the field holding the options (none:
    the question lists them itself)."""
    kind = kind or "number"
    if kind not in ANSWER_KINDS:
        raise ConfigError(f"unknown answer kind {kind!r}; use one of {', '.join(ANSWER_KINDS)}")
    if options is not None and kind != "letter":
        raise ConfigError(f"an options field goes with --answer-kind letter, not {kind}")
    out = {"question": question or "question", "answer": answer or "answer", "kind": kind}
    return {**out, "options": options} if options else out


def _named_field(path: Any, row: str, rec: dict[str, Any], name: str, flag: str) -> Any:
    """``rec[name]``, or one line naming the fields the row has and the flag that picks another."""
    if name in rec:
        return rec[name]
    have = ", ".join(repr(k) for k in rec) or "none"
    raise _error(path, row, None, f"no field {name!r} (this row's fields: {have}); pass {flag} with one of them")


def load_jsonl(path: "str | os.PathLike[str]", fields: "dict[str, str] | None" = None) -> list[Problem]:
    """A user's own problems from a JSON-lines file or a JSON list: one object per problem, its
    question and answer under the field names of ``fields`` (:func:`jsonl_fields`). Numbers are
    checked to be numbers, letters to be one of the options' letters (A-Z without options). Ids are
    ``jsonl-NNNN`` in file order; a ``level`` field, when the rows have one, is the problem's level."""
    f = jsonl_fields(**{k: (fields or {}).get(k) for k in ("question", "answer", "kind", "options")})
    kind = ANSWER_KINDS[f["kind"]]
    out = []
    for i, (row, rec) in enumerate(_read_records(path, "json")):
        _named_field(path, row, rec, f["question"], "--question-field")
        _named_field(path, row, rec, f["answer"], "--answer-field")
        q = _text_field(path, row, rec, f["question"])
        gold = _text_field(path, row, rec, f["answer"])
        choices: tuple[str, ...] = ()
        if "options" in f:
            choices = tuple(_parse_options(path, row, _named_field(path, row, rec, f["options"], "--options-field")))
        if kind == KIND_NUMBER:
            num = gold.replace(",", "").replace("$", "").removeprefix("#### ").strip()
            if not _NUMBER.fullmatch(num):
                raise _error(path, row, f["answer"], f"{gold!r} is not a number (use --answer-kind text for "
                             "other answers)")
            gold = num.lstrip("+")
        elif kind == KIND_CHOICE:
            gold = gold.upper()
            allowed = LETTERS[: len(choices)] if choices else LETTERS
            if len(gold) != 1 or gold not in allowed:
                raise _error(path, row, f["answer"], f"{gold!r} is not an option letter ({allowed[0]}-{allowed[-1]})")
        meta: dict[str, Any] = {"dataset": "jsonl", "row": row}
        if rec.get("level") not in (None, ""):
            meta["level"] = rec["level"] if isinstance(rec["level"], (int, str)) else str(rec["level"])
        out.append(Problem(id=f"jsonl-{i:04d}", question=q, gold=gold, kind=kind, choices=choices, meta=meta))
    return out


# ---------------------------------------------------------------------------------------------
# 5. Registry
# ---------------------------------------------------------------------------------------------

_LOADERS: dict[str, Callable[[str, int], list[Problem]]] = {
    "math500": lambda p, s: load_math500(p),
    "math_lv5": lambda p, s: load_math_level5(p),
    "gsm8k": lambda p, s: load_gsm(p, prefix="gsm8k"),
    "gsm_symbolic": lambda p, s: load_gsm(p, prefix="gsm_symbolic"),
    "gpqa": lambda p, s: load_gpqa(p, seed=s),
    "truthfulqa": lambda p, s: load_truthfulqa_mc(p, seed=s),
}


def _subset(problems: list[Problem], n: int | None, seed: int) -> list[Problem]:
    if n is None or n >= len(problems):
        return problems
    keep = sorted(random.Random(f"subset:{seed}").sample(range(len(problems)), n))
    return [problems[i] for i in keep]


def _hub_dump(name: str, folder: str) -> str:
    """Download ``name`` from the Hugging Face hub into ``folder`` in the loader's format."""
    import datasets as hf  # optional; only reached with LASE_ALLOW_HUB=1

    repo, config, split = _HUB[name]
    if name == "math_lv5":
        target = os.path.join(folder, f"{name}.jsonl")
        with open(target, "w", encoding="utf-8") as fh:
            for subject in _MATH_SUBJECTS:
                for rec in hf.load_dataset(repo, subject, split=split):
                    fh.write(json.dumps(dict(rec), ensure_ascii=False) + "\n")
        return target
    ds = hf.load_dataset(repo, config, split=split) if config else hf.load_dataset(repo, split=split)
    target = os.path.join(folder, f"{name}.{'csv' if name == 'gpqa' else 'jsonl'}")
    (ds.to_csv if name == "gpqa" else ds.to_json)(target)
    return target


def load_dataset(name: str = "arith", path: "str | os.PathLike[str] | None" = None,
                 n: int | None = None, seed: int = 0,
                 levels: Sequence[int] | None = None, split: str | None = None,
                 fields: "dict[str, str] | None" = None) -> list[Problem]:
    """Load a data set by name (see :data:`DATASETS`).

    ``arith`` is generated (``n`` defaults to 50; it takes no path). The paper's sets are read
    from ``path``; when ``n`` is smaller than the set, a deterministic subset of ``n`` problems
    chosen with ``seed`` is returned in file order (MMLU-Pro: stratified by category); when it is
    larger, the whole set. ``seed`` also fixes the option shuffles of GPQA and TruthfulQA.
    ``levels`` (``arith`` and ``arith_noop`` only) picks the difficulty levels to interleave (default
    :data:`DEFAULT_LEVELS`); ``split`` (the same) draws from one part of the problem space
    (see :func:`arithmetic_problems`). ``fields`` (``jsonl`` only) names the file's question and
    answer fields and the answer's kind (:func:`jsonl_fields`).
    Without ``path``, the hub is used only if the ``datasets`` package is installed and the
    environment sets ``LASE_ALLOW_HUB=1``.
    """
    if name not in DATASETS:
        raise ConfigError(f"unknown data set {name!r}; valid names: {', '.join(DATASETS)}")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n <= 0):
        raise ConfigError(f"n must be a positive integer or None, got {n!r}")
    if name in ("arith", "arith_noop"):
        if path is not None:
            raise ConfigError(f"the '{name.replace('_', '-')}' data set is generated; it takes no data path "
                              "(pass n and seed instead)")
        generate = arithmetic_problems if name == "arith" else noop_problems
        return generate(50 if n is None else n, seed=seed,
                        levels=DEFAULT_LEVELS if levels is None else levels, split=split)
    if levels is not None:
        raise ConfigError(f"levels apply to the generated 'arith' set only, not to {name!r}")
    if split is not None:
        raise ConfigError(f"split applies to the generated 'arith' set only, not to {name!r}")
    if fields and name != "jsonl":
        raise ConfigError(f"--question-field, --answer-field, --answer-kind and --options-field apply to "
                          f"--dataset jsonl (your own file), not to {name.replace('_', '-')!r}, whose fields are fixed")
    if name == "jsonl":
        if path is None:
            raise ConfigError("--dataset jsonl reads your own file: pass its path with --data-path (data_path= in "
                              "a notebook), and its fields with --question-field and --answer-field")
        return _subset(load_jsonl(path, fields), n, seed)
    if path is None:
        if os.environ.get("LASE_ALLOW_HUB") == "1":
            try:
                import datasets  # noqa: F401
            except ImportError:
                raise ConfigError("LASE_ALLOW_HUB=1 but the Hugging Face 'datasets' package is not "
                                  "installed; install it or pass a local file with --data-path"
                                  ) from None
            with tempfile.TemporaryDirectory() as folder:
                return load_dataset(name, _hub_dump(name, folder), n=n, seed=seed)
        raise ConfigError(
            f"data set {name!r} is not shipped with lase-nb because of its licence; download it "
            f"yourself in its published format ({DATASETS[name]}) and pass its path: "
            f"--data-path PATH on the command line, or data_path=PATH in a notebook. "
            f"(With the 'datasets' package installed and network access, LASE_ALLOW_HUB=1 "
            f"loads it from the Hugging Face hub instead.)"
        )
    if name == "mmlu_pro":
        return load_mmlu_pro(path, n=n, seed=seed)
    return _subset(_LOADERS[name](os.fspath(path), seed), n, seed)
