"""Scripted model behaviour for tests that run strategies over the wire servers."""

from __future__ import annotations

import hashlib
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


def student(problems: Iterable[Problem]) -> Callable[..., Reply]:
    """A scripted model that is right on about two problems in three, unsure on some of its
    answers, and fixes some wrong answers after a note (decided by a hash of the question)."""
    golds = {p.question: p.gold for p in problems}

    def responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        if system in SUPPORTER_SYSTEM.values():
            return Reply("Check the first step once more.", 0.9)
        text = "\n".join(m["content"] for m in messages)
        found = [q for q in golds if q in text]
        if not found:
            return Reply("I cannot tell.", 0.9)
        q = max(found, key=len)
        h = int(hashlib.sha256(q.encode()).hexdigest(), 16)
        revised = "from a reviewer" in messages[-1]["content"]
        wrong = h % 3 == 0 and not (revised and h % 2 == 0)
        answer = str(int(golds[q]) + 1) if wrong else golds[q]
        sure = 0.45 if wrong and h % 4 else (0.6 if h % 5 == 0 else 0.97)
        return Reply(f"Working it out step by step.\n\\boxed{{{answer}}}", sure)

    return responder
