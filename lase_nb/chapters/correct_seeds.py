"""Chapter 03 (notebooks/03_lase_pipeline): Theorem 3.7 checked with its own terms on a recording.

The theorem (LASE paper, Thm 3.7 / Eq. 19): if an escalated problem holds a correct seed with
probability at least rho (A1, Assumption 3.4), reading a seed raises the leader's chance of a right
answer by at least delta (A2, 3.5), and escalation without a seed does not lower it (A3, 3.6), then
Acc(LASE) >= Acc(solo) + P(U=1) * rho * delta. Counting fixed and broken answers cannot test it
(LASE's accuracy minus solo's is (fixed - broken) / n in any recording); classifying the notes can.

A supporter's note *holds a correct seed* (:data:`SEED_RULE`) when it states a value of the gold
chain that the attempt it reviewed lacks and the question does not contain: the right result of a
step the attempt got wrong or skipped, up to the answer itself. A right attempt lacks no value, so
its notes hold none, and A3 is what protects it. The rule reads numbers only: a note that names the
right value and then argues against it still counts, so rho is an upper estimate of useful seeds.
"""

from __future__ import annotations

import re
import warnings
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..replay import Chains, stop_stages
from ..errors import DataError
from ..prompts import SUPPORTERS
from ..notes import mentions

__all__ = ["SEED_RULE", "gold_values", "seed_values", "note_seeds", "seed_table", "pick_fix", "bound_check",
           "a3_verdict", "describe_assumptions"]

#: The operational definition of a correct seed used by :func:`note_seeds`.
SEED_RULE = ("a note holds a correct seed when it states a value of the gold chain (a step's right "
             "result, the answer included) that the attempt it reviewed lacks and the question does not contain")

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")


def gold_values(problem: Any) -> list[str]:
    """The gold chain's results in order (the last is the answer); for a problem without a recorded
    chain (not ``arith``), its gold answer alone."""
    meta = getattr(problem, "meta", None) or {}
    if "start" in meta and "ops" in meta:
        from ..organism import gold_steps
        return [str(s.c) for s in gold_steps(problem)]
    return [str(problem.gold)]


def seed_values(note: str | None, attempt: str | None, problem: Any) -> list[str]:
    """The gold-chain values that ``note`` states while ``attempt`` and the question lack them."""
    if not note or (isinstance(note, float) and np.isnan(note)):
        return []
    question = getattr(problem, "question", "")
    out = []
    for v in dict.fromkeys(gold_values(problem)):
        if mentions(note, v) and not mentions(attempt, v) and not mentions(question, v):
            out.append(v)
    return out


def note_seeds(note: str | None, attempt: str | None, problem: Any) -> bool:
    """Whether ``note`` holds a correct seed for ``attempt`` (:data:`SEED_RULE`)."""
    return bool(seed_values(note, attempt, problem))


def seed_table(chains: Chains, calls: pd.DataFrame, problems: Mapping[str, Any],
               tau_lp: float, tau_h: float) -> pd.DataFrame:
    """One row per problem of a full-chain LASE run, gated at (tau_lp, tau_h).

    Columns: problem_id, escalated, stop_stage, solo_right (the leader's first answer), lase_right
    (the answer where LASE stops), seed (some note LASE read before stopping holds a correct seed),
    seed_stage, seed_role, seed_value (the first such note), note (its text), attempt (what it reviewed).
    ``problems`` maps problem ids to problems (``runs.problems_from_manifest``): the gold chain
    and the question come from there.
    """
    if not problems:
        raise DataError("seed_table needs the run's problems (question and gold chain); rebuild them "
                        "with runs.problems_from_manifest(run.manifest)")
    missing = [p for p in chains.problem_ids if str(p) not in problems]
    if missing:
        raise DataError(f"{len(missing)} problems of the chains are not in `problems` (first: {missing[0]}); "
                        "pass the problems of the same run")
    text = calls.drop_duplicates(["problem_id", "stage", "role"]).set_index(["problem_id", "stage", "role"])["text"]
    lead = text.xs("leader", level="role") if "leader" in text.index.get_level_values("role") else pd.Series(dtype=object)
    notes = calls[calls["role"].isin(SUPPORTERS)] \
        .drop_duplicates(["problem_id", "stage"]).set_index(["problem_id", "stage"])
    stop = stop_stages(chains, tau_lp, tau_h)
    rows = []
    for i, pid in enumerate(chains.problem_ids):
        problem = problems[str(pid)]
        row: dict[str, Any] = {"problem_id": pid, "escalated": bool(stop[i] > 0), "stop_stage": int(stop[i]),
                               "solo_right": bool(chains.correct[i, 0]),
                               "lase_right": bool(chains.correct[i, stop[i]]), "seed": False,
                               "seed_stage": None, "seed_role": None, "seed_value": None,
                               "note": None, "attempt": None}
        for t in range(1, int(stop[i]) + 1):
            if (pid, t) not in notes.index:
                continue
            note, attempt = notes.loc[(pid, t), "text"], lead.get((pid, t - 1))
            found = seed_values(note, attempt, problem)
            if found:
                row.update(seed=True, seed_stage=t, seed_role=notes.loc[(pid, t), "role"],
                           seed_value=found[0], note=note, attempt=attempt)
                break
        rows.append(row)
    return pd.DataFrame(rows)


def pick_fix(table: pd.DataFrame) -> str | None:
    """The walk-through of a fix, chosen by rule from :func:`seed_table`: the first problem (in the
    recording's order) the leader got wrong alone, where a note it read holds a correct seed and
    LASE ends right, i.e. a problem counted in both rho and delta; None when there is none."""
    hit = table[~table["solo_right"] & table["seed"] & table["lase_right"]]
    return str(hit["problem_id"].iloc[0]) if len(hit) else None


def _terms(solo: np.ndarray, lase: np.ndarray, esc: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """The bound's terms for one sample of problems (rows of equal-length boolean arrays).

    Works on a (resamples, n) stack at once: each output column is one term.
    """
    n = solo.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        k = esc.sum(-1)
        seeded, unseeded = esc & seed, esc & ~seed
        p_u1 = k / n
        rho = seeded.sum(-1) / k
        delta = (lase & seeded).sum(-1) / seeded.sum(-1) - (solo & seeded).sum(-1) / seeded.sum(-1)
        a3_gap = ((lase & unseeded).sum(-1) - (solo & unseeded).sum(-1)) / unseeded.sum(-1)
        acc_solo, acc_lase = solo.mean(-1), lase.mean(-1)
        bound = acc_solo + p_u1 * np.nan_to_num(rho) * np.nan_to_num(delta)
    return np.stack([p_u1, rho, delta, a3_gap, acc_solo, acc_lase, bound, acc_lase - acc_solo, acc_lase - bound], -1)


_TERMS = ["p_u1", "rho", "delta", "a3_gap", "acc_solo", "acc_lase", "bound", "gain", "slack"]


def bound_check(table: pd.DataFrame, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Theorem 3.7's terms from a :func:`seed_table`, with percentile bootstrap intervals (problems
    resampled jointly, so the terms' intervals are paired).

    Rows: ``p_u1`` (share escalated), ``rho`` (escalated problems with a seed), ``delta`` (among
    those, right after minus right before), ``a3_gap`` (the same among escalated problems without a
    seed: A3 asks it to be >= 0), ``acc_solo``, ``acc_lase``, ``bound`` (acc_solo + p_u1 rho delta),
    ``gain`` (acc_lase - acc_solo) and ``slack`` (acc_lase - bound: the theorem predicts >= 0 when
    A3 holds). Columns: estimate, lo, hi, and ``count`` (the problems each share is taken over).
    A term with nothing to average (no escalation, no seed) is NaN.
    """
    if table.empty:
        raise DataError("no problems in the seed table")
    solo, lase = table["solo_right"].to_numpy(bool), table["lase_right"].to_numpy(bool)
    esc, sd = table["escalated"].to_numpy(bool), table["seed"].to_numpy(bool)
    est = _terms(solo, lase, esc, sd)
    idx = np.random.default_rng(seed).integers(0, len(table), size=(n_boot, len(table)))
    boot = _terms(solo[idx], lase[idx], esc[idx], sd[idx])
    a = (1 - level) / 2
    with warnings.catch_warnings():  # a term with no problems in some resamples: "All-NaN slice"
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(boot, a, axis=0), np.nanquantile(boot, 1 - a, axis=0)
    over = {"rho": int(esc.sum()), "delta": int((esc & sd).sum()), "a3_gap": int((esc & ~sd).sum())}
    count = [over.get(t, len(table)) for t in _TERMS]  # the other terms are taken over every problem
    out = pd.DataFrame({"estimate": est, "lo": lo, "hi": hi, "count": count}, index=_TERMS)
    out.loc[np.isnan(out["estimate"]), ["lo", "hi"]] = np.nan
    return out


def _term(check: pd.DataFrame, name: str, pct: bool = True) -> str:
    e, lo, hi = check.loc[name, ["estimate", "lo", "hi"]]
    if np.isnan(e):
        return "undefined"
    f = (lambda x: f"{100 * x:+.0f} points") if not pct else (lambda x: f"{100 * x:.0f}%")
    return f"{f(e)} [{f(lo)}, {f(hi)}]"


def a3_verdict(check: pd.DataFrame) -> str:
    """``"holds"`` (no loss without a seed), ``"fails"`` (the interval lies below zero),
    ``"not rejected"`` (a loss whose interval reaches zero) or ``"untested"`` (nothing escalated without a seed)."""
    e, hi = check.loc["a3_gap", ["estimate", "hi"]]
    if np.isnan(e):
        return "untested"
    return "holds" if e >= 0 else "fails" if hi < 0 else "not rejected"


def describe_assumptions(check: pd.DataFrame) -> str:
    """Theorem 3.7's assumptions and bound as measured by :func:`bound_check`, in one paragraph."""
    c = check["count"]
    if c["rho"] == 0:
        return (f"Nothing escalates at these thresholds (P(U=1) = 0 of {c['p_u1']} problems), so LASE is "
                "the leader alone and the bound holds with equality.")
    parts = [f"P(U=1) = {_term(check, 'p_u1')} of {c['p_u1']} problems escalate.",
             f"A1: in {_term(check, 'rho')} of the {c['rho']} escalated problems a note the leader read "
             "holds a correct seed (rho)."]
    if c["delta"]:
        parts.append(f"A2: on those {c['delta']}, reading it changed the share of right answers by "
                     f"{_term(check, 'delta', pct=False)} (delta).")
    else:
        parts.append("A2 cannot be measured: no escalated problem had a seed.")
    if c["a3_gap"]:
        a3 = a3_verdict(check)
        parts.append(f"A3: on the {c['a3_gap']} escalated without a seed, LASE changed the share of right "
                     f"answers by {_term(check, 'a3_gap', pct=False)}, so A3 "
                     f"{'is not rejected' if a3 == 'not rejected' else a3}.")
    else:
        parts.append("A3 is untested: every escalated problem had a seed.")
    slack = check.loc["slack", "estimate"]
    parts.append(f"The bound Acc(solo) + P(U=1) rho delta = {_term(check, 'bound')} against the observed "
                 f"{_term(check, 'acc_lase')}: {'it holds' if slack >= 0 else 'it fails'} "
                 f"(slack {_term(check, 'slack', pct=False)}).")
    return " ".join(parts)
