"""The instructions: what each supporter is told it sees is what it is shown; examples are a switch."""

from __future__ import annotations

import itertools

import pytest

from lase_nb import prompts
from lase_nb.types import Problem

PROBLEM = Problem("p", "Tom has 3 apples and buys 4 more. How many apples does he have?", gold="7")


@pytest.mark.parametrize("role", prompts.SUPPORTERS)
@pytest.mark.parametrize("critique,hints", list(itertools.product([None, "check step 2"], [None, "add first"])))
def test_supporter_instruction_describes_exactly_what_it_is_shown(role, critique, hints):
    system, user = prompts.supporter_messages(PROBLEM, role, "3 + 4 = 8 \\boxed{8}", critique, hints)
    shown = system["content"].split("You are shown", 1)[1]
    assert ("critique" in shown) == (critique is not None) == ("Critique:" in user["content"])
    assert ("hints" in shown) == (hints is not None) == ("Hints:" in user["content"])
    assert "never write \\boxed{}" in system["content"]


def test_devils_advocate_attacks_and_is_never_told_to_approve():
    text = prompts.SUPPORTER_SYSTEM["devil"].lower()
    assert "attack" in text and "justification" in text
    assert "never just say the solution looks correct" in text and "never invent" in text
    assert "say so" not in text  # the old wording invited a bare approval


def test_paper_order_instructions_match_the_pipeline_inputs():
    assert "critique" not in prompts.SUPPORTER_SYSTEM["devil"].split("You are shown")[1]
    assert "critique" in prompts.SUPPORTER_SYSTEM["collaborator"]
    assert "hints" in prompts.SUPPORTER_SYSTEM["expert"] and "critique" in prompts.SUPPORTER_SYSTEM["expert"]


@pytest.mark.parametrize("n", [0, 1, 2])
def test_worked_examples_are_a_switch(n):
    msgs = prompts.solver_messages(PROBLEM, examples=n)
    assert sum(m["role"] == "assistant" for m in msgs) == n
    assert msgs[0]["role"] == "system" and msgs[-1]["content"] == PROBLEM.prompt_text()
    revise = prompts.revise_messages(PROBLEM, "attempt", "devil", "note", examples=n)
    assert sum(m["role"] == "assistant" for m in revise) == n + 1


def test_extraction_request_follows_the_reply():
    msgs = prompts.extract_messages(prompts.solver_messages(PROBLEM), "3 plus 4 is seven")
    assert msgs[-2] == {"role": "assistant", "content": "3 plus 4 is seven"}
    assert msgs[-1]["content"] == prompts.EXTRACT_REQUEST
    assert prompts.EXTRACT_PREFIX.endswith("\\boxed{")
