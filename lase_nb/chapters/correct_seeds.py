"""Chapter 03 (notebooks/03_lase_pipeline): Theorem 3.7 checked with its own terms on a recording.

The theorem (LASE paper, Thm 3.7 / Eq. 19): if an escalated problem holds a correct seed with
probability at least rho (A1, Assumption 3.4), reading a seed raises the leader's chance of a right
answer by at least delta (A2, 3.5), and escalation without a seed does not lower it (A3, 3.6), then
Acc(LASE) >= Acc(solo) + P(U=1) * rho * delta. Counting fixed and broken answers cannot test it
(LASE's accuracy minus solo's is (fixed - broken) / n in any recording); classifying the notes can.

A supporter's note *holds a correct seed* (:data:`SEED_RULE`) when it carries information that
only the right solution has and the attempt it reviewed lacks: a value of the gold chain that the
attempt and the question do not contain (the right result of a step the attempt got wrong or
skipped, up to the answer itself), or, for a note that points rather than tells (the paper's rule),
the first step where the attempt departs from the gold chain, named as the failing step. A right
attempt has no such step and lacks no value, so its notes hold none, and A3 is what protects it.
The rule reads numbers and step names only: a note that names the right value or step and then
argues against it still counts, so rho is an upper estimate of useful seeds.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..replay import Chains, stop_stages
from ..errors import DataError
from ..prompts import SUPPORTERS
from ..notes import mentions, states_answer

__all__ = ["SEED_RULE", "gold_values", "seed_values", "note_seeds", "seed_table", "pick_fix", "bound_check",
           "decomposition", "predicted_gain", "a3_verdict", "describe_assumptions"]

#: The operational definition of a correct seed used by :func:`note_seeds`.
SEED_RULE = ("a note holds a correct seed when it states a value of the gold chain (a step's right "
             "result, the answer included) that the attempt it reviewed lacks and the question does not contain, "
             "or names as failing the first step where the attempt departs from the gold chain")


def gold_values(problem: Any) -> list[str]:
    """The gold chain's results in order (the last is the answer); for a problem without a recorded
    chain (not ``arith``), its gold answer alone."""
    meta = getattr(problem, "meta", None) or {}
    if "start" in meta and "ops" in meta:
        from ..organism.recipe import gold_steps
        return [str(s.c) for s in gold_steps(problem)]
    return [str(problem.gold)]


def seed_values(note: str | None, attempt: str | None, problem: Any) -> list[str]:
    """The seeds ``note`` holds for ``attempt`` (:data:`SEED_RULE`): the gold-chain values it states
    while ``attempt`` and the question lack them, then ``"step k"`` when it names the attempt's first
    departure from the gold chain as the failing step."""
    if not note or (isinstance(note, float) and np.isnan(note)):
        return []
    question = getattr(problem, "question", "")
    out = []
    for v in dict.fromkeys(gold_values(problem)):
        if mentions(note, v) and not mentions(attempt, v) and not mentions(question, v):
            out.append(v)
    from ..organism.recipe import departure_step, flagged_step
    step = departure_step(problem, attempt)
    if step is not None:
        if flagged_step(note) == step:
            out.append(f"step {step + 1}")
    return out


def note_seeds(note: str | None, attempt: str | None, problem: Any) -> bool:
    """Whether ``note`` holds a correct seed for ``attempt`` (:data:`SEED_RULE`)."""
    return bool(seed_values(note, attempt, problem))


def seed_table(chains: Chains, calls: pd.DataFrame, problems: Mapping[str, Any],
               tau_lp: float, tau_h: float) -> pd.DataFrame:
    """One row per problem of a full-chain LASE run, gated at (tau_lp, tau_h).

    Columns: problem_id, escalated, stop_stage, solo_right (the leader's first answer), lase_right
    (the answer where LASE stops), seed (some note LASE read before stopping holds a correct seed),
    seed_stage, seed_role, seed_value (the first such note), note (its text), attempt (what it reviewed),
    told (some note LASE read before stopping states the final answer, :func:`lase_nb.notes.states_answer`).
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
                               "note": None, "attempt": None, "told": False}
        for t in range(1, int(stop[i]) + 1):
            if (pid, t) not in notes.index:
                continue
            note, attempt = notes.loc[(pid, t), "text"], lead.get((pid, t - 1))
            row["told"] = row["told"] or states_answer(note, problem.gold, problem.question, attempt or "")
            found = seed_values(note, attempt, problem)
            if found and not row["seed"]:
                row.update(seed=True, seed_stage=t, seed_role=notes.loc[(pid, t), "role"],
                           seed_value=found[0], note=note, attempt=attempt)
        rows.append(row)
    return pd.DataFrame(rows)


def pick_fix(table: pd.DataFrame) -> str | None:
    """The walk-through of a fix, chosen by rule from :func:`seed_table`: the first problem (in the
    recording's order) the leader got wrong alone, where a note it read holds a correct seed and
    LASE ends right, i.e. a problem counted in both rho and delta; a fix by the paper's rule (no
    note read states the answer) comes before a told one. None when there is none."""
    hit = table[~table["solo_right"] & table["seed"] & table["lase_right"]]
    if "told" in hit:
        hit = hit.sort_values("told", kind="stable")
    return str(hit["problem_id"].iloc[0]) if len(hit) else None


def _terms(solo: np.ndarray, lase: np.ndarray, esc: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """The bound's terms for one sample of problems (rows of equal-length boolean arrays).

    Works on a (resamples, n) stack at once: each output column is one term (:data:`_TERMS`).
    """
    n = solo.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        k = esc.sum(-1)
        seeded, unseeded = esc & seed, esc & ~seed
        p_u1 = k / n
        rho = seeded.sum(-1) / k
        lase_s = (lase & seeded).sum(-1) / seeded.sum(-1)  # P(LASE right | seed, U=1)
        lase_ns = (lase & unseeded).sum(-1) / unseeded.sum(-1)  # P(LASE right | no seed, U=1)
        solo_u = (solo & esc).sum(-1) / k  # P(solo right | U=1): the appendix's baseline
        acc_solo, acc_lase = solo.mean(-1), lase.mean(-1)
        # within each group: the leader's own accuracy on the same problems (a third definition)
        delta = lase_s - (solo & seeded).sum(-1) / seeded.sum(-1)
        a3_gap = lase_ns - (solo & unseeded).sum(-1) / unseeded.sum(-1)
        # the paper's Appendix A.2 / A.3: against the leader's accuracy over all escalated problems
        delta_paper, a3_paper = lase_s - solo_u, lase_ns - solo_u
        delta_main = lase_s - acc_solo  # main text, Assumption 3.5: against P(solo right) overall
        bound = acc_solo + p_u1 * np.nan_to_num(rho) * np.nan_to_num(delta)
        bound_paper = acc_solo + p_u1 * np.nan_to_num(rho) * np.nan_to_num(delta_paper)
    return np.stack([p_u1, rho, delta, a3_gap, delta_paper, a3_paper, delta_main, acc_solo, acc_lase, bound,
                     bound_paper, acc_lase - acc_solo, acc_lase - bound, acc_lase - bound_paper], -1)


#: The terms :func:`bound_check` reports: ``delta``/``a3_gap`` within the seeded and unseeded
#: groups; ``delta_paper``/``a3_paper`` on the paper's Appendix A.2/A.3 definitions (against
#: P(solo right | U=1)); ``delta_main`` on main-text Assumption 3.5's (against P(solo right)).
_TERMS = ["p_u1", "rho", "delta", "a3_gap", "delta_paper", "a3_paper", "delta_main", "acc_solo", "acc_lase",
          "bound", "bound_paper", "gain", "slack", "slack_paper"]


def bound_check(table: pd.DataFrame, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Theorem 3.7's terms from a :func:`seed_table`, with percentile bootstrap intervals (problems
    resampled jointly, so the terms' intervals are paired).

    Rows (:data:`_TERMS`): ``p_u1`` (share escalated), ``rho`` (escalated problems with a seed, A.1),
    ``delta`` and ``a3_gap`` (right after minus right before, within the seeded and the unseeded
    escalated problems), ``delta_paper`` and ``a3_paper`` (the paper's A.2 and A.3: LASE's accuracy
    with and without a seed minus the leader's over all escalated problems), ``delta_main``
    (Assumption 3.5 of the main text: minus the leader's accuracy over all problems), ``acc_solo``,
    ``acc_lase``, ``bound`` and ``bound_paper`` (acc_solo + p_u1 rho delta, with each delta),
    ``gain`` (acc_lase - acc_solo) and ``slack``/``slack_paper`` (acc_lase minus each bound).
    Both decompositions are identities (:func:`decomposition`): on the same data the slack only
    restates the A3 term. Columns: estimate, lo, hi, and ``count`` (the problems each share is
    taken over). A term with nothing to average (no escalation, no seed) is NaN.
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
        lcb = np.nanquantile(boot, 1 - level, axis=0)  # one-sided lower bound at the same level
    k, ks = int(esc.sum()), int((esc & sd).sum())
    over = {"rho": k, "delta": ks, "a3_gap": k - ks, "delta_paper": ks, "a3_paper": k - ks, "delta_main": ks}
    count = [over.get(t, len(table)) for t in _TERMS]  # the other terms are taken over every problem
    out = pd.DataFrame({"estimate": est, "lo": lo, "hi": hi, "lcb": lcb, "count": count}, index=_TERMS)
    out.loc[np.isnan(out["estimate"]), ["lo", "hi", "lcb"]] = np.nan
    return out


def decomposition(check: pd.DataFrame, paper: bool = True) -> dict[str, float]:
    """The law of total probability on the escalated problems: gain = P(U=1) [rho delta + (1 - rho)
    a3], exactly, for any sample (with the paper's A.2/A.3 definitions, or within the groups). Returns
    the two sides and the two parts; the theorem's content is only that a3 >= 0 lets the second go."""
    e = check["estimate"]
    d, a3 = (e["delta_paper"], e["a3_paper"]) if paper else (e["delta"], e["a3_gap"])
    seeded = e["p_u1"] * e["rho"] * d if e["rho"] > 0 else 0.0
    unseeded = e["p_u1"] * (1 - e["rho"]) * a3 if e["rho"] < 1 else 0.0
    return {"gain": float(e["gain"]), "seeded_part": float(seeded), "unseeded_part": float(unseeded),
            "sum": float(seeded + unseeded)}


def predicted_gain(check: pd.DataFrame) -> dict[str, float]:
    """What Theorem 3.7 predicts for other problems from these (calibration) chains: the gain is at
    least P(U=1) rho delta with each term at its one-sided lower confidence bound (delta on the
    paper's A.2 definition), provided A3 holds. A lower bound of delta at or below zero predicts no
    gain (the bound is then 0)."""
    lb = check["lcb"]
    terms = {"p_u1": float(lb["p_u1"]), "rho": float(lb["rho"]), "delta": float(lb["delta_paper"])}
    ok = all(np.isfinite(v) and v > 0 for v in terms.values())
    return {**{f"{k}_lcb": v for k, v in terms.items()},
            "gain_lower_bound": float(terms["p_u1"] * terms["rho"] * terms["delta"]) if ok else 0.0}


def _term(check: pd.DataFrame, name: str, pct: bool = True) -> str:
    e, lo, hi = check.loc[name, ["estimate", "lo", "hi"]]
    if np.isnan(e):
        return "undefined"
    f = (lambda x: f"{100 * x:+.0f} points") if not pct else (lambda x: f"{100 * x:.0f}%")
    return f"{f(e)} [{f(lo)}, {f(hi)}]"


def a3_verdict(check: pd.DataFrame, term: str = "a3_paper") -> str:
    """A3 (no loss without a seed) from its interval: ``"holds"`` (the interval lies at or above
    zero), ``"violated"`` (below zero), ``"undetermined"`` (it straddles zero) or ``"untested"``
    (nothing escalated without a seed). ``term``: ``a3_paper`` (Appendix A.3) or ``a3_gap``."""
    e, lo, hi = check.loc[term, ["estimate", "lo", "hi"]]
    if np.isnan(e):
        return "untested"
    return "holds" if lo >= 0 else "violated" if hi < 0 else "undetermined"


def describe_assumptions(check: pd.DataFrame) -> str:
    """Theorem 3.7's assumptions as measured by :func:`bound_check`, in one paragraph: each term on
    the paper's definitions (Appendix A.1-A.3) with the within-group version beside it, A3's
    verdict from its interval, and the decomposition said to be an identity."""
    c = check["count"]
    if c["rho"] == 0:
        return (f"Nothing escalates at these thresholds (P(U=1) = 0 of {c['p_u1']} problems), so LASE is "
                "the leader alone and there is nothing to decompose.")
    parts = [f"P(U=1) = {_term(check, 'p_u1')} of {c['p_u1']} problems escalate.",
             f"A1: in {_term(check, 'rho')} of the {c['rho']} escalated problems a note the leader read "
             "holds a correct seed (rho)."]
    if c["delta"]:
        parts.append(f"A2: on those {c['delta']}, LASE's share of right answers minus the leader's over all escalated "
                     f"problems (the paper's Appendix A.2) is {_term(check, 'delta_paper', pct=False)}; against the "
                     f"leader's own accuracy on the same {c['delta']} problems it is "
                     f"{_term(check, 'delta', pct=False)} (delta within the group, a third definition), and "
                     f"against the leader's accuracy over all problems (main text, Assumption 3.5) "
                     f"{_term(check, 'delta_main', pct=False)}.")
    else:
        parts.append("A2 cannot be measured: no escalated problem had a seed.")
    if c["a3_gap"]:
        verdict = {"holds": "A3 **holds**", "violated": "A3 is **violated**",
                   "undetermined": "A3 is **undetermined**"}[a3_verdict(check)]
        parts.append(f"A3: on the {c['a3_gap']} escalated without a seed, LASE's share of right answers minus the "
                     f"leader's over all escalated problems (Appendix A.3) is {_term(check, 'a3_paper', pct=False)}, "
                     f"so {verdict} (read from its interval); within the group the change is "
                     f"{_term(check, 'a3_gap', pct=False)}.")
    else:
        parts.append("A3 is untested: every escalated problem had a seed.")
    d = decomposition(check)
    parts.append(f"The gain over the leader alone, {_term(check, 'gain', pct=False)}, splits exactly into "
                 f"{100 * d['seeded_part']:+.1f} points with a seed and {100 * d['unseeded_part']:+.1f} without: "
                 "the law of total probability, true of any sample, so the bound Acc(solo) + P(U=1) rho delta "
                 "checked on the same problems only restates A3. The test is a bound predicted on other problems.")
    return " ".join(parts)
