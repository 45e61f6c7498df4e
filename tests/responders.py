"""Scripted model behaviour for tests that run strategies over the wire servers."""

from __future__ import annotations

import hashlib
import json
import re
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
        answer = wrong_answer(golds[q]) if wrong else golds[q]
        sure = 0.45 if wrong and h % 4 else (0.6 if h % 5 == 0 else 0.97)
        return Reply(f"Working it out step by step.\n\\boxed{{{answer}}}", sure)

    return responder


# ------------------------------------------------------------------ stand-ins of real models
#
# Each behaves like a kind of model a user records a study of, in the ways that break a reader of
# the study that only ever saw well-behaved data (issue 50). The gold answers come from the
# problems; which problems go wrong is decided by a hash of the question, so a study is the same
# on every run.


def wrong_answer(gold: str, step: int = 1) -> str:
    """An answer a grader marks wrong for any kind of gold: a whole number moved by ``step``, another
    option letter for a letter, and ``gold + step`` written out for anything else (LaTeX, a word)."""
    if re.fullmatch(r"-?\d+", gold.strip()):
        return str(int(gold) + step)
    if re.fullmatch(r"[A-Z]", gold.strip()):
        return "A" if gold.strip() != "A" else "B"
    return f"{gold} + {step}"


def _question(golds: dict[str, str], messages: list[dict[str, str]]) -> str | None:
    """The problem's question the conversation quotes (the longest match), or None."""
    text = "\n".join(m["content"] for m in messages)
    found = [q for q in golds if q in text]
    return max(found, key=len) if found else None


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def _is_supporter(messages: list[dict[str, str]]) -> bool:
    return messages[0]["role"] == "system" and messages[0]["content"] in SUPPORTER_SYSTEM.values()


def _is_revision(messages: list[dict[str, str]]) -> bool:
    return "from a reviewer" in messages[-1]["content"]


def _is_extraction(messages: list[dict[str, str]]) -> bool:
    from lase_nb.prompts import EXTRACT_REQUEST
    return messages[-1]["content"] == EXTRACT_REQUEST


def box_probs(text: str, answer: Callable[[int], float], other: Callable[[int], float]) -> Callable[[int, str], float]:
    """Chosen-token probabilities for ``text`` as the wire server tokenizes it: ``answer(j)`` on the
    j-th token inside the last ``\\boxed{}``, ``other(i)`` on every other token (i its index)."""
    from tests.wire_servers import tokenize

    at = text.rfind("\\boxed{")
    start = at + len("\\boxed{")
    end = text.find("}", start)
    spans, pos = [], 0
    for tok in tokenize(text):
        spans.append((pos, pos + len(tok)))
        pos += len(tok)
    inside = [i for i, (a, b) in enumerate(spans) if at >= 0 and a < end and b > start]
    first = inside[0] if inside else -1

    def prob(index: int, token: str) -> float:
        return answer(index - first) if index in inside else other(index)

    return prob


_STEPS = ("First I write down what the problem gives and what it asks for. ",
          "Then I work through the operations in the order the problem states them, one at a time. ",
          "Each intermediate value is checked against the previous line before I move on. ",
          "Keeping every number exact, I carry the result of each step into the next. ",
          "Finally I read the question again to be sure the value is the one asked for. ")


def strong(problems: Iterable[Problem], right: float = 0.9) -> Callable[..., Reply]:
    """A strong API model: right on about ``right`` of the problems, long replies (about 130
    tokens), every token at log-probability exactly 0.0 except on some answers: on about a quarter
    of the right ones one answer token is spread over (0.55, 0.99), on the wrong ones one sits near
    0.4; a revision after a note fixes half of the wrong answers, at full confidence."""
    golds = {p.question: p.gold for p in problems}

    def responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        if _is_supporter(messages):
            return Reply("I read the solution line by line. " + "".join(_STEPS[:3]) +
                         "The second step deserves one more look.", 1.0)
        q = _question(golds, messages)
        if q is None:
            return Reply("I cannot tell which problem this is.", 1.0)
        h = _hash(q)
        wrong = (h % 1000) / 1000 >= right and not (_is_revision(messages) and h % 2 == 0)
        answer = wrong_answer(golds[q], 1 + h % 3) if wrong else golds[q]
        text = ("Let me solve this carefully.\n\n" + "".join(_STEPS) + "\n\nSo the value asked for is "
                f"\\boxed{{{answer}}}.")
        if wrong:
            spread = 0.3 + 0.2 * ((h >> 8) % 100) / 100
        elif h % 4 == 0 and not _is_revision(messages):
            spread = 0.55 + 0.44 * ((h >> 8) % 100) / 100
        else:
            spread = 1.0
        return Reply(text, box_probs(text, lambda j: spread if j == 0 else 1.0,
                                     lambda i: 1.0 if i % 9 else 0.7 + 0.03 * (i % 10)))

    return responder


def sparse_logprobs(problems: Iterable[Problem], top: int = 5, none_every: int = 7) -> Callable[..., Reply]:
    """A provider that returns at most ``top`` alternatives per token whatever was asked, and no
    log-probabilities at all on about one call in ``none_every`` (decided by the conversation's
    hash); the answers are :func:`student`'s."""
    base = student(problems)

    def responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        r = base(messages, params)
        h = _hash(json.dumps(messages, sort_keys=True))
        return Reply(r.text, r.prob, top_logprobs=top, logprobs=h % none_every != 0)

    return responder


def unboxed(problems: Iterable[Problem]) -> Callable[..., Reply]:
    """A model that never writes ``\\boxed{}``: it ends its reply with "so the result is N", which no
    reader takes for an answer, and answers the extraction step with "The answer is N" (read as a
    stated answer); right and unsure as :func:`student` is."""
    base = student(problems)
    golds = {p.question: p.gold for p in problems}

    def responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        if _is_extraction(messages):
            said = re.findall(r"so the result is (-?\d+)", messages[-2]["content"])
            return Reply(f"The answer is {said[-1]}." if said else "I do not know.", 0.93)
        r = base(messages, params)
        m = re.search(r"\\boxed\{([^}]*)\}", r.text)
        if m is None or _question(golds, messages) is None:
            return Reply(r.text.replace("\\boxed", ""), r.prob)
        return Reply(r.text[: m.start()] + f"so the result is {m.group(1)} in the end.", r.prob)

    return responder


def constant(answer: str = "42", prob: float = 0.6) -> Callable[..., Reply]:
    """A model that says the same thing everywhere: ``\\boxed{answer}`` at ``prob`` on every token
    (every first answer wrong and unsure, every note and revision the same)."""
    def responder(messages: list[dict[str, str]], params: dict[str, Any]) -> Reply:
        return Reply(f"The answer is \\boxed{{{answer}}}.", prob)

    return responder
