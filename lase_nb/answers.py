"""Answer extraction and grading.

Extraction finds the answer *content* and its character span in a response (the span is what
:mod:`lase_nb.confidence` maps onto tokens). Grading decides whether a predicted answer equals the
gold one: exact numbers for ``number`` problems, math equivalence (math-verify) for ``math``
problems, letter match for ``choice`` problems. Every public function here accepts any string
without raising; an answer that cannot be read is ``None`` and grades as wrong.

Design choices worth knowing:

- ``extract_boxed`` takes the LAST ``\\boxed{...}`` / ``\\fbox{...}``; if that last one has no
  closing brace (a truncated response) there is no answer, rather than an older, abandoned box.
- ``extract_answer`` is boxed-only by default, because LASE's prompts require the box and the paper
  measures confidence on the box's content. ``fallback=True`` also accepts "the answer is (B)" for
  choices and the last bare number for number/math problems.
- math-verify runs with its own timeouts disabled (they use SIGALRM, which fails in worker threads
  and would clobber pytest-timeout's alarm). Inputs that could make sympy run for ever (power
  towers, factorials of huge numbers, integrals/series/limits, very long strings) are refused
  before ``verify``: such answers are equal only when their normalised strings are.
"""

from __future__ import annotations

import logging
import math
import re
import string
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .errors import ConfigError
from .types import KIND_CHOICE, KIND_MATH, KIND_NUMBER

__all__ = [
    "answer_or_none",
    "number_or_none",
    "Extracted",
    "WITHHELD",
    "extract_boxed",
    "extract_choice",
    "extract_number",
    "extract_answer",
    "extract_stated",
    "find_boxed_spans",
    "strip_boxed",
    "grade",
    "normalize_answer",
]

KINDS = (KIND_MATH, KIND_NUMBER, KIND_CHOICE)

#: What a supporter's boxed answer is replaced with by :func:`strip_boxed`.
WITHHELD = "[answer withheld]"

#: Longest answer string handed to math-verify (longer ones are compared as strings only).
MAX_MATH_VERIFY_CHARS = 1000
#: Largest exponent / factorial argument math-verify may see (guards against sympy hangs).
_MAX_MAGNITUDE = 1e4


@dataclass(frozen=True)
class Extracted:
    """An extracted answer: its text and the char span ``[start, end)`` of that text in the response."""

    text: str
    start: int
    end: int

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)


# --------------------------------------------------------------------------------------------
# boxed answers
# --------------------------------------------------------------------------------------------

_BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])(\s*)")
# "\boxed 5", "\boxed -3/4", "\boxed B": a brace-less argument, as in some MATH solutions. Only a
# number or a single letter counts, so that prose such as "do not use \boxed in..." is no box.
_BARE_ARG_RE = re.compile(r"[-+]?[0-9](?:[^\s${},;]*[^\s${},;.])?|[A-Za-z](?![A-Za-z0-9])")


def _match_brace(text: str, i: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``text[i]``, or -1. Escaped chars (``\\{``) are skipped."""
    depth = 0
    j = i
    n = len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _parse_box(text: str, m: re.Match[str]) -> tuple[int, int, int, bool] | None:
    """(content start, content end, box end, closed) for the box command matched by ``m``."""
    i = m.end()
    if i < len(text) and text[i] == "{":
        close_i = _match_brace(text, i)
        if close_i < 0:
            return (i + 1, len(text), len(text), False)
        return (i + 1, close_i, close_i + 1, True)
    if m.group(1):
        tok = _BARE_ARG_RE.match(text, i)
        if tok is not None:
            return (tok.start(), tok.end(), tok.end(), True)
    return None


def extract_boxed(text: str) -> Extracted | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``, ``\\boxed 5``), braces balanced, trimmed.

    Returns ``None`` when there is no box, when the last box is never closed, or when it is empty.
    """
    if not isinstance(text, str):
        return None
    last = None
    for m in reversed(list(_BOX_RE.finditer(text))):  # parse from the end: O(len(text)) overall
        last = _parse_box(text, m)
        if last is not None:
            break
    if last is None or not last[3]:
        return None
    s, e = _trimmed(text, last[0], last[1])
    if s >= e:
        return None
    return Extracted(text[s:e], s, e)


def find_boxed_spans(text: str) -> list[tuple[int, int]]:
    """Full spans (``\\boxed{`` ... ``}``) of every outermost boxed answer, left to right.

    A box that is never closed runs to the end of the text (a truncated message still leaks it).
    Empty boxes (``\\boxed{}``) leak nothing and are not listed.
    """
    if not isinstance(text, str):
        return []
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = _BOX_RE.search(text, pos)
        if m is None:
            break
        box = _parse_box(text, m)
        if box is None:
            pos = m.end()
            continue
        if text[box[0]:box[1]].strip():
            spans.append((m.start(), box[2]))
        pos = box[2]
    return spans


def strip_boxed(text: str) -> tuple[str, int]:
    """Replace every boxed answer by :data:`WITHHELD`; return the new text and how many were replaced.

    Used on supporters' messages: only the leader may give a final answer.
    """
    if not isinstance(text, str):
        return "", 0
    spans = find_boxed_spans(text)
    if not spans:
        return text, 0
    parts: list[str] = []
    pos = 0
    for s, e in spans:
        parts.append(text[pos:s])
        parts.append(WITHHELD)
        pos = e
    parts.append(text[pos:])
    return "".join(parts), len(spans)


# --------------------------------------------------------------------------------------------
# option letters
# --------------------------------------------------------------------------------------------

_WRAP = r"\\(?:text|textbf|textrm|texttt|mathrm|mathbf|mathtt|mbox|bf)\s*\{\s*"
# The whole content is one letter, possibly wrapped / parenthesised: "B", "(b)", "\text{(B)}".
_LETTER_ONLY_RE = re.compile(
    rf"^\s*(?:{_WRAP})*\(?\s*([A-Za-z])\s*\)?\s*[.:]?\s*(?:\}}\s*)*$"
)
# An upper-case letter followed by the option's text: "(B) 42", "B. 42", "B) 42".
_LETTER_LEAD_RE = re.compile(rf"^\s*(?:{_WRAP})*(?:\(\s*([A-Z])\s*\)|([A-Z])(?:[.:)]|\s+-))")
# "The answer is (B)", "Answer: B", "correct option is C", "answer: **D**".
_ANSWER_PHRASE_RE = re.compile(
    r"(?i:answer|choice|option)(?:\s+(?i:is|would\s+be|should\s+be))?\s*[:=]?\s*"
    r"(?:(?i:option|choice)\s*)?(?:\*\*|\\textbf\{|\$)?\s*\(?([A-Z])\)?(?![A-Za-z0-9])"
)


def _allowed_letters(n_choices: int | None) -> str:
    if n_choices is None:
        return string.ascii_uppercase
    if not isinstance(n_choices, int) or not 1 <= n_choices <= 26:
        raise ConfigError(f"n_choices must be an integer in 1..26 (got {n_choices!r}); pass None for A..Z")
    return string.ascii_uppercase[:n_choices]


def _letter_in(content: str, offset: int) -> Extracted | None:
    """The option letter written in ``content`` (text starting at ``offset`` of the response)."""
    m = _LETTER_ONLY_RE.match(content)
    if m is not None:
        return Extracted(m.group(1).upper(), offset + m.start(1), offset + m.end(1))
    m = _LETTER_LEAD_RE.match(content)
    if m is not None:
        g = 1 if m.group(1) is not None else 2
        return Extracted(m.group(g), offset + m.start(g), offset + m.end(g))
    return None


def extract_choice(text: str, n_choices: int | None = None, fallback: bool = True) -> Extracted | None:
    """The option letter (upper case) and its span.

    First from the last boxed answer (``B``, ``(B)``, ``\\text{B}``, ``(B) 42``); if there is no box
    or the box holds no letter and ``fallback`` is true, from the last phrase like "the answer is
    (B)" / "Answer: B". A letter outside the first ``n_choices`` letters is no answer.
    """
    allowed = _allowed_letters(n_choices)
    if not isinstance(text, str):
        return None
    box = extract_boxed(text)
    if box is not None:
        got = _letter_in(box.text, box.start)
        if got is not None:
            return got if got.text in allowed else None
    if not fallback:
        return None
    last = None
    for m in _ANSWER_PHRASE_RE.finditer(text):
        if m.group(1) in allowed:
            last = m
    if last is None:
        return None
    return Extracted(last.group(1), last.start(1), last.end(1))


# --------------------------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------------------------

_D = "[0-9]"
_UNSIGNED = rf"(?:{_D}{{1,3}}(?:,{_D}{{3}})+|{_D}+)(?:\.{_D}+)?|\.{_D}+"
_NUMBER_IN_TEXT_RE = re.compile(
    rf"(?<![\w.])(?:"
    rf"[-\u2212]?\\[dt]?frac\{{\s*-?{_D}+\s*\}}\{{\s*-?{_D}+\s*\}}"
    rf"|[-\u2212]?(?:{_UNSIGNED})(?:\s*/\s*{_D}+(?![.,]{_D}))?"
    rf")(?![0-9])"
)


def extract_number(text: str) -> Extracted | None:
    """The last number in ``text`` (``1,234``, ``-3.5``, ``.5``, ``3/4``, ``\\frac{3}{4}``) and its span."""
    if not isinstance(text, str):
        return None
    last = None
    for m in _NUMBER_IN_TEXT_RE.finditer(text):
        last = m
    if last is None:
        return None
    return Extracted(last.group(0), last.start(), last.end())


def reply_states(text: str | None, answer: str | None, kind: str) -> bool:
    """Whether a reply writes ``answer`` somewhere (for ``number`` problems: some number in it
    grades equal to ``answer``). The answer-extraction step may only recover what the reply
    reached: a value it wrote nowhere is the step's invention (a worked example's answer, a
    favourite number), not the reply's answer. ``math`` and ``choice`` answers are not checked
    (an expression or a letter can be stated in too many ways), so they always pass.
    """
    if kind != KIND_NUMBER:
        return True
    if not text or answer is None:
        return False
    return any(grade(m.group(0), answer, KIND_NUMBER) for m in _NUMBER_IN_TEXT_RE.finditer(text))


#: "The answer is 50", "Final answer: $3/4$": an answer stated in words, the number right after.
_STATED_RE = re.compile(rf"(?i)\banswer\s*(?:is|:|=)\s*:?\s*\$?\s*(?P<value>{_NUMBER_IN_TEXT_RE.pattern})")


def extract_stated(text: str) -> Extracted | None:
    """The first number stated as "the answer is N" (or "answer: N") in ``text``, and its span."""
    m = _STATED_RE.search(text) if isinstance(text, str) else None
    return Extracted(m.group("value"), m.start("value"), m.end("value")) if m else None


def extract_answer(
    text: str, kind: str, fallback: bool = False, n_choices: int | None = None, stated: bool = False
) -> Extracted | None:
    """Extract the answer of a response for a problem ``kind`` (``math``, ``number``, ``choice``).

    By default only the final boxed answer counts (for choices: the letter inside it). For a
    number problem, a box holding an equation (``\\boxed{2 + 3 = 5}``) gives its right-hand side,
    and the span (the tokens the confidence is read from) is that side alone. With
    ``stated=True`` a response without a box may give its answer in words, "The answer is 50"
    (:func:`extract_stated`; for choices "the answer is (B)"): the answer-extraction step reads
    its reply so, since a small model asked for the answer alone often writes it that way. With
    ``fallback=True`` a response without a box may still give an answer: "the answer is (B)" for
    choices, the last number for number and math problems.
    """
    _check_kind(kind)
    if kind == KIND_CHOICE:
        return extract_choice(text, n_choices=n_choices, fallback=fallback or stated)
    got = extract_boxed(text)
    if got is not None and kind == KIND_NUMBER and "=" in got.text:
        rhs = got.text.rsplit("=", 1)[1]
        lead = len(rhs) - len(rhs.lstrip())
        value = rhs.strip()
        if value:
            start = got.start + len(got.text) - len(rhs) + lead
            got = Extracted(value, start, start + len(value))
    if got is None and stated:
        got = extract_stated(text)
    if got is None and fallback:
        got = extract_number(text)
    return got


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ConfigError(f"unknown problem kind {kind!r}; use one of {', '.join(KINDS)}")


# --------------------------------------------------------------------------------------------
# normalisation
# --------------------------------------------------------------------------------------------

_TEXT_WRAP_RE = re.compile(
    r"\\(?:text|textbf|textrm|texttt|textit|mathrm|mathbf|mathit|mathtt|mbox|operatorname)\s*\{([^{}]*)\}"
)
_SPACING_RE = re.compile(r"\\left(?![A-Za-z])|\\right(?![A-Za-z])|\\displaystyle|\\[!,;: ]|~")
_DEGREE_RE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ|°|\\degree")
_FRAC_SHORT_RE = re.compile(r"\\[dt]?frac\s*([0-9])\s*([0-9])")


def _strip_delims(s: str) -> str:
    s = s.strip()
    for a, b in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(s) >= len(a) + len(b) and s.startswith(a) and s.endswith(b):
            s = s[len(a): len(s) - len(b)].strip()
    if s.startswith(("\\boxed", "\\fbox")) and find_boxed_spans(s) == [(0, len(s))]:
        box = extract_boxed(s)
        if box is not None:
            s = box.text
    return s


def _unwrap_text(s: str, repl: str = r"\1") -> str:
    """``\\text{..}``-style wrappers replaced by ``repl`` (their content), nested ones too (at most three deep)."""
    for _ in range(3):
        s2 = _TEXT_WRAP_RE.sub(repl, s)
        if s2 == s:
            break
        s = s2
    return s


def _norm_latex(s: str) -> str:
    """Cosmetic LaTeX normalisation: no spacing commands, no whitespace, one spelling of ``\\frac``."""
    s = _strip_delims(s)
    s = _SPACING_RE.sub("", s)
    s = re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", s)
    s = _FRAC_SHORT_RE.sub(r"\\frac{\1}{\2}", s)
    s = _unwrap_text(s)
    s = _DEGREE_RE.sub("", s)
    s = re.sub(r"\s+", "", s)
    s = s.rstrip(".")
    return s


_TEXTY_RE = re.compile(r"[A-Za-z][A-Za-z\s'\-,.]*")


def _norm_text(s: str) -> str:
    s = _strip_delims(s)
    s = _unwrap_text(s)
    s = re.sub(r"\s+", " ", s).strip().rstrip(".").strip()
    return s.casefold()


def _is_texty(s: str) -> bool:
    """A plain-words answer ("yes", "Paris", "no solution"), which math parsing would mangle."""
    t = _norm_text(s)
    if not _TEXTY_RE.fullmatch(t):
        return False
    return bool(re.search(r"[a-z]{3,}", t)) or t in ("no", "ok")


# The whole string is one number (after cleaning): 1,234 / -3.5 / 2e3 / 3/4 / \frac{3}{4}.
_NUM_STR = rf"[-+]?(?:{_UNSIGNED})(?:[eE][-+]?{_D}{{1,3}})?"
_WHOLE_NUMBER_RE = re.compile(_NUM_STR)
_WHOLE_SLASH_RE = re.compile(rf"({_NUM_STR})\s*/\s*({_NUM_STR})")
_WHOLE_FRAC_RE = re.compile(rf"([-+]?)\\[dt]?frac\{{({_NUM_STR})\}}\{{({_NUM_STR})\}}")
_ASSIGN_RE = re.compile(r"^[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\s*=\s*")
_UNIT_WORD = r"[A-Za-z]+\.?(?:\^\{?[0-9]\}?)?"
# "cm", "dollars", "m^2", "cm^{3}", "km/h", "square feet", "miles per hour" (no bare digits).
_UNIT_TAIL_RE = re.compile(rf"{_UNIT_WORD}(?:\s*/\s*{_UNIT_WORD}|\s+{_UNIT_WORD})*")
_CURRENCY_RE = re.compile(r"\\\$|\$|US\$|USD|€|£|¥|\\euro|\\pounds", re.IGNORECASE)


def _plain_fraction(s: str) -> Fraction | None:
    s = s.strip()
    try:
        if _WHOLE_NUMBER_RE.fullmatch(s):
            return Fraction(s.replace(",", ""))
        m = _WHOLE_SLASH_RE.fullmatch(s)
        if m:
            den = Fraction(m.group(2).replace(",", ""))
            return None if den == 0 else Fraction(m.group(1).replace(",", "")) / den
        m = _WHOLE_FRAC_RE.fullmatch(s)
        if m:
            den = Fraction(m.group(3).replace(",", ""))
            if den == 0:
                return None
            val = Fraction(m.group(2).replace(",", "")) / den
            return -val if m.group(1) == "-" else val
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None


def _parse_number(s: str, units: bool) -> Fraction | None:
    """The exact value of ``s`` if it is a single number, else None.

    Always ignored: ``$`` delimiters, spacing commands, thousands separators, ``\\frac`` spellings,
    a trailing period. With ``units=True`` (number problems) also currency signs, ``\\%``/``%``,
    degrees, ``\\text{...}`` and trailing unit words ("12 cm", "5 dollars"), and a leading
    ``x =``. Math problems use ``units=False`` so that ``2x`` is never read as 2.
    """
    if not isinstance(s, str) or len(s) > 200:
        return None
    t = _strip_delims(s)
    t = _SPACING_RE.sub("", t).replace("{,}", ",").replace("\u2212", "-")
    t = _FRAC_SHORT_RE.sub(r"\\frac{\1}{\2}", t)
    t = re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", t)
    t = t.strip().rstrip(".").strip()
    got = _plain_fraction(t)
    if got is not None or not units:
        return got
    t = _ASSIGN_RE.sub("", t)
    t = _CURRENCY_RE.sub("", t)
    t = _DEGREE_RE.sub("", t)
    t = t.replace("\\%", "").replace("%", "")
    t = _unwrap_text(t, r" \1 ")  # a unit in \text{} stays apart from the number
    t = t.strip().rstrip(".").strip()
    got = _plain_fraction(t)
    if got is not None:
        return got
    m = re.match(
        rf"\s*([-+]?\\frac\{{{_NUM_STR}\}}\{{{_NUM_STR}\}}|{_NUM_STR}(?:\s*/\s*{_NUM_STR})?)\s*", t
    )
    if m is None:
        return None
    rest = t[m.end():]
    if rest and not _UNIT_TAIL_RE.fullmatch(rest):
        return None
    return _plain_fraction(m.group(1))


def _canonical_number(f: Fraction) -> str:
    if f.denominator == 1:
        return str(f.numerator)
    try:
        r = round(float(f), 9)
    except (OverflowError, ValueError):
        return str(f)
    if r == int(r):
        return str(int(r))
    return repr(r)


def _choice_letter(s: str) -> str | None:
    got = _letter_in(s, 0) if isinstance(s, str) else None
    if got is None:
        got = extract_choice(s, fallback=True) if isinstance(s, str) else None
    return None if got is None else got.text


def normalize_answer(s: str, kind: str) -> str:
    """A canonical string for voting: equivalent answers should map to the same string.

    Numbers become an exact canonical form (``"0.5"``, ``"1/2"`` and ``"\\frac{1}{2}"`` all give
    ``"0.5"``; integers their digits; other values rounded to 1e-9). Choices become the upper-case
    letter. Anything else becomes its LaTeX with spacing commands, ``\\left``/``\\right``, text
    wrappers and whitespace removed (plain-word answers also case-folded).
    """
    _check_kind(kind)
    if not isinstance(s, str):
        return ""
    try:
        if kind == KIND_CHOICE:
            letter = _choice_letter(s)
            return letter if letter is not None else _norm_text(s)
        f = _parse_number(s, units=(kind == KIND_NUMBER))
        if f is not None:
            return _canonical_number(f)
        if _is_texty(s):
            return _norm_text(s)
        return _norm_latex(s)
    except Exception:  # noqa: BLE001 - normalisation must never fail on odd text
        return s.strip()


# --------------------------------------------------------------------------------------------
# grading
# --------------------------------------------------------------------------------------------


class _DropTimeoutWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:  # pragma: no cover - trivial
        return "Timeout is disabled" not in record.getMessage()


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_DropTimeoutWarning())

_HEAVY_FUNCS = {
    "factorial", "factorial2", "subfactorial", "gamma", "loggamma", "binomial", "RisingFactorial",
    "FallingFactorial", "fibonacci", "lucas", "bell", "bernoulli", "catalan", "harmonic",
    "primorial", "prime", "tribonacci", "partition", "euler", "genocchi", "motzkin",
}


# Integrals, series, limits: sympy may try to evaluate them for minutes. Answers that contain one
# are compared as normalised strings only.
_UNEVALUATED = {"Integral", "Sum", "Product", "Limit", "Derivative"}


def _small(x) -> bool:  # noqa: ANN001 - a sympy expression without free symbols
    try:
        v = complex(x.evalf(15))
    except Exception:  # noqa: BLE001
        return False
    return math.isfinite(v.real) and math.isfinite(v.imag) and abs(v) <= _MAX_MAGNITUDE


def _safe_expr(expr, depth: int = 0) -> bool:  # noqa: ANN001 - sympy object or str
    """False for expressions sympy might take for ever on (power towers, huge factorials...)."""
    if depth > 80:
        return False
    args = getattr(expr, "args", None)
    if not isinstance(args, tuple):
        return True
    for a in args:
        if not _safe_expr(a, depth + 1):
            return False
    if getattr(expr, "is_Pow", False) and len(args) == 2:
        base, exp = args
        if getattr(exp, "free_symbols", True):
            return True  # symbolic exponent (e^{x^2}): nothing to evaluate
        if not _small(exp):
            return False
        if getattr(base, "free_symbols", True):
            return True
        try:  # a numeric power must have a modest number of digits: |exp| * log10|base|
            import sympy

            a = sympy.Abs(base.evalf(15)).evalf(15)
            digits = 0.0 if a == 0 else float(sympy.log(a, 10).evalf(15))
            e = abs(complex(exp.evalf(15)))
        except Exception:  # noqa: BLE001
            return False
        return math.isfinite(digits) and (digits <= 0.0 or e * digits <= 1e5)
    if type(expr).__name__ in _UNEVALUATED:
        return False
    if type(expr).__name__ in _HEAVY_FUNCS or getattr(getattr(expr, "func", None), "__name__", "") in _HEAVY_FUNCS:
        return all(getattr(a, "free_symbols", True) or _small(a) for a in args)
    return True


def _mv_wrap(s: str) -> str:
    s = re.sub(r"(?<!\\)\$", "", s).strip()
    return f"${s}$"


def _math_verify_equal(gold: str, pred: str) -> bool:
    if len(gold) > MAX_MATH_VERIFY_CHARS or len(pred) > MAX_MATH_VERIFY_CHARS:
        return False
    from math_verify import parse, verify  # local import: math-verify pulls in sympy (slow import)

    g = parse(_mv_wrap(gold), parsing_timeout=None)
    if not g:
        return False
    p = parse(_mv_wrap(pred), parsing_timeout=None)
    if not p:
        return False
    if not all(_safe_expr(x) for x in list(g) + list(p)):
        return False
    return bool(verify(g, p, timeout_seconds=None))


def _close(a: Fraction, b: Fraction, rel_tol: float) -> bool:
    if a == b:
        return True
    try:
        fa, fb = float(a), float(b)
    except (OverflowError, ValueError):
        return False
    return math.isclose(fa, fb, rel_tol=rel_tol, abs_tol=1e-9)


def _grade(pred: str, gold: str, kind: str, rel_tol: float) -> bool:
    if kind == KIND_CHOICE:
        lp, lg = _choice_letter(pred), _choice_letter(gold)
        if lp is not None and lg is not None:
            return lp == lg
        return bool(_norm_text(pred)) and _norm_text(pred) == _norm_text(gold)

    fp = _parse_number(pred, units=(kind == KIND_NUMBER))
    fg = _parse_number(gold, units=(kind == KIND_NUMBER))
    if fp is not None and fg is not None:
        return _close(fp, fg, rel_tol)
    npred, ngold = _norm_latex(pred), _norm_latex(gold)
    if not npred:
        return False
    if npred == ngold:
        return True
    if _is_texty(pred) or _is_texty(gold):
        return _norm_text(pred) == _norm_text(gold)
    return _math_verify_equal(gold, pred)


def grade(pred: str | None, gold: str, kind: str, rel_tol: float = 1e-6) -> bool:
    """Whether ``pred`` is a correct answer to a problem whose answer is ``gold``.

    ``None`` (nothing extracted) is wrong. ``number``: exact value comparison after removing
    ``$``, commas, ``%``, units and ``\\text{...}``, with relative tolerance ``rel_tol`` (and an
    absolute 1e-9); non-numbers fall back to math-verify. ``math``: numbers as above (without unit
    stripping), plain-word answers ("yes", "Paris") by normalised string, anything else by
    math-verify (``\\sqrt{18}`` equals ``3\\sqrt{2}``). ``choice``: option letter, case-insensitive.
    """
    _check_kind(kind)
    if pred is None or not isinstance(pred, str) or not isinstance(gold, str):
        return False
    try:
        return _grade(pred, gold, kind, rel_tol)
    except Exception:  # noqa: BLE001 - sympy/latex2sympy can fail in many ways; unreadable = wrong
        return False


def answer_or_none(x: Any) -> str | None:
    """A table cell as an answer string (stripped); None for None, NaN, pd.NA and empty cells: the
    one None/NaN normaliser for answers read back from tables."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    s = str(x).strip()
    return None if s in ("", "nan", "None", "<NA>") else s


def number_or_none(x: Any) -> float | None:
    """A table cell as a float; None when missing (None, NaN, pd.NA)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v
