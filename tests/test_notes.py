"""The supporters' rule as code (lase_nb.notes): a note may point at an error, never state the answer."""

from __future__ import annotations

import pytest

from lase_nb.notes import count_answer_notes, mentions, numbers_in, states_answer, states_other_value
from lase_nb.types import Problem

Q = "Tom has 24 apples and gives 4 of them to Ana. How many apples does Tom have left?"
ATTEMPT = "24 - 4 = \\boxed{21}"


@pytest.mark.parametrize("note", [
    "Step 1 is wrong: it should be 24 - 4 = 20.",
    "Redo it: so 20.",
    "The result = 20",
    "check: 16 + 4 = 20, so the answer is different",  # a check whose own result is the answer
    "It should be 20.",
    "It should be 20.0 apples",
])
def test_a_note_that_states_the_answer_is_caught(note):
    assert states_answer(note, "20", Q, ATTEMPT)


@pytest.mark.parametrize("note", [
    "Step 1: 'gives 4' takes away 4; back, 21 + 4 = 25; it began at 24: it fails.",  # a check's own value
    "Step 1 fails: redo 24 - 4 column by column.",  # numbers of the problem only
    "Step 20 fails.",  # a step label is not a value
    "Steps 2 and 20 are the risky ones.",
    "The answer is 120 or 200, not 21.",  # 20 inside other numbers
])
def test_a_note_that_points_without_telling_passes(note):
    assert not states_answer(note, "20", Q, ATTEMPT)


def test_a_number_already_in_the_problem_or_the_attempt_is_not_a_leak():
    q = "Ana has 20 stickers and buys 0 more. How many stickers does she have?"
    assert not states_answer("so 20", "20", q, "20 + 0 = \\boxed{21}")
    assert not states_answer("so 20", "20", Q, "24 - 4 = 20\n20 + 0 = \\boxed{21}")
    assert states_answer("so 20", "20", Q, ["24 - 4 = \\boxed{21}", "Step 1 again"])


def test_a_single_digit_answer_in_column_working_counts():
    """Our call (see the module): the rule reads numbers, so a column digit that is the answer counts."""
    q = "A bus ride takes 39 minutes. Tom has been on it for 35 minutes. How many minutes are left?"
    assert states_answer("ones 9 - 5 = 4; tens 3 - 3 = 0", "4", q, "39 - 35 = \\boxed{14}")
    # a two-digit answer spelled out digit by digit is not stated
    assert not states_answer("ones 9 - 5 = 4; tens 3 - 1 = 2", "24", "What is 39 - 15?", "39 - 15 = \\boxed{34}")


def test_letters_and_formats():
    assert states_answer("I think it is B.", "B", "Pick one: (A) 1 (B) 2", "\\boxed{A}") is False  # B is in the question
    assert states_answer("The option is C.", "C", "Pick one of the options", "\\boxed{A}")
    from fractions import Fraction
    assert numbers_in("costs $1,200 and 3.5 kg; Step 7") == {Fraction(1200), Fraction(7, 2)}
    assert mentions("it is 12.", "12") and not mentions("it is 112", "12")
    assert not states_answer(None, "20", Q, ATTEMPT) and not states_answer("", "20", Q, ATTEMPT)


def test_count_answer_notes_splits_by_the_attempt_a_note_reads():
    p = Problem("p1", Q, "20")
    calls = [{"problem_id": "p1", "role": r, "stage": t, "text": x} for r, t, x in
             [("leader", 0, ATTEMPT), ("devil", 1, "it should be 20"), ("leader", 1, "24 - 4 = \\boxed{20}"),
              ("collaborator", 2, "keep 20")]]
    stages = [{"problem_id": "p1", "stage": t, "correct": c} for t, c in ((0, False), (1, True), (2, True))]
    out = count_answer_notes(calls, stages, [p])
    assert out["devil"] == {"on_wrong": {"k": 1, "n": 1}, "other_on_right": {"k": 0, "n": 0}}
    # the collaborator read an attempt that already says 20: not a leak, and no other value
    assert out["collaborator"] == {"on_wrong": {"k": 0, "n": 0}, "other_on_right": {"k": 0, "n": 1}}
    assert count_answer_notes([], stages, [p]) == {}


def test_count_answer_notes_reads_lase_mv_chains_without_stage_rows():
    """LASE+MV records several chains per problem (agents chainJ.role) and no stage rows: each note
    is paired with its own chain's attempt, graded from that attempt's answer."""
    p = Problem("p1", Q, "20")
    rows = [("chain0.leader", "leader", 0, ATTEMPT, "21"), ("chain0.devil", "devil", 1, "it should be 20", None),
            ("chain1.leader", "leader", 0, "24 - 4 = \\boxed{20}", "20"),
            ("chain1.devil", "devil", 1, "check step 2", None)]
    calls = [{"problem_id": "p1", "agent": a, "role": r, "stage": t, "text": x, "answer": ans}
             for a, r, t, x, ans in rows]
    out = count_answer_notes(calls, [], [p])
    assert out["devil"] == {"on_wrong": {"k": 1, "n": 1}, "other_on_right": {"k": 0, "n": 1}}


def test_a_note_on_a_right_attempt_can_hand_over_another_value():
    """What can go wrong on a right attempt: the note announces another final value, or the
    leader's revision boxes a wrong number the note brought in (a counter that can fail)."""
    right = "24 - 4 = \\boxed{20}"
    assert states_other_value("Step 1 fails; the answer is 22.", "20", Q, right)
    assert states_other_value("so \\boxed{19}", "20", Q, right)
    assert states_other_value("redo it: 24 - 4 = 18", "20", Q, right, revised="18")  # the leader took 18
    assert not states_other_value("redo it: 24 - 4 = 18", "20", Q, right, revised="20")  # kept its answer
    assert not states_other_value("check Step 2 again", "20", Q, right, revised="24")  # 24 came from the problem
    assert not states_other_value("the answer is 20", "20", Q, right)
    assert not states_other_value("Step 3 is fine", "20", Q, right) and not states_other_value(None, "20", Q, right)


def test_count_answer_notes_counts_a_note_that_pushes_a_right_attempt_off():
    p = Problem("p1", Q, "20")
    rows = [("leader", 0, "24 - 4 = \\boxed{20}", "20"), ("devil", 1, "24 - 4 = 18, Step 1 fails", None),
            ("leader", 1, "24 - 4 = \\boxed{18}", "18"), ("collaborator", 2, "the answer is 20", None),
            ("leader", 2, "24 - 4 = \\boxed{20}", "20")]
    calls = [{"problem_id": "p1", "role": r, "stage": t, "text": x, "answer": a} for r, t, x, a in rows]
    stages = [{"problem_id": "p1", "stage": t, "correct": c} for t, c in ((0, True), (1, False), (2, True))]
    out = count_answer_notes(calls, stages, [p])
    assert out["devil"] == {"on_wrong": {"k": 0, "n": 0}, "other_on_right": {"k": 1, "n": 1}}
    assert out["collaborator"] == {"on_wrong": {"k": 1, "n": 1}, "other_on_right": {"k": 0, "n": 0}}
