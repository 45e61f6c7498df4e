"""Scripted model behaviour for tests that run strategies over the wire servers."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from lase_nb.prompts import SUPPORTER_SYSTEM
from lase_nb.types import Problem
from tests.wire_servers import Reply


def oracle(problems: Iterable[Problem], p_first: float = 0.3, p_revised: float = 0.99) -> Callable[..., Reply]:
    """A responder that knows the gold answers: the leader's first answer is right but unsure
    (``p_first`` on every token), supporters write a short note, a revision is right and sure
    (so LASE with default thresholds stops after one supporter: 3 calls a problem)."""
    golds = {p.question: p.gold for p in problems}

    def responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        if system in SUPPORTER_SYSTEM.values():
            return Reply("Check each step once more.", 0.9)
        text = "\n".join(m["content"] for m in messages)
        found = [q for q in golds if q in text]
        if not found:
            return Reply("I cannot tell.", 0.9)
        revised = "from a reviewer" in messages[-1]["content"]
        return Reply(f"Working it out step by step.\n\\boxed{{{golds[max(found, key=len)]}}}",
                     p_revised if revised else p_first)

    return responder
