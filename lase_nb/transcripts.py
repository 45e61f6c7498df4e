"""One problem's calls rendered readably: the one transcript renderer (chapters 03 and 06).

- :func:`transcript_entries`: one dict per call of a problem (role, stage, what it read, answer,
  confidence, U at given thresholds, leaks), from a calls table (:mod:`lase_nb.traces`);
- :func:`render_transcript`: those entries as Markdown, HTML or plain text, the model's text
  verbatim (escaped, clipped) and the supporters' removed ``\\boxed{}`` answers marked.
"""

from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from . import prompts
from .answers import WITHHELD, answer_or_none, extract_boxed, find_boxed_spans, grade, number_or_none
from .confidence import uncertain_mask
from .errors import DataError

__all__ = ["ANSWERER_ROLES", "ROLE_TITLES", "SUPPORTERS", "transcript_entries", "render_transcript"]

ANSWERER_ROLES = prompts.ANSWERER_ROLES
SUPPORTERS = frozenset(prompts.NOTE_ROLES)  # every role that writes a note (a group's moderator too)
ROLE_TITLES = {"leader": "leader", "devil": "devil's advocate", "collaborator": "collaborator",
               "expert": "senior expert", "solver": "solver", "sample": "sample", "debater": "debater",
               "proposer": "proposer", "aggregator": "aggregator", "judge": "judge", prompts.MODERATOR: "moderator"}
FORMATS = ("markdown", "html", "text")
#: An HTML comment opening every Markdown and HTML transcript: the lecturer's clock
#: (:func:`lase_nb.book.budget.chapter_budget`) counts a transcript shown by it, not by its words.
TRANSCRIPT_MARK = "<!-- lase-nb:transcript -->"


def transcript_entries(calls: pd.DataFrame, problem_id: str, *, stop_stage: int | None = None,
                       tau_lp: float | None = None, tau_h: float | None = None,
                       gold: str | None = None, kind: str = "number") -> list[dict[str, Any]]:
    """One dict per call of ``problem_id`` in stage order: what :func:`render_transcript` draws.

    ``stop_stage`` marks calls after it as recorded-only (LASE at these thresholds would not
    have made them); without it the calls' ``used`` column decides. With ``gold`` each answer is
    graded; with thresholds each answer carries its uncertainty event U.
    """
    rows = calls[calls["problem_id"] == problem_id]
    if rows.empty:
        raise DataError(f"no calls for problem {problem_id!r}")
    rows = rows.sort_values("stage", kind="stable")
    last_stage = int(rows["stage"].max())
    out = []
    for _, r in rows.iterrows():
        answer, p, h = answer_or_none(r.get("answer")), number_or_none(r.get("p_min")), number_or_none(r.get("h_max"))
        is_answerer = r["role"] not in SUPPORTERS
        e = {"problem_id": problem_id, "stage": int(r["stage"]), "role": r["role"],
             "title": ROLE_TITLES.get(r["role"], r["role"]), "agent": r.get("agent", r["role"]),
             "reads": list(r.get("reads") or []) if not isinstance(r.get("reads"), float) else [],
             "text": r.get("text") if isinstance(r.get("text"), str) else "",
             "completion_tokens": None if number_or_none(r.get("completion_tokens")) is None
             else int(r["completion_tokens"]),
             "finish_reason": r.get("finish_reason"), "truncated": r.get("finish_reason") == "length",
             "leaked": int(r.get("leaked", 0) or 0),
             "answer": answer if is_answerer else None, "p_min": p, "h_max": h,
             "correct": None, "uncertain": None, "last": int(r["stage"]) == last_stage,
             "used": bool(r["stage"] <= stop_stage) if stop_stage is not None else bool(r.get("used", True))}
        if is_answerer and gold is not None:
            e["correct"] = grade(answer, gold, kind)
        if is_answerer and tau_lp is not None and tau_h is not None:
            e["uncertain"] = bool(uncertain_mask(np.array([np.nan if p is None else p]),
                                                 np.array([np.nan if h is None else h]), tau_lp, tau_h)[0])
        out.append(e)
    return out


def _clip(text: str, max_chars: int | None) -> str:
    text = text.strip()
    if not text:
        return "(no text)"
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars].rstrip() + f" … [{len(text) - max_chars} more characters]"


def _mark_leaks(text: str, fmt: str, supporter: bool = True) -> str:
    """Escape for ``fmt`` and, in a supporter's text, highlight every boxed answer it wrote."""
    spans = find_boxed_spans(text) if supporter else []
    pieces, pos = [], 0
    for s, e in spans:
        pieces.append((text[pos:s], False))
        pieces.append((text[s:e], True))
        pos = e
    pieces.append((text[pos:], False))
    if fmt == "html":
        return "".join(f'<mark title="removed: the leader saw {html.escape(WITHHELD)}">{html.escape(t)}</mark>'
                       if leak else html.escape(t) for t, leak in pieces)
    return "".join(f"⟦LEAK {t}⟧" if leak else t for t, leak in pieces)


def _summary_line(e: Mapping[str, Any]) -> str:
    bits = [f"reads: {', '.join(e['reads'])}" if e["reads"] else "reads: nobody"]
    if e["completion_tokens"] is not None:
        bits.append(f"{e['completion_tokens']} completion tokens")
    if e["truncated"]:
        bits.append("finish reason: length (hit the token limit)")
    if e["role"] not in SUPPORTERS:
        if e["answer"] is None:
            boxed = extract_boxed(e["text"])
            if boxed is None:
                bits.append("answer: none boxed")
            elif e["role"] == "extract":
                bits.append(f"answer: none (the extraction step boxed {boxed.text}, a value the reply never states)")
            else:
                bits.append(f"answer: none ({boxed.text} could not be read as an answer)")
        else:
            verdict = "" if e["correct"] is None else (" (right)" if e["correct"] else " (wrong)")
            bits.append(f"answer: {e['answer']}{verdict}")
        if e["p_min"] is not None:
            bits.append(f"exp(LP_min) = {e['p_min']:.3f}, H_max = {e['h_max']:.3f} nats")
        if e["uncertain"] is not None:
            if not e["uncertain"]:
                bits.append("U = 0: confident, stop")
            else:
                bits.append("U = 1: unsure, but no supporter is left: stop" if e.get("last")
                            else "U = 1: unsure, ask the next supporter")
    elif e["leaked"]:
        bits.append(f"LEAK: wrote \\boxed{{}} {e['leaked']}x, replaced by '{WITHHELD}' before the leader saw it")
    return " · ".join(bits)


def _problem_header(problem_id: str, problem: Any, fmt: str) -> str:
    q, gold = getattr(problem, "question", None), getattr(problem, "gold", None)
    line = f"Problem {problem_id}" + (f" (gold answer: {gold})" if gold is not None else "")
    if fmt == "html":
        return f"<h4 style='margin:8px 0 2px'>{html.escape(line)}</h4>" + (f"<p>{html.escape(q)}</p>" if q else "")
    if fmt == "text":
        return f"=== {line} ===\n" + (f"{q}\n" if q else "")
    return f"#### {line}\n\n" + (f"> {q}\n\n" if q else "")


def render_transcript(entries: Sequence[Mapping[str, Any]], fmt: str = "markdown",
                      max_chars: int | None = 700, problem: Any = None) -> str:
    """A readable transcript of :func:`transcript_entries` (``fmt``: "markdown", "html" or "text").

    Each call gets a header (stage, role, what it read, answer, confidence, U, leaks) and its
    text verbatim (escaped for HTML, clipped to ``max_chars``); supporters' boxed answers are
    highlighted, and calls past the stop are marked as recorded for replay only. ``problem``
    (anything with ``question`` and ``gold``) adds the problem above the calls.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    parts = [] if fmt == "text" else [TRANSCRIPT_MARK]
    parts += [_problem_header(entries[0]["problem_id"], problem, fmt)] if problem is not None and entries else []
    for e in entries:
        head = f"Stage {e['stage']} · {e['title']}"
        if e["role"] == "leader" and e["stage"] > 0:
            head += " (revision)"
        note = "" if e["used"] else " — recorded for replay only: LASE stopped before this call"
        supporter = e["role"] in SUPPORTERS
        body = _mark_leaks(_clip(e["text"], max_chars), fmt, supporter=supporter)
        line = _summary_line(e)
        if fmt == "html":
            style = "" if e["used"] else "opacity:0.55;"
            colour = "#fff4e0" if supporter else "#e8f0ff" if e["stage"] > 0 else "#f4f4f4"
            parts.append(f'<div style="{style}"><p><b>{html.escape(head)}</b><i>{html.escape(note)}</i><br>'
                         f"<small>{html.escape(line)}</small></p>"
                         f'<pre style="white-space:pre-wrap;background:{colour};padding:6px">{body}</pre></div>')
        elif fmt == "text":
            parts.append(f"--- {head}{note} ---\n{line}\n{body}\n")
        else:
            parts.append(f"**{head}**{'*' + note + '*' if note else ''}  \n{line}\n\n```text\n{body}\n```\n")
    return "\n".join(parts)
