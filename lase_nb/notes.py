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
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from fractions import Fraction

from .prompts import NOTE_ROLES

__all__ = ["STEP_LABEL", "numbers_in", "mentions", "states_answer", "states_other_value", "count_answer_notes",
           "judge_notes", "problems_told_the_answer"]

#: "Step 2", "steps 2 and 3", "Step 2-3": labels, not values.
STEP_LABEL = re.compile(r"\b[Ss]teps?\s+\d+(?:\s*(?:,|-|and|to)\s*\d+)*")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w]|\.\d)")
#: a value announced as the final one: boxed, or after "the answer is / should be / must be / :"
_ANNOUNCED = re.compile(r"\\boxed\{\s*\$?(-?\d[\d,]*(?:\.\d+)?)|\banswer\s*(?:is|should be|must be|would be|=|:)\s*"
                        r"\$?\s*(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)


def _value(token: str) -> Fraction | None:
    try:
        return Fraction(token.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


def numbers_in(text: str | None) -> set[Fraction]:
    """The numbers written in ``text`` as values (``1,200`` and ``1200.0`` are one value), step
    labels ("Step 2") skipped."""
    if not text:
        return set()
    return {v for v in (_value(t) for t in _NUMBER.findall(STEP_LABEL.sub(" ", text))) if v is not None}


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


def states_other_value(note: str | None, gold: str, question: str, attempts: str | Iterable[str] = (),
                       revised: str | None = None) -> bool:
    """Whether a note on a *right* attempt hands the leader a different final value: it announces
    one (boxed, or "the answer is N") other than ``gold``, or the leader's ``revised`` answer is a
    wrong value that the note introduced (in neither the ``question`` nor the ``attempts``). What a
    note can do wrong on a right attempt, where :func:`states_answer` cannot fire (the attempt
    already holds the gold answer)."""
    if not note:
        return False
    g = _value(str(gold).strip())
    announced = {_value(a or b) for a, b in _ANNOUNCED.findall(STEP_LABEL.sub(" ", note))} - {None}
    if g is not None and announced - {g}:
        return True
    r = _value(str(revised).strip()) if revised is not None else None
    if r is None or r == g:
        return False
    seen = [question] + ([attempts] if isinstance(attempts, str) else list(attempts))
    return r in numbers_in(note) and not any(r in numbers_in(t) for t in seen)


def count_answer_notes(calls: Any, stages: Any, problems: Mapping[str, Any] | Iterable[Any]) -> dict[str, dict[str, dict[str, int]]]:
    """Per note-writing role (the supporters, and a supporter group's moderator: :data:`lase_nb.prompts.NOTE_ROLES`),
    the notes that break the rule, counted where each can happen:
    ``{role: {"on_wrong": {"k", "n"}, "other_on_right": {"k", "n"}}}``. ``on_wrong``: of the notes
    on a wrong leader attempt, how many state the gold answer (:func:`states_answer`);
    ``other_on_right``: of the notes on a right attempt, how many announce another final value or
    push the leader's revision to a wrong value they introduced (:func:`states_other_value`; a note
    on a right attempt cannot state the gold answer in the sense of the rule, the attempt holds it).
    ``calls`` and ``stages`` are a run's tables (:mod:`lase_nb.traces`: one row per call with
    problem_id, strategy, role, stage, text and answer; one per LASE stage with correct),
    ``problems`` the run's problems (by id, or a list). The attempt a note reads is the leader's
    reply of the stage before, its revision the leader's reply of the note's stage; every recorded
    note counts (whether or not LASE used it). Without a stage row (LASE+MV's chains) the attempt is
    graded from its own extracted answer."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for problem_id, role, where, broke in judge_notes(calls, stages, problems):
        cell = out.setdefault(role, {"on_wrong": {"k": 0, "n": 0}, "other_on_right": {"k": 0, "n": 0}})[where]
        cell["n"] += 1
        cell["k"] += int(broke)
    return out


def problems_told_the_answer(calls: Any, stages: Any, problems: Mapping[str, Any] | Iterable[Any]) -> set[str]:
    """The problems on which some recorded note on a wrong leader attempt states the gold answer
    (the ``on_wrong`` breaks that :func:`count_answer_notes` counts), for a sensitivity analysis that
    sets them aside."""
    return {pid for pid, _, where, broke in judge_notes(calls, stages, problems) if where == "on_wrong" and broke}


def judge_notes(calls: Any, stages: Any, problems: Mapping[str, Any] | Iterable[Any]) -> Iterator[tuple[str, str, str, bool]]:
    """Every recorded note judged by the rule, as :func:`count_answer_notes` describes:
    ``(problem_id, role, "on_wrong" or "other_on_right", broke)``."""
    import pandas as pd

    from .answers import grade

    by_id = problems if isinstance(problems, Mapping) else {p.id: p for p in problems}
    calls, stages = pd.DataFrame(calls), pd.DataFrame(stages)
    if calls.empty or "role" not in calls:
        return
    # LASE+MV runs several chains per problem (agents "chain0.leader", ...) and records no stage rows
    calls = calls.assign(chain=calls["agent"].astype(str).str.rpartition(".")[0] if "agent" in calls else "")
    both = "strategy" in calls and (stages.empty or "strategy" in stages)
    keys = (["strategy"] if both else []) + ["problem_id", "chain", "stage"]
    stage_keys = [k for k in keys if k != "chain"]
    lead = calls[calls["role"] == "leader"].drop_duplicates(keys)
    attempt = {tuple(k): t for k, t in zip(lead[keys].itertuples(index=False), lead["text"])}
    stage_right = ({tuple(k): bool(c) for k, c in zip(stages[stage_keys].itertuples(index=False), stages["correct"])}
                   if not stages.empty else {})
    right, answers = {}, {}
    for key, answer in zip(lead[keys].itertuples(index=False), lead["answer"] if "answer" in lead else [None] * len(lead)):
        row = dict(zip(keys, key))
        answers[tuple(key)] = answer if isinstance(answer, str) else None
        graded = stage_right.get(tuple(row[k] for k in stage_keys)) if row["chain"] == "" else None
        p = by_id.get(row["problem_id"])
        if graded is None and p is not None:  # no stage row: the leader's own answer, graded
            graded = grade(answer if isinstance(answer, str) else None, p.gold, p.kind)
        right[tuple(key)] = bool(graded)
    notes = calls[calls["role"].isin(NOTE_ROLES)]
    for row, key in zip(notes.itertuples(index=False), notes[keys].itertuples(index=False)):
        before = (*tuple(key)[:-1], int(key[-1]) - 1)
        p = by_id.get(row.problem_id)
        if p is None or before not in attempt:
            continue
        if right.get(before, False):
            yield row.problem_id, row.role, "other_on_right", states_other_value(
                row.text, p.gold, p.question, attempt[before], answers.get(tuple(key)))
        else:
            yield row.problem_id, row.role, "on_wrong", states_answer(row.text, p.gold, p.question, attempt[before])
