"""The supporters' rule, as code: a note may point at an error, never hand over the final answer.

The LASE paper's supporter prompts (Appendix D) say "Do NOT give the final answer" and "Do NOT
provide your own answer". The pipeline never filters or rewrites a note (what a supporter writes
is what the leader reads), so the rule is the model's to obey; every recording counts the notes
that break it with :func:`states_answer`.

**The rule.** A note states the answer when the gold final answer appears in it as a number
that is in neither the problem text nor the attempt the note reads. Step labels ("Step 2",
"steps 2 and 3") are not numbers. A check whose own result happens to be the answer
(``40 + 4 = 44`` when the answer is 44) counts: the leader can read the value off it just the
same, so a supporter must phrase such a check so that its result is not the answer.

**Our call on column working.** A result spelled digit by digit ("ones 4, tens 2") does not
state 24, because no number in the note is 24; but a single digit that *is* the answer (the
answer 4 and "ones 9 - 5 = 4") counts, because the rule looks at numbers, not at what they mean.
That errs on the side of flagging: a reader checking a recording can see every flagged note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fractions import Fraction

from .prompts import SUPPORTERS

__all__ = ["STEP_LABEL", "numbers_in", "mentions", "states_answer", "count_answer_notes"]

#: "Step 2", "steps 2 and 3", "Step 2-3": labels, not values.
STEP_LABEL = re.compile(r"\b[Ss]teps?\s+\d+(?:\s*(?:,|-|and|to)\s*\d+)*")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w]|\.\d)")


def _value(token: str) -> Fraction | None:
    try:
        return Fraction(token.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


def numbers_in(text: str | None, skip_step_labels: bool = True) -> set[Fraction]:
    """The numbers written in ``text`` as values (``1,200`` and ``1200.0`` are one value); step
    labels are skipped unless ``skip_step_labels`` is False."""
    if not text:
        return set()
    if skip_step_labels:
        text = STEP_LABEL.sub(" ", text)
    return {v for v in (_value(t) for t in _NUMBER.findall(text)) if v is not None}


def mentions(text: str | None, answer: str | None) -> bool:
    """Whether ``answer`` occurs in ``text`` as a whole word or number (``12`` is not in ``112``)."""
    if not isinstance(text, str) or not text or not answer:
        return False
    return re.search(rf"(?<![\w.]){re.escape(str(answer).strip())}(?![\w]|\.\d)", text) is not None


def states_answer(note: str | None, gold: str, question: str, attempts: str | Iterable[str] = ()) -> bool:
    """Whether a supporter's ``note`` states the final answer ``gold``: it appears in the note as
    a number (or, for a non-numeric answer, as a whole word) that is in neither the ``question``
    nor any of the ``attempts`` the note reads. Step labels do not count (see the module's rule)."""
    if not note:
        return False
    seen = [question] + ([attempts] if isinstance(attempts, str) else list(attempts))
    g = _value(str(gold).strip())
    if g is None:  # a letter or an expression: whole-word match
        return mentions(STEP_LABEL.sub(" ", note), gold) and not any(mentions(t, gold) for t in seen)
    allowed: set[Fraction] = set()
    for t in seen:
        allowed |= numbers_in(t)
    return g in numbers_in(note) and g not in allowed


def count_answer_notes(results: Iterable, problems: Iterable) -> dict[str, dict[str, dict[str, int]]]:
    """Per supporter role, how many of its notes state the answer (:func:`states_answer`), over
    notes written on a wrong leader attempt and on a right one: ``{role: {"on_wrong": {"k", "n"},
    "on_right": {...}}}``. ``results`` are a run's problem results (each with ``problem_id``,
    ``calls`` and ``recording_calls`` holding role, stage and text, and ``stages``); the attempt a
    note reads is the leader's reply of the stage before."""
    by_id = {p.id: p for p in problems}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in results:
        p = by_id.get(r.problem_id)
        if p is None:
            continue
        calls = list(r.calls) + list(getattr(r, "recording_calls", []) or [])
        attempts = {c.stage: c.text for c in calls if c.role == "leader"}
        right = {s.stage: bool(s.correct) for s in r.stages}
        for c in calls:
            if c.stage < 1 or c.stage - 1 not in attempts:
                continue
            if c.role not in SUPPORTERS:
                continue
            key = "on_right" if right.get(c.stage - 1, False) else "on_wrong"
            cell = out.setdefault(c.role, {"on_wrong": {"k": 0, "n": 0}, "on_right": {"k": 0, "n": 0}})[key]
            cell["n"] += 1
            cell["k"] += states_answer(c.text, p.gold, p.question, attempts[c.stage - 1])
    return out
