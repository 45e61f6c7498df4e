"""Confidence of a response, measured on the tokens of its extracted answer (the LASE paper, Section 3; chapter 02).

- ``LP_min``: the smallest log-probability among the answer's tokens (quoted as ``p_min = exp(LP_min)``).
- ``H_max``: the largest next-token entropy (nats) among the answer's tokens.
- Uncertainty event: ``U = 1`` if there is no answer, or ``p_min < tau_lp``, or ``H_max > tau_h``.

The rule lives in one place, :func:`uncertain_mask` (vectorised, used by replay); the scalar
:func:`is_uncertain` calls it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from .answers import extract_answer
from .errors import ConfigError, DataError, LogprobsUnavailable
from .prompts import ANSWERER_ROLES
from .types import ENTROPY_EXACT, ENTROPY_TOPK_RESIDUAL, Generation, TokenLogprob

__all__ = [
    "ESTIMATOR",
    "Confidence",
    "topk_entropy",
    "token_entropy",
    "answer_token_indices",
    "measure",
    "is_uncertain",
    "uncertain_mask",
    "confidence_arrays",
    "confidence_frame",
    "gate_split",
]

#: The estimator :func:`topk_entropy` implements (recorded in :attr:`Confidence.estimator`).
ESTIMATOR = ENTROPY_TOPK_RESIDUAL


def topk_entropy(top_logprobs: Sequence[float]) -> float:
    """Entropy (nats) estimated from the log-probabilities of the top-k alternatives.

    Estimator ``"topk+residual"``: the k known probabilities ``p_i = exp(l_i)`` plus ONE residual
    bucket holding the missing mass ``r = 1 - sum(p_i)``:
    ``H = -sum_i p_i log p_i - r log r``. Treating the tail as one outcome makes this a lower bound
    on the full-vocabulary entropy (exact when the tail is a single token). If rounding makes
    ``sum(p_i)`` exceed 1, the ``p_i`` are renormalised and ``r = 0``. Non-finite log-probs other
    than ``-inf`` (probability 0) are ignored; an empty input returns ``nan`` (entropy unknown).
    """
    ps: list[float] = []
    for lp in top_logprobs:
        try:
            x = float(lp)
        except (TypeError, ValueError):
            continue
        if math.isnan(x) or x == math.inf:
            continue
        ps.append(math.exp(min(x, 0.0)))  # a log-prob a hair above 0 (rounding) is probability 1
    if not ps:
        return float("nan")
    total = math.fsum(ps)
    if total > 1.0:
        ps = [p / total for p in ps]
        residual = 0.0
    else:
        residual = 1.0 - total
    h = -math.fsum(p * math.log(p) for p in ps if p > 0.0)
    if residual > 0.0:
        h -= residual * math.log(residual)
    return max(h, 0.0)


def token_entropy(tok: TokenLogprob) -> tuple[float, bool]:
    """Entropy at one token and whether it was estimated from top-k (``True``) or given (``False``).

    A given ``tok.entropy`` (exact, from a local model) wins. Otherwise the top-k alternatives are
    used; when the chosen token is not among them its own probability is added as a known bucket.
    """
    if tok.entropy is not None:
        return float(tok.entropy), False
    lps = [lp for _, lp in tok.top]
    if tok.top and tok.token not in {t for t, _ in tok.top}:
        lps.append(tok.logprob)
    return topk_entropy(lps), True


def answer_token_indices(gen: Generation, span: tuple[int, int]) -> list[int]:
    """Indices of ``gen.tokens`` overlapping the char span ``[start, end)`` of ``gen.text``.

    Token ``i`` covers ``[offset, offset + len(token))`` (its recorded offset; nothing is
    re-tokenised). Any overlap counts, so a token ``" 42"`` counts for the answer ``42``, and a
    pure-whitespace token inside the span counts too: it is a choice the model made while writing
    the answer. A zero-length token (e.g. part of a multi-byte character) counts if its offset lies
    inside the span.
    """
    start, end = span
    out: list[int] = []
    for i, t in enumerate(gen.tokens or ()):
        a = t.offset
        b = a + len(t.token)
        if b > a:
            if a < end and b > start:
                out.append(i)
        elif start <= a < end:
            out.append(i)
    return out


@dataclass(frozen=True)
class Confidence:
    """Confidence of one response: its answer and the min log-prob / max entropy over its tokens.

    ``answer`` is ``None`` when nothing could be extracted (then ``lp_min``, ``h_max`` are ``None``
    too). ``h_max`` is ``nan`` when the answer tokens carry no entropy information (no top-k
    alternatives). ``span`` is the answer's char span in the response.
    """

    answer: str | None
    lp_min: float | None
    h_max: float | None
    n_answer_tokens: int
    estimator: str
    span: tuple[int, int] | None = None

    @property
    def p_min(self) -> float | None:
        """``exp(lp_min)``: the smallest answer-token probability."""
        return None if self.lp_min is None else math.exp(self.lp_min)


def measure(gen: Generation, kind: str, fallback: bool = False, n_choices: int | None = None,
            stated: bool = False) -> Confidence:
    """Extract the answer of ``gen`` and measure ``LP_min`` and ``H_max`` over its tokens.

    Raises :class:`~lase_nb.errors.LogprobsUnavailable` when ``gen`` carries no tokens. Extraction
    is boxed-only unless ``stated`` or ``fallback`` (see :func:`lase_nb.answers.extract_answer`). A nan among
    the answer tokens' log-probs or entropies propagates (and counts as uncertain).
    """
    if gen.tokens is None or (not gen.tokens and gen.text):  # an empty reply has no answer, not no logprobs
        raise LogprobsUnavailable(gen.backend, gen.model)
    got = extract_answer(gen.text, kind, fallback=fallback, n_choices=n_choices, stated=stated)
    if got is None:
        return Confidence(None, None, None, 0, gen.entropy_estimator or ESTIMATOR)
    idx = answer_token_indices(gen, got.span)
    if not idx:
        return Confidence(got.text, None, None, 0, gen.entropy_estimator or ESTIMATOR, got.span)
    lps: list[float] = []
    hs: list[float] = []
    any_topk = False
    for i in idx:
        t = gen.tokens[i]
        lps.append(float(t.logprob))
        h, est = token_entropy(t)
        hs.append(h)
        any_topk = any_topk or est
    lp_min = float("nan") if any(math.isnan(x) for x in lps) else min(lps)
    h_max = float("nan") if any(math.isnan(x) for x in hs) else max(hs)
    estimator = ENTROPY_TOPK_RESIDUAL if any_topk else (gen.entropy_estimator or ENTROPY_EXACT)
    return Confidence(got.text, lp_min, h_max, len(idx), estimator, got.span)


def _got(value: Any, bad: np.ndarray | None) -> str:
    """The threshold values that are out of range, as a user typed them (``7``, ``-0.5``; each
    once), whether one number or a grid of them was passed."""
    if bad is None:
        return repr(value)
    return ", ".join(dict.fromkeys(f"{float(v):g}" for v in bad.ravel()))


def check_thresholds(tau_lp: float | np.ndarray, tau_h: float | np.ndarray) -> None:
    """Thresholds (scalars or arrays, for grids) must lie in their ranges."""
    lp = np.asarray(tau_lp, dtype=float) if np.asarray(tau_lp).dtype.kind in "iuf" else None
    if lp is None or np.isnan(lp).any() or (lp < 0.0).any() or (lp > 1.0).any():
        bad = None if lp is None else lp[np.isnan(lp) | (lp < 0.0) | (lp > 1.0)]
        raise ConfigError(
            f"tau_lp is a probability threshold on exp(LP_min) and must lie in [0, 1] (got {_got(tau_lp, bad)}); "
            "e.g. 0.9. To gate on a log-probability l, pass exp(l)."
        )
    h = np.asarray(tau_h, dtype=float) if np.asarray(tau_h).dtype.kind in "iuf" else None
    if h is None or np.isnan(h).any() or (h < 0.0).any():
        bad = None if h is None else h[np.isnan(h) | (h < 0.0)]
        raise ConfigError(
            f"tau_h is an entropy threshold in nats and must be >= 0 (got {_got(tau_h, bad)}); e.g. 0.5, "
            "or float('inf') to switch the entropy gate off."
        )


def uncertain_mask(p_min: np.ndarray, h_max: np.ndarray, tau_lp: float | np.ndarray,
                   tau_h: float | np.ndarray) -> np.ndarray:
    """THE uncertainty rule, vectorised: ``U = isnan(p_min) | (p_min < tau_lp) | (h_max > tau_h)``.

    ``p_min`` is ``nan`` where there is no answer (or no measurable confidence): uncertain. A
    ``nan`` ``h_max`` (entropy unknown) is uncertain unless the entropy gate is off
    (``tau_h = inf``). Returns a boolean array of the broadcast shape.
    """
    check_thresholds(tau_lp, tau_h)
    p = np.asarray(p_min, dtype=float)
    h = np.asarray(h_max, dtype=float)
    no_answer = np.isnan(p)
    with np.errstate(invalid="ignore"):
        low_p = p < tau_lp
        high_h = h > tau_h
    unknown_h = np.isnan(h) & ~np.isinf(np.asarray(tau_h, dtype=float))
    return np.asarray(no_answer | low_p | high_h | unknown_h, dtype=bool)


def is_uncertain(conf: Confidence, tau_lp: float, tau_h: float) -> bool:
    """The event U for one :class:`Confidence` (see :func:`uncertain_mask`)."""
    p = np.nan if conf.answer is None or conf.p_min is None else conf.p_min
    h = np.nan if conf.h_max is None else conf.h_max
    return bool(uncertain_mask(np.array([p]), np.array([h]), tau_lp, tau_h)[0])


def confidence_arrays(confs: Iterable[Confidence]) -> tuple[np.ndarray, np.ndarray]:
    """``(p_min, h_max)`` float arrays for :func:`uncertain_mask`; ``nan`` where unknown or no answer."""
    ps: list[float] = []
    hs: list[float] = []
    for c in confs:
        no = c.answer is None
        ps.append(np.nan if no or c.p_min is None else c.p_min)
        hs.append(np.nan if no or c.h_max is None else c.h_max)
    return np.array(ps, dtype=float), np.array(hs, dtype=float)


# ---------------------------------------------------------------------------------------------
# one row per leader answer, and what the gate does to them (chapters 02, 05 and 06 read these)

_COLUMNS = ["problem_id", "stage", "answer", "answered", "p_min", "h_max", "correct", "level", "boxed"]


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame({
        "problem_id": df["problem_id"].astype(str).to_numpy(),
        "stage": df["stage"].to_numpy(dtype=int) if "stage" in df else 0,
        "answer": df["answer"].to_numpy(dtype=object),
        "p_min": pd.to_numeric(df["p_min"], errors="coerce").to_numpy(dtype=float),
        "h_max": pd.to_numeric(df["h_max"], errors="coerce").to_numpy(dtype=float),
        "correct": df["correct"].fillna(False).to_numpy(dtype=bool),
        "level": df["level"].to_numpy() if "level" in df else np.nan,
    })
    ans = out["answer"]
    out["answered"] = ans.notna() & (ans.astype(str) != "nan") & (ans.astype(str) != "None")
    # no extracted answer: no confidence (the gate treats it as uncertain), and it counts as wrong
    out.loc[~out["answered"], ["p_min", "h_max"]] = np.nan
    out.loc[~out["answered"], "answer"] = None
    out.loc[~out["answered"], "correct"] = False
    # boxed: the answer stood in the model's own last \boxed{} (not supplied by the extraction step)
    strict = df["answer_strict"].to_numpy(dtype=object) if "answer_strict" in df else None
    out["boxed"] = (out["answered"].to_numpy(bool) if strict is None else
                    pd.Series(strict).notna().to_numpy(bool) & out["answered"].to_numpy(bool))
    return out[_COLUMNS].reset_index(drop=True)


def _from_results(results: Sequence[Any]) -> pd.DataFrame:
    """Rows from :class:`~lase_nb.strategies.ProblemResult` objects (live runs)."""
    rows = []
    for r in results:
        if r.stages:
            rows += [{"problem_id": r.problem_id, "stage": s.stage, "answer": s.answer, "p_min": s.p_min,
                      "h_max": s.h_max, "correct": s.correct} for s in r.stages]
        else:  # single agent: the first call is the leader's answer
            c = r.calls[0]
            rows.append({"problem_id": r.problem_id, "stage": 0, "answer": c.answer, "p_min": c.p_min,
                         "h_max": c.h_max, "correct": r.correct})
    return pd.DataFrame(rows)


def confidence_frame(source: Any, stage: int | None = 0, problems: Sequence[Any] | None = None) -> pd.DataFrame:
    """One row per leader answer: problem_id, stage, answer, answered, p_min, h_max, correct, level,
    boxed (the answer stood in the model's own ``\\boxed{}``; False where the extraction step supplied it).

    ``source`` is a :class:`~lase_nb.traces.Run` (its stages table; for a run without stages,
    e.g. ``single``, the first leader/solver call of each problem), a stages-like DataFrame, or a
    list of live :class:`~lase_nb.strategies.ProblemResult`. ``stage`` keeps one LASE stage (0 =
    the leader alone); ``None`` keeps every stage. An answer that could not be extracted has
    ``answered=False``, NaN confidences and ``correct=False``. ``level`` comes from the run's
    problems table or from ``problems`` (their ``meta["level"]``) when given.
    """
    levels: dict[str, Any] = {}
    if isinstance(source, pd.DataFrame):
        df = source.copy()
    elif hasattr(source, "stages") and hasattr(source, "problems"):
        probs = source.problems
        if "level" in probs:
            levels = dict(zip(probs["problem_id"].astype(str), probs["level"]))
        if not source.stages.empty:
            df = source.stages.copy()
        else:
            calls = source.calls
            if calls.empty:
                raise DataError(f"run {source.path} has neither stages nor calls")
            lead = calls[calls["role"].isin(ANSWERER_ROLES) & (calls["stage"] == 0)]
            if lead.empty:  # e.g. majority vote: no single leader answer to calibrate
                raise DataError(f"run {source.path} ({source.manifest.get('strategy')}) has no leader "
                                f"answers; use a lase (--full-chain) or single run")
            lead = lead.drop_duplicates("problem_id")
            df = lead.drop(columns=["correct"], errors="ignore").merge(
                probs[["problem_id", "correct"]], on="problem_id", how="left")
    else:
        df = _from_results(source)
    if df.empty:
        raise DataError("no leader answers to calibrate")
    missing = [c for c in ("problem_id", "answer", "p_min", "h_max", "correct") if c not in df]
    if missing:
        raise DataError(f"the table lacks columns {missing}")
    if "stage" not in df:
        df["stage"] = 0
    if stage is not None:
        df = df[df["stage"] == stage]
    if problems is not None:
        levels.update({str(p.id): p.meta.get("level") for p in problems})
    if levels and "level" not in df:
        df["level"] = df["problem_id"].astype(str).map(levels)
    return _frame(df)


def gate_split(frame: pd.DataFrame, tau_lp: float, tau_h: float) -> pd.Series:
    """What the gate U does to these answers: escalation rate, accuracy on each side, confident errors.

    A *confident error* is a wrong answer with U = 0: LASE accepts it and never reconsiders.
    """
    u = uncertain_mask(frame["p_min"].to_numpy(float), frame["h_max"].to_numpy(float), tau_lp, tau_h)
    ok = frame["correct"].to_numpy(bool)
    n = len(frame)
    conf_err = int((~u & ~ok).sum())
    return pd.Series({
        "answers": n, "escalation_rate": u.mean() if n else np.nan,
        "accuracy": ok.mean() if n else np.nan,
        "accuracy_if_U0": ok[~u].mean() if (~u).any() else np.nan,
        "accuracy_if_U1": ok[u].mean() if u.any() else np.nan,
        "errors": int((~ok).sum()), "confident_errors": conf_err,
        "confident_share_of_errors": conf_err / (~ok).sum() if (~ok).any() else np.nan,
        "unanswered": int((~frame["answered"].to_numpy(bool)).sum()),
    })
